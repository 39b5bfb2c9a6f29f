"""The verdict rule: whether a fairness method changed a baseline's bias, and by how much, decided (:func:`decide`)
from a claim's evidence — the statistics of :mod:`faircl.eval.statistics` (permutation nulls, the paired seed × row
bootstrap, the minimum detectable effect), the utility margin and degenerate classifiers — and that evidence built
from per-row predictions (:func:`claim_from_predictions`).

A *claim* reads "method M lowers the gap G of baseline B by the target T at little utility cost". Runs are paired by
seed (same seed = same data order, initialisation and test rows for both).

**Screens.** A claim is *untestable* where the baseline shows no bias beyond chance (:func:`permutation_null`: the
baseline's gap against the same predictions with the attribute permuted within each label; with a validation split
one pooled test over both; leakage against a constant guess of the majority group, :func:`leakage_bias_tests`) or
the baseline is degenerate, and *degenerate* where the method is no classifier on at least half of the seeds
(:func:`degenerate_seed`).

**Three axes, read off two intervals.** The change of the gap (method − baseline, :func:`paired_bootstrap`: the
seeds' spread plus the row noise every seed shares, Student-t on ``S − 1`` df) and the change of utility each get a
two-sided interval at the claim's level ``1 − α/(2m)`` (``m``: the claims of the family). Each axis compares an
interval with one split point:

* **direction** — ``lowers`` (the gap's interval lies below 0) · ``raises`` (above 0) · ``undetermined``;
* **size** against the *threshold* ``τ = (1 − band)·T``, where the target ``T`` is the paper's effect, else the
  protocol's smallest effect of interest, else the utility margin (a fall smaller than the accuracy a claim may cost
  is not worth claiming) — ``reaches`` (the interval lies below τ: the fall is significantly more than
  ``1 − band`` of the target; ``band`` 0.5: more than half of it) · ``smaller`` (the interval lies above τ) ·
  ``undetermined``;
* **utility** against the margin — ``kept`` (the utility's interval lies above −margin) · ``lost`` (below it) ·
  ``undetermined``.

Each split point cuts the truths in two, and an axis reads the side its interval lies on: more seeds narrow the
interval around the truth, so an axis decided once stays decided the same way unless its interval missed the truth.
The word is a function of the three axes (:func:`word`, :data:`WORDS`):

==============================  ==================================================================================
word                            axes
==============================  ==================================================================================
reproduces                      direction lowers, size reaches, utility kept
lowers, less than target        direction lowers, size smaller, utility kept
utility lost                    direction lowers, utility lost (the gap's change is stated; size irrelevant)
contradicted                    direction raises
no change                       direction undetermined, size smaller, and the gap's interval inside ±the smallest
                                effect of interest (±|τ| where none is declared): an equivalence test around 0
no fall shown                   direction undetermined, size smaller (the fall, if any, is smaller than τ)
inconclusive                    any other combination: an axis the word needs is undetermined
untestable                      no bias beyond chance, or the baseline is degenerate
degenerate                      the method is no classifier on at least half of the seeds
==============================  ==================================================================================

No word says "does not hold": a fall bought with utility reads *utility lost*, a fall smaller than the target reads
*lowers, less than target*, and a change too small to show reads *no fall shown* or *no change*.

**Error control.** A wrong word needs an axis decided on the wrong side of its split point, and that needs the
interval it is read from to miss the truth. Every claim contributes two intervals (gap and utility), each at level
``1 − α/(2m)``, so by the union bound (Bonferroni over the family's ``2m`` intervals) the probability that any word
of the family is wrong is at most ``α`` — whatever the dependence between the claims and the axes, and however many
axes read the same interval (they are one interval against several points). The direction's p-value is reported
adjusted (``p_adj = min(1, 2m·p)``: the direction is decided exactly when ``p_adj < α``). Under the sequential
design of :mod:`faircl.eval.sequential` the same holds with ``α_k`` at look ``k`` (``Σ α_k = α``): every test a word
depends on, the utility's included, spends ``α``.

**When a word is final** (:attr:`Verdict.final`). A word is final when no decision of an axis still undetermined can
change it (e.g. *contradicted* whatever the size and utility), or when each axis that could is out of reach within
the design's cap (``horizon``: even one standard error beyond its estimate, the cap's interval would still reach its
split point). Without a horizon (the fixed design, ``faircl compare``) every word is final. An open claim says how
many seeds would decide the axis it waits for (:func:`faircl.eval.power.seeds_to_decide`), or that none would on its
rows and how many rows would.

Example (per-row predictions, e.g. the ``predictions.csv`` of ``faircl predict`` for each seed)::

    from faircl.eval.verdicts import SplitPredictions, claim_from_predictions, decide

    ev = claim_from_predictions("ConFair lowers GAP vs CE", SplitPredictions(y, a, ce_test_preds),
                                SplitPredictions(y, a, confair_test_preds), SplitPredictions(y_val, a_val, ce_val_preds),
                                metric="tpr_gap_rms", paper_effect=-0.045)
    verdict, = decide([ev])          # verdict.verdict, .direction, .size, .utility_axis, .reason, .effect.fmt()

From per-seed summary numbers only (no null, no row bootstrap): ``paired_seed_comparison(baseline_by_seed,
method_by_seed)`` gives the :class:`Effect` to put in a :class:`ClaimEvidence`. All values are fractions (0.045 = 4.5
points); negative effects are reductions.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy import stats

from faircl.eval.claim_evidence import (ClaimEvidence, SplitPredictions, claim_from_predictions, degenerate_by_seed,
                                        degenerate_seed, leakage_bias_tests)
from faircl.eval.power import Axis, seeds_to_decide
from faircl.eval.statistics import (GAP_METRICS, BiasTest, Effect, bias_is_real, confusion_from_rows,
                                    gap_from_confusion, leakage_null, minimum_detectable_effect, paired_bootstrap,
                                    paired_seed_comparison, permutation_null)

__all__ = ["AXES", "BiasTest", "ClaimEvidence", "Effect", "GAP_METRICS", "SIZE_BAND", "VERDICTS", "WORDS", "Verdict",
           "bias_is_real", "SplitPredictions", "VERDICT_HEADER", "claim_from_predictions", "compatible",
           "confusion_from_rows", "decide", "degenerate_by_seed", "degenerate_seed", "gap_from_confusion",
           "leakage_bias_tests", "leakage_null", "minimum_detectable_effect", "paired_bootstrap",
           "paired_seed_comparison", "permutation_null", "seeds_cell", "verdict_row", "word"]

#: every word a claim can read, and what it means (the docs' table is checked against this one)
WORDS = {
    "reproduces": "the gap falls by at least the size threshold, utility kept",
    "lowers, less than target": "the gap falls, by significantly less than the size threshold, utility kept",
    "utility lost": "the gap falls, but utility drops by more than the margin",
    "contradicted": "the gap rises",
    "no change": "no fall or rise shown, and the change lies within the smallest effect of interest around 0",
    "no fall shown": "no fall or rise shown, and any fall is significantly smaller than the size threshold",
    "inconclusive": "an axis the word needs is undetermined",
    "untestable": "the baseline has no bias beyond chance, or is degenerate",
    "degenerate": "the method is no classifier on at least half of the seeds",
}
VERDICTS = tuple(WORDS)
#: each axis's values (``undetermined``: its interval reaches its split point); ``—`` where a screen decided the claim
AXES = {"direction": ("lowers", "raises", "undetermined"), "size": ("reaches", "smaller", "undetermined"),
        "utility": ("kept", "lost", "undetermined")}
#: the share of the target a fall may miss and still reach it: the size threshold is ``(1 − SIZE_BAND) · target``
SIZE_BAND = 0.5
OPEN = "undetermined"

# ------------------------------------------------------------------------------------------ verdicts
# ------------------------------------------------------------------------------------------ verdicts
@dataclass(frozen=True)
class Verdict:
    """A decided claim: the word, its three axes, why, and the numbers beside it (fractions).

    ``effect`` and ``utility`` carry the interval the axes were read from (level :attr:`confidence`), not the
    95% one. ``target`` is the reduction judged against (negative) and ``threshold`` the size axis's split point
    (``(1 − SIZE_BAND)·target``); ``target_from`` says where the target came from. ``p_adj`` is the direction's
    p-value adjusted for the family (``min(1, 2m·p)``); ``mde`` the gap test's minimum detectable effect at the
    claim's level with 80% power. ``final``: no later look can change the word (always true without a horizon).
    An open claim (inconclusive) gets ``seeds_needed`` (in all, ``None`` when no number would), ``rows_needed`` (set
    when its rows' shared noise prevents any number of seeds from deciding it), ``seeds_axis`` (the axis that limits
    it) and ``seeds_reason`` in words."""

    name: str
    verdict: str
    reason: str
    effect: Effect
    utility: Effect
    paper_effect: float | None
    p_adj: float
    mde: float
    bias: tuple[BiasTest, ...] = field(default=())
    direction: str = "—"
    size: str = "—"
    utility_axis: str = "—"
    target: float = math.nan
    threshold: float = math.nan
    target_from: str = ""
    confidence: float = math.nan
    final: bool = True
    seeds_needed: int | None = None
    seeds_reason: str = ""
    rows_needed: int | None = None
    seeds_axis: str = ""


def _majority(reasons: Sequence[str | None]) -> str | None:
    bad = [r for r in reasons if r]
    return f"{len(bad)}/{len(reasons)} seeds: {bad[0]}" if reasons and 2 * len(bad) >= len(reasons) else None


def word(direction: str, size: str, utility: str, negligible: bool = False) -> str:
    """The word of three axes (see the module's table); ``negligible``: the gap's interval lies inside the band of
    *no change*."""
    if direction == "raises":
        return "contradicted"
    if direction == "lowers":
        if utility == "lost":
            return "utility lost"
        if utility == "kept" and size != OPEN:
            return "reproduces" if size == "reaches" else "lowers, less than target"
        return "inconclusive"
    if size == "smaller":
        return "no change" if negligible else "no fall shown"
    return "inconclusive"


def _refinements(direction: str, size: str, utility: str, frozen: set[str]) -> set[str]:
    """Every word the axes could still come to read: each undetermined axis not in ``frozen`` takes each decided
    value, but for the combinations one interval cannot show (a fall reaching the threshold is a fall; a rise is
    smaller than any fall)."""
    def values(axis: str, value: str) -> tuple[str, ...]:
        return AXES[axis][:2] if value == OPEN and axis not in frozen else (value,)

    out = set()
    for d, s, u in itertools.product(values("direction", direction), values("size", size),
                                     values("utility", utility)):
        if s == "reaches" and d != "lowers":
            continue
        out.add(word(d, "smaller" if d == "raises" else s, u))
    return out


def _side(lo: float, hi: float, split: float, below: str, above: str) -> str:
    return below if hi < split else above if lo > split else OPEN


def _out_of_reach(e: Effect, split: float, horizon: tuple[int, float], level: float) -> bool:
    """Whether an undetermined axis stays undetermined at the cap even if the truth were one standard error beyond
    the estimate: the cap's interval (``horizon``: its seeds and its family level ``α_K``; per interval
    ``α_K / (2m)`` as ``level``) would still reach ``split``."""
    cap, _ = horizon
    if e.df < 1 or not math.isfinite(e.se):
        return False
    per_seed = max(e.se ** 2 - e.shared, 0.0) * e.n_seeds
    se_cap = math.sqrt(per_seed / cap + e.shared)
    half = float(stats.t.ppf(1 - level / 2, cap - 1)) * se_cap
    return abs(e.mean - split) + e.se <= half


def decide(claims: Sequence[ClaimEvidence], alpha: float = 0.05, margin: float | Sequence[float] = 0.02,
           power: float = 0.8, horizon: Sequence[tuple[int, float] | None] = (), band: float = SIZE_BAND,
           family: int | None = None) -> list[Verdict]:
    """Decide a family of claims (one results file): the three axes of each at level ``1 − α/(2m)``, its word, and
    whether that word is final.

    Args:
        claims: the evidence of every claim of the family.
        alpha: family-wise error rate (of this look, under a sequential design).
        margin: utility margin (fraction: 0.02 = 2 points), one for all claims or one per claim.
        power: power of the minimum detectable effect and of the seeds planned for an open claim.
        horizon: per claim, ``(seeds, level)`` of the design's last look when this is not it (a sequential design:
            an axis out of reach by then makes the word final as it stands), or ``None`` (the last look, or the fixed
            design: every word is final).
        band: the share of the target a fall may miss and still read *reaches* (:data:`SIZE_BAND`).
        family: the family's size ``m`` (default: the claims with a p-value). A sequential design passes the size
            of the whole family, the claims settled at earlier looks included.

    Returns:
        One :class:`Verdict` per claim, in order.
    """
    margins = [float(margin)] * len(claims) if isinstance(margin, (int, float)) else [float(m) for m in margin]
    if len(margins) != len(claims):
        raise ValueError(f"decide: {len(margins)} margins for {len(claims)} claims; give one margin or one per claim")
    horizons = list(horizon) or [None] * len(claims)
    m = family or max(1, int(np.sum([math.isfinite(c.effect.p_value) for c in claims])))
    level = alpha / (2 * m)  # per interval: two per claim
    out = []
    for c, mg, hz in zip(claims, margins, horizons):
        out.append(_decide_one(c, level, mg, power, hz, band, m))
    return out


def _decide_one(c: ClaimEvidence, level: float, margin: float, power: float,
                horizon: tuple[int, float] | None, band: float, m: int) -> Verdict:
    target, target_from = c.target, ("the paper's effect" if c.paper_effect not in (None, 0) else
                                     "the smallest effect of interest")
    if target is None:
        target, target_from = -abs(margin), "the utility margin (no paper effect or smallest effect declared)"
    tau = (1 - band) * target
    lo, hi = c.effect.interval(1 - level)
    ulo, uhi = c.utility.interval(1 - level)
    shown = dataclasses.replace(c.effect, lo=lo, hi=hi)
    shown_u = dataclasses.replace(c.utility, lo=ulo, hi=uhi)
    p_adj = min(1.0, 2 * m * c.effect.p_value) if math.isfinite(c.effect.p_value) else math.nan
    base = dict(effect=shown, utility=shown_u, paper_effect=c.paper_effect, p_adj=p_adj,
                mde=minimum_detectable_effect(c.effect, 2 * level, power), bias=tuple(c.bias), target=target,
                threshold=tau, target_from=target_from, confidence=1 - level)
    screened = _screen(c)
    if screened is not None:
        return Verdict(c.name, *screened, **base)
    if c.effect.n_seeds < 2:
        return Verdict(c.name, "inconclusive", f"no verdict: {c.effect.n_seeds} paired seed; a paired comparison "
                       "needs at least 2 (no seed-to-seed variance)", **base, direction=OPEN, size=OPEN,
                       utility_axis=OPEN, seeds_reason="at least 2 paired seeds")
    d = _side(lo, hi, 0.0, "lowers", "raises")
    s = _side(lo, hi, tau, "reaches", "smaller")
    u = _side(ulo, uhi, -margin, "lost", "kept")
    band_0 = abs(c.smallest_effect) if c.smallest_effect else abs(tau)
    negligible = -band_0 < lo and hi < band_0
    w = word(d, s, u, negligible)
    frozen: set[str] = set()
    if horizon is not None:  # a sequential look before the last: which open axes are out of reach by the cap
        cap_level = horizon[1] / (2 * m)
        for name, value, e, split in (("direction", d, c.effect, 0.0), ("size", s, c.effect, tau),
                                      ("utility", u, c.utility, -margin)):
            if value == OPEN and _out_of_reach(e, split, horizon, cap_level):
                frozen.add(name)
    final = horizon is None or len(_refinements(d, s, u, frozen)) == 1
    why = _reason(w, d, s, u, c, tau, target, target_from, margin, p_adj, negligible, band_0)
    if horizon is not None and final and frozen and w in ("inconclusive", "no fall shown", "no change"):
        why += f"; the {' and '.join(sorted(frozen))} cannot be decided within the cap of {horizon[0]} seeds"
    plan = None
    if w == "inconclusive":
        open_axes = [Axis("direction", c.effect, abs(target))] if d == OPEN else []
        if s == OPEN and (d == "lowers" or d == OPEN):
            open_axes.append(Axis("size", c.effect, abs(target - tau)))
        if u == OPEN and d != "raises":
            open_axes.append(Axis("utility", c.utility, abs(margin)))
        plan = seeds_to_decide(open_axes, level / 2, power)
        why = f"{why}; seeds needed: {plan.reason}"
    if c.unchecked:
        if w in ("reproduces", "lowers, less than target"):
            w = "inconclusive"
        why = f"{c.unchecked}; {why}"
    return Verdict(c.name, w, why, **base, direction=d, size=s, utility_axis=u, final=final,
                   seeds_needed=None if plan is None else plan.seeds, seeds_reason="" if plan is None else plan.reason,
                   rows_needed=None if plan is None else plan.rows, seeds_axis="" if plan is None else plan.axis)


def _screen(c: ClaimEvidence) -> tuple[str, str] | None:
    missing = [t.describe() for t in c.bias if not t.real]
    if missing:
        return "untestable", "no bias beyond chance: " + "; ".join(missing)
    if (why := _majority(c.baseline_degenerate)) is not None:
        return "untestable", f"the baseline is degenerate ({why})"
    if (why := _majority(c.method_degenerate)) is not None:
        return "degenerate", f"the method is degenerate ({why})"
    return None


def _reason(w: str, d: str, s: str, u: str, c: ClaimEvidence, tau: float, target: float, target_from: str,
            margin: float, p_adj: float, negligible: bool, band_0: float) -> str:
    """The axes in words: what each found, against which point."""
    if abs(c.effect.mean) <= 1e-12 and c.effect.se <= 1e-12:
        gap = "no change: the method has the baseline's value on every seed"
    else:
        gap = {"lowers": f"the gap falls (p_adj {p_adj:.3g})", "raises": f"the gap rises (p_adj {p_adj:.3g})",
               OPEN: f"no fall or rise shown (p_adj {p_adj:.3g})"}[d]
    size = {"reaches": "reaches", "smaller": "is smaller than", OPEN: "may or may not reach"}[s]
    parts = [gap, f"the fall {size} the threshold {_pts(tau, True)} ({100 * tau / target:.0f}% of {target_from}, "
                  f"{_pts(target, True)})"]
    if negligible and w == "no change":
        parts.append(f"the change lies within ±{_pts(band_0)} points")
    utility = {"kept": "utility kept", "lost": "utility lost", OPEN: "utility undetermined"}[u]
    parts.append(f"{utility} (margin −{_pts(margin)} points)")
    return "; ".join(parts)


def compatible(a: Verdict, b: Verdict) -> bool:
    """Whether two verdicts on the same claim can both be right: no axis decided one way in one and the other way in
    the other (an undetermined axis is compatible with either value)."""
    return all(x == y or OPEN in (x, y) or "—" in (x, y)
               for x, y in ((a.direction, b.direction), (a.size, b.size), (a.utility_axis, b.utility_axis)))


def _pts(x: float, signed: bool = False) -> str:
    if not math.isfinite(x):
        return "∞"
    return f"{100 * x:+.1f}" if signed else f"{100 * x:.1f}"


def seeds_cell(v: Verdict) -> str:
    """The seeds an open claim needs, in a table: ``12``, ``none on these 800 rows; on ≈ 3,815 rows, 9 new seeds
    (direction)``, or ``—``."""
    if v.verdict != "inconclusive" or not v.seeds_reason:
        return "—"
    if v.seeds_needed is not None and v.rows_needed is None:
        return f"{max(v.seeds_needed - v.effect.n_seeds, 0)} new ({v.seeds_axis})"
    return f"{v.seeds_reason}" + (f" ({v.seeds_axis})" if v.seeds_axis and v.seeds_axis not in v.seeds_reason else "")


def verdict_row(v: Verdict) -> str:
    """One markdown row: claim | target | measured effect [CI] | p_adj | direction · size · utility | utility change
    [CI] | bias | seeds needed | verdict (columns of :data:`VERDICT_HEADER`)."""
    target = "—" if not math.isfinite(v.target) else f"{_pts(v.target, True)} (τ {_pts(v.threshold, True)})"
    bias = "; ".join(t.describe() for t in v.bias) or "not checked"
    name = v.name.replace("|", "\\|")
    p = f"{v.p_adj:.3g}" if math.isfinite(v.p_adj) else "—"
    return (f"| {name} | {target} | {v.effect.fmt()} | {p} | {v.direction} · {v.size} · {v.utility_axis} | "
            f"{v.utility.fmt()} | {bias} | {seeds_cell(v)} | **{v.verdict}** ({v.reason}; {v.effect.n_seeds} seeds) |")


VERDICT_HEADER = ["| claim | target (threshold τ) | our effect [CI] | p_adj | direction · size · utility | "
                  "utility change [CI] | baseline bias vs null | seeds needed | verdict |",
                  "|---|---|---|---|---|---|---|---|---|"]
