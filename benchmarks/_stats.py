"""Paired seed statistics and the verdict rule shared by the fairness benchmarks.

A claim "method M lowers the gap (or leakage) of baseline B at little accuracy cost" is judged on runs paired by
seed (same seed = same data order and initialisation for both):

* **untestable** — the baseline shows no gap to remove (its gap's 95% t-interval, measured above ``reference``,
  includes 0), it is no better than a constant predictor (its accuracy's 95% t-interval does not lie above the
  majority-class accuracy), or it is itself (almost) a constant predictor (mean share of its most predicted class
  ≥ ``degenerate_share``): the small gaps of a near-constant baseline are not a bias level a method could be said
  to lower or raise. With a single seed every interval is unbounded, so nothing is testable.
* **degenerate** — the method predicts (almost) a single class (mean share of its most predicted class ≥
  ``degenerate_share``, default 0.95): a "fair" constant predictor says nothing about the claim.
* **holds** — the paired gap difference (method − baseline) has a 95% t-interval entirely below 0 and the mean
  accuracy change is ≥ −``max_acc_drop`` (default 2 points).
* **does not hold** — otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats

VERDICTS = ("untestable", "degenerate", "holds", "does not hold")


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values with a two-sided ``level`` t-interval ``[lo, hi]`` (unbounded for ``n < 2``)."""

    mean: float
    lo: float
    hi: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2

    def excludes_zero(self) -> bool:
        return self.lo > 0 or self.hi < 0

    def fmt(self, scale: float = 100.0, digits: int = 1) -> str:
        """``"mean ± half"`` (×``scale``), ``± ∞`` for a single value."""
        if not math.isfinite(self.half_width):
            return f"{scale * self.mean:+.{digits}f} ± ∞"
        return f"{scale * self.mean:+.{digits}f} ± {scale * self.half_width:.{digits}f}"


def t_interval(values: Sequence[float], level: float = 0.95) -> Interval:
    """Mean and Student-t confidence interval of ``values`` (NaNs are an error: a run that failed must be said)."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or len(x) == 0:
        raise ValueError(f"need a non-empty 1-d sequence of values, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"values must be finite, got {x.tolist()}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    n, mean = len(x), float(x.mean())
    if n < 2:
        return Interval(mean, -math.inf, math.inf, n)
    sem = float(x.std(ddof=1)) / math.sqrt(n)
    half = float(stats.t.ppf(0.5 + level / 2, df=n - 1)) * sem
    return Interval(mean, mean - half, mean + half, n)


def paired_difference(method: Sequence[float], baseline: Sequence[float], level: float = 0.95) -> Interval:
    """t-interval of the per-seed differences ``method[s] − baseline[s]`` (the two lists are paired by seed)."""
    if len(method) != len(baseline):
        raise ValueError(f"paired runs need as many method as baseline values, got {len(method)} and {len(baseline)}")
    return t_interval(np.asarray(method, float) - np.asarray(baseline, float), level)


@dataclass(frozen=True)
class Verdict:
    verdict: str
    baseline_gap: Interval
    effect: Interval
    accuracy_change: Interval
    reason: str


def judge(
    baseline_gap: Sequence[float],
    method_gap: Sequence[float],
    baseline_acc: Sequence[float],
    method_acc: Sequence[float],
    constant_acc: float,
    method_majority_share: Sequence[float] | None = None,
    reference: float = 0.0,
    max_acc_drop: float = 0.02,
    degenerate_share: float = 0.95,
    level: float = 0.95,
    baseline_majority_share: Sequence[float] | None = None,
) -> Verdict:
    """Apply the verdict rule (module docstring) to seed-paired runs.

    Args:
        baseline_gap, method_gap: the fairness gap (or leakage) of each seed, fractions (not points).
        baseline_acc, method_acc: the accuracy of each seed.
        constant_acc: accuracy of a constant (majority-class) predictor on the same test set.
        method_majority_share: per seed, the share of the method's test predictions that fall in its most
            predicted class (``None``: not checked).
        baseline_majority_share: the same for the baseline (``None``: not checked).
        reference: value meaning "no gap" (0 for gaps; chance accuracy for leakage).
        max_acc_drop: largest accuracy loss (fraction) for "holds".
        degenerate_share: majority-prediction share at or above which the method is degenerate.
        level: confidence level of the intervals.
    """
    base = t_interval(np.asarray(baseline_gap, float) - reference, level)
    effect = paired_difference(method_gap, baseline_gap, level)
    acc = paired_difference(method_acc, baseline_acc, level)
    base_acc = t_interval(baseline_acc, level)
    if not base.lo > 0:
        return Verdict("untestable", base, effect, acc, "the baseline's gap interval includes 0")
    if not base_acc.lo > constant_acc:
        return Verdict("untestable", base, effect, acc,
                       f"the baseline is not above a constant predictor ({100 * constant_acc:.1f}% accuracy)")
    if baseline_majority_share is not None and float(np.mean(baseline_majority_share)) >= degenerate_share:
        return Verdict("untestable", base, effect, acc,
                       f"the baseline predicts one class for {100 * float(np.mean(baseline_majority_share)):.0f}% "
                       "of rows")
    if method_majority_share is not None and float(np.mean(method_majority_share)) >= degenerate_share:
        return Verdict("degenerate", base, effect, acc,
                       f"the method predicts one class for {100 * float(np.mean(method_majority_share)):.0f}% of rows")
    if effect.hi < 0 and acc.mean >= -max_acc_drop:
        return Verdict("holds", base, effect, acc, "gap falls (interval excludes 0), accuracy within the tolerance")
    why = "the gap's change includes 0 or is positive" if not effect.hi < 0 else (
        f"accuracy falls by more than {100 * max_acc_drop:.0f} points")
    return Verdict("does not hold", base, effect, acc, why)


SUMMARY_HEADER = ["| claim | protocol | baseline gap | method effect ± 95% CI | accuracy change | verdict |",
                  "|---|---|---|---|---|---|"]


def summary_row(claim: str, protocol: str, v: Verdict) -> str:
    """One row of the results files' summary table (values in points, ×100)."""
    claim, protocol = claim.replace("|", "\\|"), protocol.replace("|", "\\|")  # keep the table's columns
    base = v.baseline_gap
    base_txt = f"{100 * base.mean:.1f}" + ("" if not math.isfinite(base.half_width) else
                                          f" ± {100 * base.half_width:.1f}")
    return (f"| {claim} | {protocol} | {base_txt} | {v.effect.fmt()} | {v.accuracy_change.fmt()} | "
            f"**{v.verdict}** ({v.reason}; n = {v.effect.n}) |")


def summary_table(rows: list[tuple[str, str, Verdict]]) -> list[str]:
    """The markdown summary table for the top of a results file."""
    return SUMMARY_HEADER + [summary_row(c, p, v) for c, p, v in rows]


def majority_share(predictions: Sequence[int]) -> float:
    """Share of the most frequent predicted class."""
    p = np.asarray(predictions)
    if p.size == 0:
        raise ValueError("no predictions")
    return float(np.bincount(p.astype(np.int64)).max() / p.size)


__all__ = ["Interval", "VERDICTS", "Verdict", "judge", "majority_share", "paired_difference", "summary_row",
           "summary_table", "t_interval"]
