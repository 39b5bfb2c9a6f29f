"""The verdict rule: whether a fairness method changed a baseline's bias, decided (:func:`decide`) from a claim's
evidence — the statistics of :mod:`faircl.eval.statistics` (permutation nulls, paired seed × row bootstrap,
Holm–Bonferroni, the minimum detectable effect), non-inferiority of utility and degenerate classifiers — and that
evidence built from per-row predictions (:func:`claim_from_predictions`).

A *claim* reads "method M lowers the gap G of baseline B at little utility cost". It is decided from runs paired by
seed (same seed = same data order, initialisation and test rows for both) in five steps:

1. **Is there a bias to remove?** (:func:`permutation_null`) The baseline's gap, averaged over seeds, is compared
   with the same predictions after permuting the attribute *within each label* (≥ 1,000 permutations, vectorised):
   the null keeps every seed's accuracy and per-class prediction rates and breaks only the link between errors and
   the attribute. With a validation split the screen is **one pooled test** over the test and validation rows
   together (permuted within label × split): the bias is real if the pooled gap exceeds its null's 95th percentile.
   Requiring each split to pass on its own (``screen="each"``, the former rule) multiplies two powers and spends
   most of it on the smaller split: a 6-point TPR gap on 2,000 test / 1,000 validation rows read "untestable" in
   41–58% of protocols; pooled, one test at 5% keeps the bias-free pass rate at 5% and uses all 3,000 rows. A
   bootstrap over the rows gives the observed gap's interval. Leakage (a probe's accuracy for the attribute) is
   compared with the majority-group rate, the accuracy of a constant guess (:func:`leakage_null`), on the test and
   the validation split (:func:`leakage_bias_tests`; a probe beats that null by wide margins, so both are required).
2. **Did the method change it?** (:func:`paired_bootstrap`) Per seed, ``method − baseline`` on the same rows; its
   variance counts each noise of the seeds × rows design once: the seeds' spread (the paired t-test's ``s² / S``,
   which holds training noise and each seed's own row noise) plus the row noise every seed shares (the covariance
   between seeds over a bootstrap of the rows shared by every seed and both models). The interval and p-value are
   Student-t on ``S − 1`` df (see :mod:`faircl.eval.statistics` for the decomposition and why not
   Satterthwaite's df). From per-seed summary numbers only, :func:`paired_seed_comparison` is the paired t-test.
3. **Holm–Bonferroni** (:func:`holm`) over every claim of one family (a results file) that has a p-value.
4. **At what cost?** Utility is non-inferior only if the *lower bound* of its change's interval is ≥ −``margin``.
5. **Is it a classifier at all?** (:func:`degenerate_seed`) Per seed, against the test split's own majority-class
   rate and balanced accuracy.

Verdicts (:data:`VERDICTS`, decided by :func:`decide`): **holds** (Holm-significant change in the claimed
direction, utility non-inferior) · **contradicted** (Holm-significant change in the wrong direction) · **does not
hold** (no significant change, and the reduction is significantly smaller than the paper's effect — or, where the
paper gives none, than the protocol's smallest effect of interest, ``ClaimEvidence.smallest_effect``: the effect's
interval lies above it, Holm-adjusted over the family (:func:`smaller_than_target`), whatever the utility; or a
significant change bought with a utility loss beyond the margin) · **inconclusive** (neither: the interval reaches
both 0 and the paper's effect, or the utility interval straddles the margin) · **untestable** (no bias beyond
chance, or the baseline is degenerate) · **degenerate** (the method is no classifier on at least half of the seeds).
The utility margin decides only between "holds" and "does not hold" (utility): "does not hold" for want of an effect
follows from the effect alone (the former rule also asked that "holds" could be read with 80% power, so a precise
zero against a large paper effect stayed inconclusive whenever accuracy varied across seeds). Every inconclusive
verdict says how many seeds would decide it with 80% power (:func:`seeds_to_decide`: "holds" if the paper's effect
is real, "does not hold" if there is no change), or, when the row noise every seed shares prevents it, how many rows.
Each verdict reports both minimum detectable effects: the gap test's (``mde``) and "holds"' (``mde_holds``, margin
included). All values are fractions (0.045 = 4.5 points); negative effects are reductions.

Example (per-row predictions, e.g. the ``predictions.csv`` of ``faircl predict`` for each seed)::

    from faircl.eval.verdicts import SplitPredictions, claim_from_predictions, decide

    ev = claim_from_predictions("ConFair lowers GAP vs CE", SplitPredictions(y, a, ce_test_preds),
                                SplitPredictions(y, a, confair_test_preds), SplitPredictions(y_val, a_val, ce_val_preds),
                                metric="tpr_gap_rms", paper_effect=-0.045)
    verdict, = decide([ev])          # verdict.verdict, verdict.reason, verdict.effect.fmt(), verdict.mde

From per-seed summary numbers only (no null, no row bootstrap): ``paired_seed_comparison(baseline_by_seed,
method_by_seed)`` gives the :class:`Effect` to put in a :class:`ClaimEvidence`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy import stats

from faircl.eval.power import holds_detectable_effect, seeds_to_decide
from faircl.eval.statistics import (GAP_METRICS, BiasTest, Effect, bias_is_real, confusion_from_rows,
                                    gap_from_confusion, holm, leakage_null, minimum_detectable_effect,
                                    paired_bootstrap, paired_seed_comparison, permutation_null)

__all__ = ["BiasTest", "ClaimEvidence", "Effect", "GAP_METRICS", "VERDICTS", "Verdict", "bias_is_real",
           "SplitPredictions", "VERDICT_HEADER", "claim_from_predictions", "confusion_from_rows", "decide",
           "degenerate_by_seed", "degenerate_seed", "gap_from_confusion", "holds_detectable_effect", "holm",
           "leakage_bias_tests", "leakage_null", "minimum_detectable_effect", "paired_bootstrap",
           "paired_seed_comparison", "permutation_null", "seeds_cell", "seeds_to_decide", "smaller_than_target",
           "verdict_row"]

VERDICTS = ("holds", "contradicted", "does not hold", "inconclusive", "untestable", "degenerate")


# ------------------------------------------------------------------------------------------ is it a classifier?
def degenerate_seed(top_share: float, balanced_accuracy: float, majority_rate: float, num_classes: int = 2,
                    chance_margin: float = 0.05, share_margin: float | None = None) -> str | None:
    """Why one seed's classifier is degenerate on a split, or ``None`` if it is not.

    Args:
        top_share: share of the split's rows given the most predicted class.
        balanced_accuracy: balanced accuracy on the split.
        majority_rate: share of the split's most frequent true class (a constant predictor's accuracy).
        num_classes: classes (chance balanced accuracy is ``1 / C``).
        chance_margin: balanced accuracy within this of chance is degenerate.
        share_margin: a top-class share above ``majority_rate + share_margin`` is degenerate; default half the
            distance from the majority rate to 1 (86% majority: 93%; balanced binary: 75%).

    Returns:
        A short reason or ``None``.
    """
    margin = (1 - majority_rate) / 2 if share_margin is None else share_margin
    if balanced_accuracy <= 1 / num_classes + chance_margin:
        return f"balanced accuracy {100 * balanced_accuracy:.1f} is within {100 * chance_margin:.0f} points of chance"
    if top_share > majority_rate + margin:
        return (f"gives one class to {100 * top_share:.0f}% of rows (majority class {100 * majority_rate:.0f}%, "
                f"limit {100 * (majority_rate + margin):.0f}%)")
    return None


# ------------------------------------------------------------------------------------------ verdicts
@dataclass(frozen=True)
class ClaimEvidence:
    """Everything one claim is decided from.

    Attributes:
        name: the claim, e.g. ``"Shen: ConFair lowers GAP vs CE"``.
        effect: the metric's change (method − baseline); a reduction is claimed (negative = as claimed).
        utility: the utility's change (accuracy or balanced accuracy; higher is better).
        paper_effect: the change the paper reports (same units; ``None`` if it reports none).
        bias: the baseline's bias tests (test and validation); empty = not checked.
        baseline_degenerate, method_degenerate: per-seed reasons from :func:`degenerate_seed` (``None`` = fine).
        unchecked: why the baseline's bias could not be tested (e.g. no per-row predictions); empty when it was
            tested or has no null. Such a claim never reads a bare "holds" (it reads "inconclusive"), and its
            reason starts with this text.
        smallest_effect: the protocol's smallest effect of interest (a reduction's size, sign ignored; ``None``:
            none). Without a paper effect, a change significantly smaller than it reads "does not hold".
    """

    name: str
    effect: Effect
    utility: Effect
    paper_effect: float | None = None
    bias: tuple[BiasTest, ...] = ()
    baseline_degenerate: Sequence[str | None] = ()
    method_degenerate: Sequence[str | None] = ()
    unchecked: str = ""
    smallest_effect: float | None = None

    @property
    def target(self) -> float | None:
        """The reduction the claim is judged against (negative): the paper's effect, else the smallest effect of
        interest, else ``None``."""
        for e in (self.paper_effect, self.smallest_effect):
            if e is not None and math.isfinite(e) and e != 0:
                return -abs(float(e))
        return None


@dataclass(frozen=True)
class Verdict:
    """A decided claim: the verdict word, why, and the numbers beside it (fractions).

    ``mde`` is the gap test's minimum detectable effect; ``mde_holds`` the smallest reduction that reads "holds"
    with the same power when the method costs no utility (infinite: "holds" cannot reach that power here).
    ``p_smaller`` is the Holm-adjusted p-value of "the reduction is at least the paper's (or the smallest effect of
    interest)", the inferiority test behind "does not hold" (NaN without a target). ``seeds_needed`` (inconclusive
    claims only) is the number of seeds that would decide the claim with 80% power (:func:`seeds_to_decide`),
    ``None`` when no number would; on ``rows_needed`` test rows where the shared noise of the claim's own rows
    prevents any number of seeds from deciding it (``None``: on its own rows); ``seeds_reason`` says so in words."""

    name: str
    verdict: str
    reason: str
    effect: Effect
    utility: Effect
    paper_effect: float | None
    p_holm: float
    mde: float
    bias: tuple[BiasTest, ...] = field(default=())
    mde_holds: float = math.nan
    p_smaller: float = math.nan
    seeds_needed: int | None = None
    seeds_reason: str = ""
    rows_needed: int | None = None


def _majority(reasons: Sequence[str | None]) -> str | None:
    bad = [r for r in reasons if r]
    return f"{len(bad)}/{len(reasons)} seeds: {bad[0]}" if reasons and 2 * len(bad) >= len(reasons) else None


def decide(claims: Sequence[ClaimEvidence], alpha: float = 0.05, margin: float | Sequence[float] = 0.02,
           power: float = 0.8, settled: Sequence[bool] = ()) -> list[Verdict]:
    """Decide a family of claims (one results file) with Holm–Bonferroni over their p-values.

    Args:
        claims: the evidence of every claim of the family.
        alpha: family-wise error rate.
        margin: utility non-inferiority margin (fraction: 0.02 = 2 points), one for all claims or one per claim
            (the Holm step is over every claim's p-value either way).
        power: power at which the minimum detectable effects (the gap test's and "holds"') are computed (at the
            Bonferroni level ``alpha / m``, the strictest level Holm may test a claim at).
        settled: per claim, whether its verdict was settled at an earlier look of a sequential design
            (:mod:`faircl.eval.sequential`) and its evidence stopped growing there: it stays in the family's Holm
            steps with p-values 1 (its stopped evidence is no valid p-value at this look), so the others are tested
            as in a family of the full size.

    Returns:
        One :class:`Verdict` per claim, in order.
    """
    margins = [float(margin)] * len(claims) if isinstance(margin, (int, float)) else [float(m) for m in margin]
    if len(margins) != len(claims):
        raise ValueError(f"decide: {len(margins)} margins for {len(claims)} claims; give one margin or one per claim")
    done = list(settled) or [False] * len(claims)
    p_holm = holm([1.0 if d else c.effect.p_value for c, d in zip(claims, done)])
    p_smaller = holm([1.0 if d else smaller_than_target(c.effect, c.target) for c, d in zip(claims, done)])
    m = max(1, int(np.sum([math.isfinite(c.effect.p_value) for c in claims])))
    out = []
    for c, ph, ps, mg in zip(claims, p_holm, p_smaller, margins):
        mde = minimum_detectable_effect(c.effect, alpha / m, power)
        mde_holds = holds_detectable_effect(c.effect, c.utility, alpha / m, mg, power)
        v, why = _verdict(c, float(ph), mde, alpha, mg, mde_holds, float(ps))
        n_seeds, seeds_why, n_rows = None, "", None
        if v == "inconclusive":
            n_seeds, seeds_why, n_rows = seeds_to_decide(c.effect, c.utility, c.target, alpha / m, mg, power)
            why = f"{why}; {seeds_why}"
        if c.unchecked:  # decided without the baseline's bias test: never a bare "holds"
            v, why = ("inconclusive" if v == "holds" else v), f"{c.unchecked}; {why}"
        out.append(Verdict(c.name, v, why, c.effect, c.utility, c.paper_effect, float(ph), mde, tuple(c.bias),
                           mde_holds, float(ps), n_seeds, seeds_why, n_rows))
    return out


def smaller_than_target(effect: Effect, target: float | None) -> float:
    """p-value of "the reduction is at least ``target``" (``H0: μ ≤ target < 0``) against "it is smaller"
    (``μ > target``), on the scale of the effect's two-sided interval: twice the one-sided Student-t tail on the
    effect's df, so ``p < α`` exactly when the ``1 − α`` interval lies above ``target``. NaN without a target or a
    variance estimate."""
    if target is None or effect.df < 1 or not math.isfinite(effect.se):
        return math.nan
    if effect.se <= 0:
        return 0.0 if effect.mean > target else 1.0
    return min(1.0, float(2 * stats.t.sf((effect.mean - target) / effect.se, effect.df)))


def _verdict(c: ClaimEvidence, ph: float, mde: float, alpha: float, margin: float,
             mde_holds: float = math.nan, p_smaller: float = math.nan) -> tuple[str, str]:
    missing = [t.describe() for t in c.bias if not t.real]
    if missing:
        return "untestable", "no bias beyond chance: " + "; ".join(missing)
    if (why := _majority(c.baseline_degenerate)) is not None:
        return "untestable", f"the baseline is degenerate ({why})"
    if (why := _majority(c.method_degenerate)) is not None:
        return "degenerate", f"the method is degenerate ({why})"
    paper = abs(c.paper_effect) if c.paper_effect is not None else math.nan
    if abs(c.effect.mean) <= 1e-12 and c.effect.se <= 1e-12 and c.effect.n_seeds >= 2:  # up to round-off
        return "does not hold", "no change: the method has the baseline's value on every seed"
    if ph < alpha and c.effect.mean > 0:
        return "contradicted", f"the gap rises (Holm p {ph:.3g})"
    if ph < alpha:
        if c.utility.lo >= -margin:
            return "holds", f"the gap falls (Holm p {ph:.3g}); utility within −{100 * margin:.0f} points"
        if c.utility.hi < -margin:
            return "does not hold", f"the gap falls but utility drops by more than {100 * margin:.0f} points"
        return "inconclusive", (f"the gap falls (Holm p {ph:.3g}) but the utility interval reaches below "
                                f"−{100 * margin:.0f} points")
    if p_smaller < alpha:
        than = (f"the paper's {100 * paper:.1f}" if math.isfinite(paper) else
                f"the smallest effect of interest, {100 * abs(c.target):.1f}")
        return "does not hold", (f"no significant change (Holm p {ph:.3g}); the reduction is significantly smaller "
                                 f"than {than} points (Holm p {p_smaller:.3g})")
    if math.isfinite(mde_holds):
        return "inconclusive", (f"no significant change (Holm p {ph:.3g}); holds needs {100 * mde_holds:.1f} points"
                                + (f" > the paper's {100 * paper:.1f}" if math.isfinite(paper) else ""))
    return "inconclusive", (f"no significant change (Holm p {ph:.3g}); this design cannot read holds with 80% power "
                            f"(gap test's detectable effect {_pts(mde)} points)")


def _pts(x: float) -> str:
    return f"{100 * x:.1f}" if math.isfinite(x) else "∞"


# ------------------------------------------------------------------------------------------ from predictions
@dataclass(frozen=True)
class SplitPredictions:
    """One split's rows and the predictions of several seeds on them.

    Attributes:
        y: true class per row ``[n]``.
        a: attribute per row ``[n]`` (``-1`` unknown).
        preds: predictions ``[S, n]`` (seed order shared with the model it is paired with).
    """

    y: np.ndarray
    a: np.ndarray
    preds: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "y", np.asarray(self.y, dtype=np.int64))
        object.__setattr__(self, "a", np.asarray(self.a, dtype=np.int64))
        object.__setattr__(self, "preds", np.atleast_2d(np.asarray(self.preds, dtype=np.int64)))
        if not (self.y.shape == self.a.shape == self.preds.shape[1:]):
            raise ValueError(f"a split needs y [n], a [n] and preds [S, n]; got {self.y.shape}, {self.a.shape}, "
                             f"{self.preds.shape}")


def degenerate_by_seed(split: SplitPredictions, num_classes: int, **kwargs) -> list[str | None]:
    """:func:`degenerate_seed` of every seed's predictions on ``split`` (keyword arguments passed on)."""
    majority = float(np.bincount(split.y, minlength=num_classes).max() / len(split.y))
    out = []
    for p in split.preds:
        bacc = float(gap_from_confusion(confusion_from_rows(split.y, p, split.a, num_classes,
                                                            int(max(split.a.max(), 0)) + 1), "balanced_accuracy"))
        top = float(np.bincount(p, minlength=num_classes).max() / len(p))
        out.append(degenerate_seed(top, bacc, majority, num_classes, **kwargs))
    return out


def claim_from_predictions(name: str, baseline_test: SplitPredictions, method_test: SplitPredictions,
                           baseline_val: SplitPredictions | None = None, *, metric: str = "tpr_gap_rms",
                           utility: str = "accuracy", paper_effect: float | None = None,
                           num_classes: int | None = None, num_groups: int | None = None,
                           n_permutations: int = 1000, n_bootstrap: int = 2000, seed: int = 0,
                           screen: str = "pooled") -> ClaimEvidence:
    """The evidence of "the method lowers ``metric`` against the baseline" from per-row predictions.

    Args:
        name: the claim.
        baseline_test, method_test: predictions on the test split, paired by seed (same rows).
        baseline_val: the baseline's predictions on the validation split, same seeds (``None``: the bias is
            screened on test only).
        metric: the gap (:data:`GAP_METRICS`).
        utility: ``accuracy`` or ``balanced_accuracy``.
        paper_effect: the change the paper reports (fraction, negative = reduction).
        num_classes, num_groups: default to the largest id + 1 over the test rows.
        n_permutations: permutations of the null.
        n_bootstrap: bootstrap replicates (null interval and the paired effects).
        seed: random seed of the permutations and resamples.
        screen: with ``baseline_val``, ``"pooled"`` (one test over the test and validation rows, permuted within
            label × split) or ``"each"`` (the bias must be real on each split on its own).

    Returns:
        A :class:`ClaimEvidence` for :func:`decide`.
    """
    if screen not in ("pooled", "each"):
        raise ValueError(f"screen must be 'pooled' or 'each', got {screen!r}")
    if not (np.array_equal(baseline_test.y, method_test.y) and np.array_equal(baseline_test.a, method_test.a)):
        raise ValueError(f"{name}: the baseline and the method must be scored on the same test rows")
    c = int(num_classes or max(baseline_test.y.max(), baseline_test.preds.max(), method_test.preds.max()) + 1)
    g = int(num_groups or baseline_test.a.max() + 1)
    kw = dict(num_classes=c, num_groups=g, seed=seed)
    if baseline_val is not None and screen == "pooled":
        if baseline_val.preds.shape[0] != baseline_test.preds.shape[0]:
            raise ValueError(f"{name}: the baseline's validation predictions need the test's {len(baseline_test.preds)}"
                             f" seeds, got {len(baseline_val.preds)}")
        ys, as_ = np.r_[baseline_test.y, baseline_val.y], np.r_[baseline_test.a, baseline_val.a]
        strata = ys + c * np.r_[np.zeros(len(baseline_test.y), np.int64), np.ones(len(baseline_val.y), np.int64)]
        bias = [permutation_null(ys, np.concatenate([baseline_test.preds, baseline_val.preds], axis=1), as_, metric,
                                 n_permutations=n_permutations, n_bootstrap=n_bootstrap, split="test+validation",
                                 strata=strata, **kw)]
    else:
        bias = [permutation_null(baseline_test.y, baseline_test.preds, baseline_test.a, metric,
                                 n_permutations=n_permutations, n_bootstrap=n_bootstrap, split="test", **kw)]
    if baseline_val is not None and screen == "each":
        bias.append(permutation_null(baseline_val.y, baseline_val.preds, baseline_val.a, metric,
                                     n_permutations=n_permutations, n_bootstrap=0, split="validation", **kw))
    args = (baseline_test.y, baseline_test.a, baseline_test.preds, method_test.preds)
    return ClaimEvidence(
        name, paired_bootstrap(*args, metric, n_bootstrap=n_bootstrap, **kw),
        paired_bootstrap(*args, utility, n_bootstrap=n_bootstrap, **kw), paper_effect, tuple(bias),
        degenerate_by_seed(baseline_test, c), degenerate_by_seed(method_test, c))


def leakage_bias_tests(test_leakage: Sequence[float], test_a, val_leakage: Sequence[float] | None = None,
                       val_a=None, level: float = 0.95) -> tuple[BiasTest, ...]:
    """The baseline's leakage against a constant guess of the majority group, on the test and the validation split.

    A leakage claim is testable only if both tests are real (:func:`bias_is_real`): the probe (fit on the train
    split's representations) beats the majority-group rate's binomial null on each split's own rows.

    Args:
        test_leakage: the baseline's leakage on the test split, per seed (fractions).
        test_a: the test rows' attribute ``[n]`` (``-1`` unknown: not counted).
        val_leakage: the same probe's leakage on the validation split, per seed (``None``: test only).
        val_a: the validation rows' attribute.
        level: quantile of the null.

    Returns:
        ``(test,)`` or ``(test, validation)`` :class:`BiasTest` s.
    """
    def one(leak: Sequence[float], a, split: str) -> BiasTest:
        known = np.asarray(a, dtype=np.int64)
        known = known[known >= 0]
        if known.size == 0:
            raise ValueError(f"no {split} row has a known attribute: leakage cannot be tested there")
        return leakage_null(leak, float(np.bincount(known).max() / known.size), int(known.size), level, split)

    tests = [one(test_leakage, test_a, "test")]
    if val_leakage is not None:
        if val_a is None:
            raise ValueError("val_leakage needs val_a, the validation rows' attributes")
        tests.append(one(val_leakage, val_a, "validation"))
    return tuple(tests)


def seeds_cell(v: Verdict) -> str:
    """The seeds an open claim needs, in a table: ``12``, ``16 (on 9,095 rows)``, or ``—``."""
    if v.seeds_needed is None:
        return "—"
    return f"{v.seeds_needed}" + (f" (on {v.rows_needed:,} rows)" if v.rows_needed is not None else "")


def verdict_row(v: Verdict) -> str:
    """One markdown row: claim | paper effect | measured effect [95%] | Holm p | MDE | holds-MDE | utility change |
    bias | seeds needed (inconclusive claims: to decide it with 80% power; "—" otherwise or when no number of seeds
    would) | verdict (columns of :data:`VERDICT_HEADER`)."""
    paper = "—" if v.paper_effect is None else f"{100 * v.paper_effect:+.1f}"
    bias = "; ".join(t.describe() for t in v.bias) or "not checked"
    name = v.name.replace("|", "\\|")
    return (f"| {name} | {paper} | {v.effect.fmt()} | {v.p_holm:.3g} | {_pts(v.mde)} | {_pts(v.mde_holds)} | "
            f"{v.utility.fmt()} | {bias} | {seeds_cell(v)} | "
            f"**{v.verdict}** ({v.reason}; {v.effect.n_seeds} seeds) |")


VERDICT_HEADER = ["| claim | paper effect | our effect [95% CI] | Holm p | MDE | holds-MDE | utility change [95% CI] | "
                  "baseline bias vs null | seeds needed | verdict |", "|---|---|---|---|---|---|---|---|---|---|"]
