"""Triplet miners and fairness-driven negative weights against literal loops and their sampling distributions."""

from __future__ import annotations

import math

import pytest
import torch
from scipy.stats import chisquare

from faircl.mining import (
    all_triplets,
    distance_weighted_triplets,
    fair_negative_weights,
    nearest_cluster_positive,
    pairwise_distances,
    semihard_triplets,
)


def _unit(z):
    return [[v / math.sqrt(sum(x * x for x in r)) for v in r] for r in z.double().tolist()]


def _dist(u, v):
    return math.sqrt(sum((a - b) ** 2 for a, b in zip(u, v)))


def test_pairwise_distances_and_all_triplets_match_loops():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(7, 3, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 1, 1, -1, 2])
    u = _unit(z)
    d = pairwise_distances(z)
    for i in range(7):
        for j in range(7):
            assert d[i, j].item() == pytest.approx(_dist(u[i], u[j]) if i != j else 0.0, abs=1e-7)
    got = set(zip(*(t.tolist() for t in all_triplets(y))))
    yl = y.tolist()
    expected = {
        (a, p, n)
        for a in range(7)
        for p in range(7)
        for n in range(7)
        if a != p and yl[a] == yl[p] >= 0 and yl[n] >= 0 and yl[n] != yl[a]
    }
    assert got == expected


def _point_at_distance(dim: int, d: float, axis: int) -> torch.Tensor:
    """A unit vector at Euclidean distance d from e_0, bent towards e_axis."""
    cos = 1.0 - d * d / 2.0
    v = torch.zeros(dim, dtype=torch.float64)
    v[0] = cos
    v[axis] = math.sqrt(max(0.0, 1.0 - cos * cos))
    return v


def test_distance_weighted_sampling_matches_inverse_density():
    dim = 8
    neg_d = [0.3, 0.55, 0.7, 0.85, 1.0, 1.15, 1.3, 1.5]  # 0.3 is clamped to 0.5; 1.5 is beyond the 1.4 cut
    anchor = torch.zeros(dim, dtype=torch.float64)
    anchor[0] = 1.0
    # 45 copies of the anchor: every ordered pair among them is an anchor-positive pair drawing from the same law
    copies = 45
    negatives = torch.stack([_point_at_distance(dim, d, 1 + i % (dim - 1)) for i, d in enumerate(neg_d)])
    z = torch.cat([anchor.repeat(copies, 1), negatives])
    y = torch.tensor([0] * copies + [1] * len(neg_d))
    # expected P(n | a) ∝ q⁻¹(max(d, 0.5)) for d < 1.4, with q(d) ∝ d^{n−2} (1 − d²/4)^{(n−3)/2}
    weights = []
    for d in neg_d:
        dc = max(d, 0.5)
        weights.append(0.0 if d >= 1.4 else dc ** (2 - dim) * (1 - dc * dc / 4) ** (-(dim - 3) / 2))
    total = sum(weights)
    expected = [w / total for w in weights]

    counts = torch.zeros(len(neg_d))
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        a, p, n = distance_weighted_triplets(z, y, generator=gen)
        counts += torch.bincount(n[a < copies] - copies, minlength=len(neg_d)).double()
    assert counts.sum() == 5 * copies * (copies - 1)
    assert counts[-1] == 0  # beyond the cut
    observed = counts[:-1].numpy()
    exp_counts = [e * observed.sum() for e in expected[:-1]]
    assert chisquare(observed, exp_counts).pvalue > 1e-3
    # a miner drawing uniformly (the wrong distribution) would be rejected by the same test
    assert chisquare(observed, [observed.sum() / len(observed)] * len(observed)).pvalue < 1e-6


def test_distance_weighted_structure_and_fallbacks():
    g = torch.Generator().manual_seed(2)
    z = torch.randn(12, 16, generator=g)
    y = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2, -1, -1, 3])
    a, p, n = distance_weighted_triplets(z, y, generator=g)
    assert len(a) == 3 * 3 * 2  # every ordered anchor-positive pair of the three full classes
    assert (y[a] == y[p]).all() and (a != p).all() and (y[n] != y[a]).all() and (y[a] >= 0).all() and (y[n] >= 0).all()
    a1, p1, n1 = distance_weighted_triplets(z, y, positives="one", generator=g)
    assert len(a1) == 9 and len(set(a1.tolist())) == 9
    # negatives all beyond the cut: fall back to uniform over the negatives (never a positive)
    far = torch.tensor([[1.0, 0.0], [1.0, 0.01], [-1.0, 0.0], [-1.0, -0.01]])
    a2, p2, n2 = distance_weighted_triplets(far, torch.tensor([0, 0, 1, 1]), generator=g)
    assert len(a2) == 4 and (torch.tensor([0, 0, 1, 1])[n2] != torch.tensor([0, 0, 1, 1])[a2]).all()
    empty = distance_weighted_triplets(z, torch.zeros(12, dtype=torch.long))
    assert all(t.numel() == 0 for t in empty)
    with pytest.raises(ValueError, match="positives"):
        distance_weighted_triplets(z, y, positives="some")


