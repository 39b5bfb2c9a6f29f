"""The paired-seed statistics and verdict rule of the fairness benchmarks (benchmarks/_stats.py)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import _stats as S  # noqa: E402


def test_t_interval_matches_the_textbook_formula():
    x = [0.10, 0.14, 0.12, 0.18, 0.11]
    iv = S.t_interval(x)
    mean, sd = np.mean(x), np.std(x, ddof=1)
    half = 2.7764451051977987 * sd / math.sqrt(5)  # t_{0.975, 4}
    assert iv.mean == pytest.approx(mean)
    assert iv.lo == pytest.approx(mean - half) and iv.hi == pytest.approx(mean + half)
    one = S.t_interval([0.3])
    assert one.lo == -math.inf and one.hi == math.inf and not one.excludes_zero()
    with pytest.raises(ValueError):
        S.t_interval([])
    with pytest.raises(ValueError):
        S.t_interval([0.1, float("nan")])


def test_paired_difference_uses_per_seed_differences():
    base = [0.50, 0.60, 0.70]
    meth = [0.48, 0.581, 0.679]  # a constant-ish drop hidden by a large between-seed spread
    iv = S.paired_difference(meth, base)
    assert iv.mean == pytest.approx(-0.02)
    assert iv.hi < 0  # pairing removes the seed effect
    assert not (S.t_interval(meth).hi < S.t_interval(base).lo)  # unpaired intervals overlap
    with pytest.raises(ValueError, match="paired"):
        S.paired_difference([0.1], [0.1, 0.2])


BASE_GAP = [0.10, 0.12, 0.11, 0.13]
BASE_ACC = [0.80, 0.81, 0.79, 0.80]


def test_holds():
    v = S.judge(BASE_GAP, [0.05, 0.06, 0.05, 0.07], BASE_ACC, [0.79, 0.80, 0.79, 0.79], constant_acc=0.6,
                method_majority_share=[0.6] * 4)
    assert v.verdict == "holds" and v.effect.hi < 0


def test_does_not_hold_when_accuracy_falls_or_gap_does_not():
    v = S.judge(BASE_GAP, [0.05, 0.06, 0.05, 0.07], BASE_ACC, [0.70, 0.72, 0.71, 0.70], constant_acc=0.6)
    assert v.verdict == "does not hold" and "accuracy" in v.reason
    v = S.judge(BASE_GAP, [0.11, 0.10, 0.13, 0.12], BASE_ACC, BASE_ACC, constant_acc=0.6)
    assert v.verdict == "does not hold" and "gap" in v.reason


def test_untestable_when_no_gap_or_baseline_at_constant_level():
    v = S.judge([0.01, 0.0, 0.02, 0.0], [0.0] * 4, BASE_ACC, BASE_ACC, constant_acc=0.6)
    assert v.verdict == "untestable" and "includes 0" in v.reason
    v = S.judge(BASE_GAP, [0.0] * 4, [0.6, 0.61, 0.59, 0.6], [0.6] * 4, constant_acc=0.6)
    assert v.verdict == "untestable" and "constant" in v.reason
    v = S.judge([0.1], [0.0], [0.9], [0.9], constant_acc=0.5)  # one seed: nothing is testable
    assert v.verdict == "untestable"
    # leakage: the gap is measured above chance
    v = S.judge([0.51, 0.50, 0.52, 0.49], [0.5] * 4, BASE_ACC, BASE_ACC, constant_acc=0.6, reference=0.5)
    assert v.verdict == "untestable"


def test_untestable_when_the_baseline_is_nearly_constant():
    """A baseline that gives one class to 98% of rows has small gaps because it hardly discriminates at all."""
    v = S.judge(BASE_GAP, [0.0] * 4, BASE_ACC, BASE_ACC, constant_acc=0.6, baseline_majority_share=[0.98] * 4)
    assert v.verdict == "untestable" and "baseline predicts one class for 98%" in v.reason
    v = S.judge(BASE_GAP, [0.0] * 4, BASE_ACC, BASE_ACC, constant_acc=0.6, baseline_majority_share=[0.6] * 4)
    assert v.verdict == "holds"


def test_degenerate_method():
    v = S.judge(BASE_GAP, [0.0] * 4, BASE_ACC, [0.79] * 4, constant_acc=0.6, method_majority_share=[0.99] * 4)
    assert v.verdict == "degenerate"
    assert S.majority_share([1, 1, 1, 0]) == pytest.approx(0.75)


def test_summary_table_row():
    v = S.judge(BASE_GAP, [0.05, 0.06, 0.05, 0.07], BASE_ACC, [0.79, 0.80, 0.79, 0.79], constant_acc=0.6)
    rows = S.summary_table([("M lowers the gap", "toy", v)])
    assert rows[0].startswith("| claim | protocol | baseline gap | method effect ± 95% CI | accuracy change")
    assert rows[2].startswith("| M lowers the gap | toy | 11.5 ± ") and "**holds**" in rows[2]
    assert "-5.8 ± " in rows[2]


def test_summary_row_escapes_pipes():
    v = S.judge([0.1], [0.0], [0.9], [0.9], constant_acc=0.5)
    row = S.summary_row("lowers |d|", "p", v)
    assert row.count(" | ") == 5 and "lowers \\|d\\|" in row
