"""A claim's evidence and where it comes from: :class:`ClaimEvidence` (what :func:`faircl.eval.verdicts.decide`
decides a claim from), the degenerate-classifier check (:func:`degenerate_seed`), and the evidence built from per-row
predictions (:func:`claim_from_predictions`) or a leakage probe's accuracy (:func:`leakage_bias_tests`). All values are
fractions (0.045 = 4.5 points)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from faircl.eval.statistics import (BiasTest, Effect, confusion_from_rows, gap_from_confusion, leakage_null,
                                    paired_bootstrap, permutation_null)

__all__ = ["ClaimEvidence", "SplitPredictions", "claim_from_predictions", "degenerate_by_seed", "degenerate_seed",
           "leakage_bias_tests"]

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
            tested or has no null. Such a claim never reads *reproduces* or *lowers, less than target* (it reads
            *inconclusive*), and its reason starts with this text.
        smallest_effect: the protocol's smallest effect of interest (a reduction's size, sign ignored; ``None``:
            none). The target of a claim without a paper effect, and the band of *no change*.
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
        interest, else ``None`` (:func:`decide` then uses the utility margin)."""
        for e in (self.paper_effect, self.smallest_effect):
            if e is not None and math.isfinite(e) and e != 0:
                return -abs(float(e))
        return None



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
