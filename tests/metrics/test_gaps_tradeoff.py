"""Gap reducers, Tradeoff, DTO and Pareto fronts on hand-worked examples and brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from faircl.metrics import gaps, tradeoff


def test_majority_minority_uses_sizes_and_skips_absent():
    values = torch.tensor([0.9, 0.5, float("nan"), 0.7])
    sizes = torch.tensor([10, 50, 0, 5])
    assert gaps.majority_minority(values, sizes).item() == pytest.approx(0.5 - 0.7)


def test_worst_vs_rest_weighted_and_direction():
    values = torch.tensor([0.9, 0.5, 0.7])
    sizes = torch.tensor([10, 30, 30])
    rest = (0.9 * 10 + 0.7 * 30) / 40
    assert gaps.worst_vs_rest(values, sizes).item() == pytest.approx(rest - 0.5)
    assert gaps.worst_vs_rest(values, sizes, weighted=False).item() == pytest.approx(0.8 - 0.5)
    rest_low = (0.5 * 30 + 0.7 * 30) / 60
    assert gaps.worst_vs_rest(values, sizes, higher_is_better=False).item() == pytest.approx(0.9 - rest_low)


def test_top_vs_bottom_half_orders():
    values = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])   # e.g. six skin tones, lightest first
    sizes = torch.ones(6)
    assert gaps.top_vs_bottom_half(values, sizes).item() == pytest.approx(0.2 - 0.5)
    assert gaps.top_vs_bottom_half(values, sizes, by="value").item() == pytest.approx(0.5 - 0.2)
    assert gaps.top_vs_bottom_half(values, sizes, by=[5, 4, 3, 2, 1, 0]).item() == pytest.approx(0.3)
    # odd number of present groups: the middle one is left out
    odd = torch.tensor([1.0, 5.0, 3.0])
    assert gaps.top_vs_bottom_half(odd, torch.ones(3)).item() == pytest.approx(-2.0)


def test_gaps_undefined_with_fewer_than_two_groups():
    one = torch.tensor([0.5, float("nan")])
    sizes = torch.tensor([3, 0])
    for fn in (gaps.majority_minority, gaps.worst_vs_rest, gaps.top_vs_bottom_half):
        assert math.isnan(fn(one, sizes).item())
    with pytest.raises(ValueError, match="same shape"):
        gaps.majority_minority(torch.zeros(2), torch.zeros(3))
    with pytest.raises(ValueError, match="permutation"):
        gaps.top_vs_bottom_half(torch.zeros(3), torch.ones(3), by=[0, 0, 1])
    assert set(gaps.all_gaps(torch.tensor([0.1, 0.2]), torch.tensor([1, 2]))) == {
        "gap_majority_minority", "gap_worst_vs_rest", "gap_top_vs_bottom_half"}


def test_tradeoff_score_formula():
    rows = [
        {"accuracy": 0.80, "gap": 0.10, "leakage_h": 0.60, "leakage_y": 0.70},
        {"accuracy": 0.70, "gap": 0.05, "leakage_h": 0.55, "leakage_y": 0.60},
    ]
    acc = np.array([0.8, 0.7]) / 0.8
    fair = np.array([0.9, 0.95]) / 0.95
    lh = np.array([0.4, 0.45]) / 0.45
    ly = np.array([0.3, 0.4]) / 0.4
    np.testing.assert_allclose(tradeoff.tradeoff_score(rows), acc / 2 + fair / 4 + lh / 8 + ly / 8)
    best = [{"accuracy": 0.9, "gap": 0.0, "leakage_h": 0.5, "leakage_y": 0.5}] + rows
    assert tradeoff.tradeoff_score(best)[0] == pytest.approx(1.0)


def test_tradeoff_score_errors():
    with pytest.raises(ValueError, match="row 0 has no 'gap'"):
        tradeoff.tradeoff_score([{"accuracy": 0.5, "leakage_h": 0.5, "leakage_y": 0.5}])
    with pytest.raises(ValueError, match=r"fractions in \[0, 1\].*83"):
        tradeoff.tradeoff_score([{"accuracy": 83.0, "gap": 0.1, "leakage_h": 0.5, "leakage_y": 0.5}])


def test_dto_matches_definition():
    perf, fair = [0.8, 0.9, 0.85], [0.95, 0.80, 0.9]
    out = tradeoff.dto(perf, fair)
    for i in range(3):
        assert out[i] == pytest.approx(math.hypot(perf[i] / 0.9 - 1, fair[i] / 0.95 - 1))
    assert tradeoff.dto([1.0], [1.0], utopia_performance=1.0, utopia_fairness=1.0)[0] == 0.0
    with pytest.raises(ValueError, match="equal length"):
        tradeoff.dto([0.5], [0.5, 0.6])


@pytest.mark.parametrize("seed", range(4))
def test_pareto_front_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    pts = rng.integers(0, 5, size=(25, 2)).astype(float)     # integer grid: ties and duplicates happen
    maximize = [True, False]                                  # accuracy up, leakage down
    mask = tradeoff.pareto_front(pts, maximize)
    for i, j in itertools.product(range(25), repeat=2):
        better_eq = pts[j, 0] >= pts[i, 0] and pts[j, 1] <= pts[i, 1]
        strictly = pts[j, 0] > pts[i, 0] or pts[j, 1] < pts[i, 1]
        if better_eq and strictly:
            assert not mask[i]
    for i in np.flatnonzero(~mask):
        assert any(pts[j, 0] >= pts[i, 0] and pts[j, 1] <= pts[i, 1] and tuple(pts[j]) != tuple(pts[i])
                   for j in range(25))
    with pytest.raises(ValueError, match="NaN at row 0"):
        tradeoff.pareto_front([[float("nan"), 1.0]])
