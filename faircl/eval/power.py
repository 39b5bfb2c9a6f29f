"""What a design can decide: the power side of the verdict rule (:mod:`faircl.eval.verdicts`).

:func:`holds_detectable_effect` is the smallest reduction that reads "holds" with a given power (utility margin
included); :func:`seeds_to_decide` the number of seeds (or, when the row noise every seed shares is the limit, the
rows) that would decide an open claim either way. Both plan from a claim's own :class:`~faircl.eval.statistics.Effect`
(its per-seed spread and shared row variance). All values are fractions (0.045 = 4.5 points).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from scipy import stats

from faircl.eval.statistics import Effect

__all__ = ["SeedPlan", "holds_detectable_effect", "rows_to_decide", "seeds_to_decide"]


class SeedPlan(NamedTuple):
    """What would decide an open claim: ``seeds`` seeds (``None``: no number up to the search's limit) on ``rows``
    test rows (``None``: the claim's own rows; set when their shared noise alone prevents a decision), and why."""

    seeds: int | None
    reason: str
    rows: int | None = None


def _decides(n: float, effect: Effect, utility: Effect, target: float, alpha: float, margin: float, power: float,
             rows: float = 1.0) -> bool:
    """Whether ``n`` seeds (``inf``: infinitely many) on ``rows`` × the rows decide the claim with ``power``: with no
    true change the inferiority test reads "does not hold" (its interval at ``alpha`` above ``target``), and with the
    change ``target`` and no utility change "holds" (two-sided at ``alpha``, and the lower bound of the utility's 95%
    interval ≥ −``margin``)."""
    def se_df(e: Effect) -> tuple[float, float]:
        per_seed = max(e.se ** 2 - e.shared, 0.0) * e.n_seeds
        return math.sqrt((per_seed / n if math.isfinite(n) else 0.0) + e.shared / rows), \
            (n - 1 if math.isfinite(n) else 1e9)
    se, df = se_df(effect)
    if se == 0:
        return True
    size = abs(target) / se
    if size < stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df):
        return False
    se_u, df_u = se_df(utility)
    p_util = 1.0 if se_u == 0 else float(stats.t.cdf(margin / se_u - stats.t.ppf(0.975, df_u), df_u))
    return p_util > power and size >= stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power / p_util, df)


