"""benchmarks/_stats.py: the results files' adapter to faircl.eval.compare (one implementation of the rule)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import _stats as S  # noqa: E402

from faircl.eval import compare as C  # noqa: E402


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


def test_paired_difference_is_the_library_s_paired_t_test():
    base, meth = [0.50, 0.60, 0.70], [0.48, 0.581, 0.679]
    iv = S.paired_difference(meth, base)
    d = np.subtract(meth, base)
    assert iv.mean == pytest.approx(-0.02) and iv.hi < 0
    assert (iv.lo, iv.hi) == pytest.approx(stats.t.interval(0.95, 2, loc=d.mean(), scale=stats.sem(d)))
    with pytest.raises(ValueError, match="paired"):
        S.paired_difference([0.1], [0.1, 0.2])


BASE = [0.30, 0.28, 0.35, 0.31, 0.29]
UTIL = [0.80, 0.81, 0.79, 0.80, 0.82]


def test_summary_table_decides_the_family_together():
    strong = S.summary_claim("strong", BASE, [0.20, 0.18, 0.25, 0.21, 0.19], UTIL, UTIL, paper_effect=-0.045)
    border = S.summary_claim("border", BASE, [0.28, 0.27, 0.31, 0.29, 0.28], UTIL, UTIL, paper_effect=-0.045)
    alone = S.summary_table([("toy", border)])
    assert alone[0] == S.SUMMARY_HEADER[0] and alone[0].startswith("| claim | protocol | paper effect |")
    assert "**holds**" in alone[2] and "| -4.5 |" in alone[2]
    rows = S.summary_table([("toy", strong), ("toy", border), ("toy", S.summary_claim("x", BASE, BASE, UTIL, UTIL)),
                            ("toy", S.summary_claim("y", BASE, BASE, UTIL, UTIL))])
    assert "**holds**" in rows[2] and "**holds**" not in rows[3]  # Holm over the four claims
    p = stats.ttest_rel([0.28, 0.27, 0.31, 0.29, 0.28], BASE).pvalue
    assert f"| {min(1, 3 * p):.3g} |" in rows[3] or f"| {min(1, 4 * p):.3g} |" in rows[3]


def test_rows_escape_pipes_and_say_when_bias_is_not_checked():
    row = S.summary_table([("p|q", S.summary_claim("lowers |d|", BASE, BASE, UTIL, UTIL))])[2]
    assert "lowers \\|d\\|" in row and "p\\|q" in row and "not checked" in row
    assert row.count(" | ") == 9  # ten cells: the holds-MDE beside the MDE


def test_bias_and_degenerate_reach_the_verdict():
    null = C.BiasTest(0.05, 0.08, 0.04, 0.3)
    v = S.summary_table([("t", S.summary_claim("c", BASE, [0.1] * 5, UTIL, UTIL, bias=[null]))])[2]
    assert "**untestable**" in v and "test 5.0 (null 95%: 8.0)" in v
    deg = S.summary_claim("c", BASE, [0.1] * 5, UTIL, UTIL, method_degenerate=["constant"] * 5)
    assert "**degenerate**" in S.summary_table([("t", deg)])[2]
    assert S.majority_share([1, 1, 1, 0]) == pytest.approx(0.75)
