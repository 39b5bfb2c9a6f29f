"""What a design can decide: the power side of the verdict rule (:mod:`faircl.eval.verdicts`).

A verdict reads up to three axes off two intervals (the gap's change against 0 and against the size threshold, the
utility's change against the margin). An axis is decided when the claim's interval lies on one side of its split
point. :func:`seeds_to_decide` plans, for every axis a claim's word still waits for, the seeds that would decide it
with a given power, and names the axis that needs the most; when the row noise every seed shares is the limit, it
gives the rows on which seeds would. Each axis is planned at a fixed distance from its split point, the distance the
rule is built to resolve: the direction at the target (the paper's effect is real), the size at the threshold's own
distance from the target (the target is reached, or there is no change), the utility at the margin (no utility
change). All values are fractions (0.045 = 4.5 points).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

from scipy import stats

from faircl.eval.statistics import Effect

__all__ = ["Axis", "SeedPlan", "rows_to_decide", "seeds_to_decide"]


class Axis(NamedTuple):
    """One axis a claim waits for: its name, the interval it is read from, and the distance from the split point at
    which it is planned (a positive fraction)."""

    name: str
    effect: Effect
    distance: float


class SeedPlan(NamedTuple):
    """What would decide an open claim: ``seeds`` seeds in all (``None``: no number up to the search's limit) on
    ``rows`` test rows (``None``: the claim's own rows; set when their shared noise alone prevents a decision), the
    axis that needs them, and why in words."""

    seeds: int | None
    reason: str
    rows: int | None = None
    axis: str = ""


def _se(e: Effect, n: float, rows: float) -> float:
    """The standard error of ``e`` with ``n`` seeds (``inf``: infinitely many) on ``rows`` × its rows: the per-seed
    part ``s²_d / n`` and the shared part ``c̄ / rows``."""
    per_seed = max(e.se ** 2 - e.shared, 0.0) * e.n_seeds
    return math.sqrt((per_seed / n if math.isfinite(n) else 0.0) + e.shared / rows)


def _decides(n: float, axis: Axis, level: float, power: float, rows: float = 1.0) -> bool:
    """Whether ``n`` seeds on ``rows`` × the rows put the ``1 − level`` interval on one side of the axis's split point
    with ``power`` when the truth is ``axis.distance`` from it."""
    se = _se(axis.effect, n, rows)
    if se == 0:
        return True
    df = n - 1 if math.isfinite(n) else 1e9
    return axis.distance / se >= stats.t.ppf(1 - level / 2, df) + stats.t.ppf(power, df)


def _plannable(e: Effect) -> bool:
    return e.df >= 1 and math.isfinite(e.se)


def _smallest(axis: Axis, level: float, power: float, rows: float, max_seeds: int) -> int | None:
    if not _decides(math.inf, axis, level, power, rows):
        return None
    hi = 2
    while not _decides(hi, axis, level, power, rows):
        if hi >= max_seeds:
            return None
        hi = min(2 * hi, max_seeds)
    lo = max(2, hi // 2)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if not _decides(mid, axis, level, power, rows) else (lo, mid)
    return hi


def seeds_to_decide(axes: Sequence[Axis], level: float, power: float = 0.8, max_seeds: int = 100_000) -> SeedPlan:
    """How many seeds would decide every axis in ``axes`` with ``power`` at the interval level ``1 − level``.

    Planned from each axis's own variances (:attr:`Effect.shared`): with ``n`` seeds an effect's variance is
    ``s²_d / n + c̄`` (``s²_d``: the per-seed spread, ``c̄``: the row noise every seed shares, which more seeds do not
    shrink) on ``n − 1`` df. The axis needing the most seeds limits the plan. When ``c̄`` alone prevents a decision,
    no number of seeds does on these rows; the rows needed are then those on which the shared variance (scaled as
    1 / rows) takes at most half of what infinitely many seeds could afford, with the seeds needed on them.

    Returns:
        A :class:`SeedPlan` (``seeds`` in all, not new ones) naming the limiting axis.
    """
    if not axes:
        return SeedPlan(None, "no open axis to plan seeds for")
    if not all(_plannable(a.effect) for a in axes):
        return SeedPlan(None, "one seed: no seed-to-seed variance to plan seeds from")
    now = max(a.effect.n_seeds for a in axes)
    n_rows = max(a.effect.n_rows for a in axes)
    plans = [(a, _smallest(a, level, power, 1.0, max_seeds)) for a in axes]
    if all(n is not None for _, n in plans):
        axis, n = max(plans, key=lambda p: p[1])
        new = max(n - now, 0)
        return SeedPlan(n, f"{new} new seed{'s' * (new != 1)} ({n} in all) would decide the {axis.name} with "
                           f"{100 * power:.0f}% power", None, axis.name)
    axis = next(a for a, n in plans if n is None)  # the axis the rows' shared noise limits
    k = 1.0
    while k < 1e6 and not all(_decides(math.inf, a, level, power, k / 2) for a in axes):
        k *= 1.25
    ns = [_smallest(a, level, power, k, max_seeds) for a in axes] if k < 1e6 else [None]
    on = f"these {n_rows:,} rows" if n_rows else "these rows"
    if any(n is None for n in ns) or not n_rows:
        return SeedPlan(None, f"none on {on} for the {axis.name}", None, axis.name)
    rows, n = math.ceil(k * n_rows), max(ns)
    return SeedPlan(n, f"none on {on} for the {axis.name} (their shared noise alone is too large); on ≈ {rows:,} "
                       f"rows, {n} new seeds", rows, axis.name)


def rows_to_decide(axes: Sequence[Axis], seeds: int, level: float, power: float = 0.8,
                   max_factor: float = 1e4) -> float | None:
    """By what factor the test rows must grow for ``seeds`` seeds to decide every axis with ``power`` (as
    :func:`seeds_to_decide`), for a protocol whose data can be enlarged (a synthetic set); ``None`` when no factor up
    to ``max_factor`` does (the seeds' own spread is the limit).

    Only the row noise every seed shares (:attr:`Effect.shared`) is scaled (as 1 / rows): the per-seed spread also
    holds each seed's own row noise, which more rows would shrink too, so the factor is an upper bound."""
    if not axes or seeds < 2 or not all(_plannable(a.effect) for a in axes):
        return None

    def ok(rows: float) -> bool:
        return all(_decides(seeds, a, level, power, rows) for a in axes)

    if not ok(max_factor):
        return None
    lo, hi = 1.0, 2.0
    while not ok(hi):
        lo, hi = hi, 2 * hi
    while hi / lo > 1.01:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if not ok(mid) else (lo, mid)
    return hi