def seeds_to_decide(effect: Effect, utility: Effect, target: float | None, alpha: float = 0.05, margin: float = 0.02,
                    power: float = 0.8, max_seeds: int = 100_000) -> SeedPlan:
    """How many seeds would decide a claim with ``power``: "holds" if the change ``target`` is real (and costs no
    utility), "does not hold" if there is no change.

    Planned from the claim's own variances (:attr:`Effect.shared`): with ``n`` seeds the effect's variance is
    ``s²_d / n + c̄`` (``s²_d``: the per-seed spread, ``c̄``: the row noise every seed shares, which more seeds do not
    shrink) on ``n − 1`` df, the utility's likewise. When ``c̄`` alone prevents a decision no number of seeds does;
    the rows needed are then those on which the shared variance (scaled as 1 / rows) takes at most half of what
    infinitely many seeds could afford, with the seeds needed on them.

    Args:
        effect, utility: the claim's effects.
        target: the reduction to plan for (negative; ``ClaimEvidence.target``).
        alpha: the level (the Bonferroni level ``alpha / m`` in a family).
        margin: the utility margin.
        power: the power wanted.
        max_seeds: the largest number of seeds searched.

    Returns:
        A :class:`SeedPlan`: ``seeds`` is ``None`` when no number of seeds (up to ``max_seeds``) decides the claim,
        on its rows or on more; ``rows`` is set when the seeds are those needed on that many rows.
    """
    if target is None:
        return SeedPlan(None, "no paper effect or smallest effect of interest to plan seeds for")
    if effect.df < 1 or not math.isfinite(effect.se) or utility.df < 1 or not math.isfinite(utility.se):
        return SeedPlan(None, "one seed: no seed-to-seed variance to plan seeds from")
    args = (effect, utility, target, alpha, margin, power)

    def smallest(rows: float = 1.0) -> int | None:
        if not _decides(math.inf, *args, rows=rows):
            return None
        hi = 2
        while not _decides(hi, *args, rows=rows):
            if hi >= max_seeds:
                return None
            hi = min(2 * hi, max_seeds)
        lo = max(2, hi // 2)
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (mid + 1, hi) if not _decides(mid, *args, rows=rows) else (lo, mid)
        return hi

    what = f"{100 * abs(target):.1f} points: holds if real, does not hold if there is no change"
    n = smallest()
    if n is not None:
        return SeedPlan(n, f"{n} seeds would decide it with {100 * power:.0f}% power ({what})")
    k = 1.0
    while k < 1e6 and not _decides(math.inf, *args, rows=k / 2):
        k *= 1.25
    n_rows = max(effect.n_rows, utility.n_rows)
    if k >= 1e6 or (n := smallest(k)) is None or not n_rows:
        return SeedPlan(None, "no number of seeds decides this on these rows")
    rows = math.ceil(k * n_rows)
    return SeedPlan(n, f"no number of seeds decides this on these {n_rows:,} rows (their shared noise alone is too "
                       f"large); about {rows:,} rows and {n} seeds would ({what})", rows)


def rows_to_decide(effect: Effect, utility: Effect, target: float | None, seeds: int, alpha: float = 0.05,
                   margin: float = 0.02, power: float = 0.8, max_factor: float = 1e4) -> float | None:
    """By what factor the test rows must grow for ``seeds`` seeds to decide the claim with ``power`` (as
    :func:`seeds_to_decide`), for a protocol whose data can be enlarged (a synthetic set); ``None`` when no factor up
    to ``max_factor`` does (the seeds' own spread is the limit).

    Only the row noise every seed shares (:attr:`Effect.shared`) is scaled (as 1 / rows): the per-seed spread also
    holds each seed's own row noise, which more rows would shrink too, so the factor is an upper bound."""
    if target is None or seeds < 2 or effect.df < 1 or not math.isfinite(effect.se) or utility.df < 1 \
            or not math.isfinite(utility.se):
        return None
    args = (effect, utility, target, alpha, margin, power)
    if not _decides(seeds, *args, rows=max_factor):
        return None
    lo, hi = 1.0, 2.0
    while not _decides(seeds, *args, rows=hi):
        lo, hi = hi, 2 * hi
    while hi / lo > 1.01:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if not _decides(seeds, *args, rows=mid) else (lo, mid)
    return hi


def holds_detectable_effect(effect: Effect, utility: Effect, alpha: float = 0.05, margin: float = 0.02,
                            power: float = 0.8) -> float:
    """Smallest reduction that reads "holds" with probability ``power`` if the method cost no utility: the power of
    the rule of :func:`decide`.

    "Holds" needs a significant reduction (two-sided at ``alpha``) **and** a utility interval whose lower bound is
    ≥ −``margin``. With no true utility change the latter has probability ``P_u = F_{t,df_u}((margin − h_u) / se_u)``
    (``h_u``: the utility interval's half-width); the two are taken as independent, so the gap test needs power
    ``power / P_u``: ``(t_{1−α/2} + t_{power / P_u}) · se`` with the effect's df. Infinite when ``P_u < power`` (the
    utility interval is too wide for "holds" to reach that power, whatever the effect) or either side has no
    variance estimate (one seed).
    """
    if effect.df < 1 or not math.isfinite(effect.se) or utility.df < 1 or not math.isfinite(utility.se):
        return math.inf
    half = utility.mean - utility.lo
    if utility.se > 0:
        p_util = float(stats.t.cdf((margin - half) / utility.se, utility.df))
    else:
        p_util = 1.0 if margin >= 0 else 0.0
    if p_util <= power:
        return math.inf
    return float((stats.t.ppf(1 - alpha / 2, effect.df) + stats.t.ppf(power / p_util, effect.df)) * effect.se)