def test_semihard_matches_literal_loop():
    g = torch.Generator().manual_seed(3)
    z = torch.randn(14, 4, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (14,), generator=g)
    u = _unit(z)
    yl = y.tolist()
    for margin in (None, 0.3):
        expected = set()
        for a in range(14):
            for p in range(14):
                if a == p or yl[a] != yl[p]:
                    continue
                dap = _dist(u[a], u[p])
                cands = [
                    (_dist(u[a], u[n]), n)
                    for n in range(14)
                    if yl[n] != yl[a] and _dist(u[a], u[n]) > dap and (margin is None or _dist(u[a], u[n]) < dap + margin)
                ]
                if cands:
                    expected.add((a, p, min(cands)[1]))
        got = set(zip(*(t.tolist() for t in semihard_triplets(z, y, margin=margin))))
        assert got == expected
    assert all(t.numel() == 0 for t in semihard_triplets(z, torch.arange(14)))


@pytest.mark.parametrize("given_freq", [False, True])
def test_fair_negative_weights_match_algorithm_1(given_freq):
    g = torch.Generator().manual_seed(4)
    z = torch.randn(10, 3, generator=g, dtype=torch.float64)
    clusters = torch.tensor([0, 0, 0, 0, 1, 1, 2, 2, 2, 0])
    k, eps = 4, 0.1  # cluster 3 is absent from the batch
    freq = [0.5, 0.1, 0.3, 0.1] if given_freq else [c / 10 for c in (5, 2, 3, 0)]
    got = fair_negative_weights(z, clusters, num_clusters=k, epsilon=eps, cluster_freq=torch.tensor(freq) if given_freq else None)
    u = _unit(z)
    cl = clusters.tolist()
    w = [max(0.0, 1 / k - freq[c]) + eps for c in range(k)]
    for i in range(10):
        others = [c for c in range(k) if c != cl[i] and c in cl]
        norm = sum(w[c] for c in others)
        for j in range(10):
            if cl[j] == cl[i]:
                expected = 0.0
            else:
                members = [m for m in range(10) if cl[m] == cl[j]]
                expected = w[cl[j]] / norm * _dist(u[i], u[j]) / sum(_dist(u[i], u[m]) for m in members)
            assert got[i, j].item() == pytest.approx(expected, abs=1e-9)
        assert got[i].sum().item() == pytest.approx(1.0)
    # one cluster only: no negatives at all
    assert fair_negative_weights(z, torch.zeros(10, dtype=torch.long)).abs().sum() == 0
    with pytest.raises(ValueError, match="num_clusters"):
        fair_negative_weights(z, clusters, num_clusters=2)
    with pytest.raises(ValueError, match="cluster_freq"):
        fair_negative_weights(z, clusters, num_clusters=4, cluster_freq=torch.ones(3))


def test_nearest_cluster_positive_matches_loop():
    g = torch.Generator().manual_seed(5)
    z = torch.randn(9, 3, generator=g, dtype=torch.float64)
    clusters = torch.tensor([0, 0, 0, 1, 1, 2, -1, 0, 1])
    u = _unit(z)
    cl = clusters.tolist()
    got = nearest_cluster_positive(z, clusters).tolist()
    for i in range(9):
        cands = [(_dist(u[i], u[j]), j) for j in range(9) if j != i and cl[j] == cl[i] and cl[i] >= 0]
        assert got[i] == (min(cands)[1] if cands else -1)


def test_miners_reject_bad_input():
    with pytest.raises(ValueError, match=r"\[B, d\]"):
        semihard_triplets(torch.randn(4), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="labels"):
        distance_weighted_triplets(torch.randn(4, 2), torch.zeros(5, dtype=torch.long))
