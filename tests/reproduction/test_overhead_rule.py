"""The overhead benchmark's per-method target (``benchmarks/performance/overhead.py``): the machinery's excess over a method's own
cost is taken per round from four timings of the same round, and a sign test over the rounds decides it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "performance"))
import _timing as T
import overhead


def _t(name: str, cpu: list[float]) -> T.Timing:
    return T.Timing(name, wall=list(cpu), cpu=list(cpu), load=[0.1], runnable=[1], cores=2, threads=1)


def _rows(plain, ce, pm, fm):
    res = {"timings": {"plain loop": _t("plain loop", plain), "faircl CE": _t("faircl CE", ce),
                       "plain M": _t("plain M", pm), "faircl M": _t("faircl M", fm)}}
    return {r["contender"]: r for r in overhead.encoder_rows(res, ["CE", "M"])}


def test_excess_is_a_same_round_difference_of_differences():
    ex = overhead.excess_by_round(_t("f", [5, 6]), _t("c", [1, 2]), _t("p", [3, 3]), _t("l", [0.5, 1]))
    assert ex == [(5 - 1) - (3 - 0.5), (6 - 2) - (3 - 1)]


def test_planted_machinery_cost_is_found_and_pure_noise_is_not():
    rng = np.random.default_rng(0)
    plain = 0.14 + rng.normal(0, 0.003, 5)
    ce = plain + 0.01
    pm = 0.8 + rng.normal(0, 0.03, 5)
    planted = _rows(plain, ce, pm, pm + 0.01 + 0.02)  # 20 ms more than CE's machinery in every round
    assert planted["M"]["met"] is False
    assert min(planted["M"]["excess"]) > 0
    # the same method with the same machinery cost as CE, timed with round-to-round noise larger than 20 ms
    noisy = _rows(plain, ce, pm, pm + 0.01 + np.array([0.03, -0.04, 0.01, -0.02, 0.02]))
    assert noisy["M"]["met"] in (True, "within noise")
    cheaper = _rows(plain, ce, pm, pm + 0.01 - 0.005)
    assert cheaper["M"]["met"] is True
    assert bool(planted["CE"]["met"]) and planted["CE"]["x_plain"] < 1.2


def test_excess_verdict_rule():
    assert overhead.excess_verdict([-0.01, 0.02, -0.03]) is True
    assert overhead.excess_verdict([0.01, 0.02, -0.03]) == "within noise"
    assert overhead.excess_verdict([0.01, 0.02, 0.001]) is False
