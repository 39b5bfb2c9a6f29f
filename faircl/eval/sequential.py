"""Adding seeds until claims are decided: the group-sequential design of ``faircl bench --max-seeds N``.

**The design.** A protocol's claims are looked at after its own seeds ``n₀`` and then at ``2n₀, 4n₀, …`` seeds,
the last look at the cap ``N`` (:func:`looks`). At look ``k`` every claim of the family is decided by the fixed
design's rule (:func:`faircl.eval.verdicts.decide`: the three axes read off the gap's and the utility's intervals at
``1 − α_k/(2m)``) at the family level ``α_k`` (:func:`look_levels`). A claim stops when its word is *final*
(:attr:`faircl.eval.verdicts.Verdict.final`): no decision of an axis still undetermined could change it, or each
axis that could is out of reach within the cap (even one standard error beyond its estimate, the cap's interval
would still reach its split point; the reason says so). A protocol gets more seeds only while one of its claims is
not final. "Untestable" and "degenerate" are final: more seeds of a baseline with no bias beyond chance are not spent
on it.

**Looks refine and never flip.** An axis, once decided, reads the side of its split point that its interval lay on;
a later look, or the fixed design at the cap on a superset of the same seeds, reads the other side only if one of the
two intervals missed the truth. A word stops only when the axes it depends on are decided (or out of reach), so the
sequential word and the word of the fixed design at the cap disagree only through such a miss, or when an axis
judged out of reach is decided at the cap after all (the calibration benchmark measures both:
``benchmarks/calibration/``).

**Error control across the looks: α spent by the union bound.** The levels are ``α_k = α / 2^k`` for the looks before
the last and the remainder, ``α / 2^(K−1)``, at the last (``K`` looks: ``Σ α_k = α``). At look ``k`` every test a word
depends on, the utility's included, is an interval at ``1 − α_k/(2m)`` (``m``: the whole family's claims, those that
stopped at earlier looks included), so a wrong word at look ``k`` has probability at most ``α_k`` and a wrong word at
any look at most ``α`` (Bonferroni over the looks and the family's ``2m`` intervals) — whatever the correlation
between the looks. This is α spending (Lan & DeMets, 1983, *Biometrika* 70:659) with the looks' boundaries set by
Bonferroni's inequality instead of the joint normal law of the test statistics.

**Why not exact group-sequential boundaries.** The exact boundaries (Lan & DeMets; Jennison & Turnbull, 2000,
*Group Sequential Methods*, ch. 7) take the statistics at the looks as a Brownian motion in the information:
independent increments, information proportional to the seeds. Neither holds here: an effect's variance is
``s²_d / n + c̄`` (:mod:`faircl.eval.statistics`), where ``c̄`` — the test rows' noise that every seed shares —
does not shrink with more seeds, and the t-statistics have 2–15 degrees of freedom, far from normal. The union bound
needs neither; its price is that it is conservative, which the calibration benchmark measures
(``benchmarks/calibration/``: the error rates at α and α/10, the power and the expected number of seeds against
the fixed design at the same cap).

**Why these looks.** Doubling the seeds per look halves the per-seed part of the variance, which more than pays for
halving the level (the critical value grows by about 0.25 per halving; the standard error falls by √2). The looks
and their levels do not depend on ``N`` but for the last one: a re-run with a higher cap replays the same earlier
looks on the same runs, so the claims they decided keep their verdicts, and it continues from where the last run
stopped. The old cap's own look is not among the new looks (it spent the remainder of α): a claim it decided is
looked at again, under the new design. Raising the cap after seeing the verdicts is, strictly, a new design.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Look", "look_levels", "looks", "schedule"]


def looks(start: int, cap: int) -> list[int]:
    """The seed counts at which a protocol's claims are looked at: ``start, 2·start, 4·start, …`` below ``cap``, then
    ``cap`` (``[cap]`` when ``cap ≤ start``: the fixed design at the cap)."""
    if start < 2 or cap < 2:
        raise ValueError(f"looks: a paired comparison needs at least 2 seeds (start {start}, cap {cap})")
    out, n = [], start
    while n < cap:
        out.append(n)
        n *= 2
    return out + [cap]


def look_levels(n_looks: int, alpha: float = 0.05) -> list[float]:
    """The level of each of ``n_looks`` looks: ``α/2, α/4, …`` and the last one the remainder (``Σ = α``; one look:
    ``α``)."""
    if n_looks < 1:
        raise ValueError("look_levels: at least one look")
    levels = [alpha / 2 ** k for k in range(1, n_looks)]
    return levels + [alpha - math.fsum(levels)]


@dataclass(frozen=True)
class Look:
    """One look of the family: its number (1-based), its level, and each protocol's seeds at it."""

    number: int
    level: float
    seeds: dict[str, int]


def schedule(starts: dict[str, int], cap: int | None, alpha: float = 0.05) -> list[Look]:
    """The looks of a family of protocols (name → its own first seeds): look ``k`` has each protocol at its ``k``-th
    seed count (a protocol with fewer looks stays at its cap), and the level of the family's look ``k``. Without a
    cap, the fixed design: one look at each protocol's own seeds, at level ``α``."""
    per = {name: looks(n, n if cap is None else cap) for name, n in starts.items()}
    k_max = max(len(v) for v in per.values())
    levels = look_levels(k_max, alpha)
    return [Look(k + 1, levels[k], {name: v[min(k, len(v) - 1)] for name, v in per.items()}) for k in range(k_max)]
