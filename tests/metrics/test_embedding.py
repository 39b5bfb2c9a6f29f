"""Representation metrics against literal loops, pytorch-metric-learning and scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pytorch_metric_learning.distances import LpDistance
from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator
from pytorch_metric_learning.utils.inference import CustomKNN
from scipy.stats import entropy
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score

from faircl.metrics import CCEDGap, ClusterBalance, GroupNMI, GroupRecallAtK, GroupUniformityKL
from faircl.metrics.embedding import cced, cluster_balance, group_mean, knn_hits, nmi, uniformity_kl


def _embeddings(n, d=8, num_classes=4, num_groups=3, seed=0, unknown=0.1):
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(num_classes, (n,), generator=gen)
    g = torch.randint(num_groups, (n,), generator=gen)
    g[torch.rand(n, generator=gen) < unknown] = -1
    centers = torch.randn(num_classes, d, generator=gen)
    # groups differ in how noisy their embeddings are, so per-group scores differ
    noise = 0.8 + 0.6 * g.clamp_min(0).float().unsqueeze(1)
    x = centers[y] + noise * torch.randn(n, d, generator=gen)
    return x, y, g


def literal_hits(x: np.ndarray, y: np.ndarray, k: int, distance: str) -> np.ndarray:
    """For each i: the k nearest j != i (sorted distance), hit if one has y_j == y_i."""
    if distance == "cosine":
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
    out = np.zeros(len(x))
    for i in range(len(x)):
        dist = np.linalg.norm(x - x[i], axis=1)
        dist[i] = np.inf
        nearest = np.argsort(dist, kind="stable")[:k]
        out[i] = float(any(y[j] == y[i] for j in nearest))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Recall@k
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("distance", ["euclidean", "cosine"])
def test_knn_hits_match_literal_loop_with_chunking(k, distance):
    x, y, _ = _embeddings(150, seed=k)
    hits = knn_hits(x.double(), y, k=k, distance=distance, chunk_size=17)
    np.testing.assert_array_equal(hits.numpy(), literal_hits(x.double().numpy(), y.numpy(), k, distance))


def test_overall_recall_at_1_matches_pml_precision_at_1():
    x, y, g = _embeddings(400, seed=3)
    calc = AccuracyCalculator(include=("precision_at_1",), knn_func=CustomKNN(LpDistance(normalize_embeddings=False)))
    ref = calc.get_accuracy(x, y)["precision_at_1"]
    m = GroupRecallAtK(1, 3)
    for idx in torch.arange(400).split(64):
        m.update(x[idx], y[idx], g[idx])
    assert m.compute()["recall"].item() == pytest.approx(ref, abs=1e-6)


def test_group_recall_is_per_group_mean_of_literal_hits():
    x, y, g = _embeddings(200, num_groups=5, seed=4)
    g[g == 4] = 3  # group 4 absent from the whole split
    m = GroupRecallAtK(2, 5, chunk_size=32)
    m.update(x, y, g)
    out = m.compute()
    hits = literal_hits(x.numpy().astype(np.float64), y.numpy(), 2, "euclidean")
    for a in range(4):
        assert out["group_recall"][a].item() == pytest.approx(hits[g.numpy() == a].mean(), abs=1e-12)
        assert out["group_size"][a].item() == int((g == a).sum())
    assert math.isnan(out["group_recall"][4].item()) and out["group_size"][4].item() == 0
    assert out["recall"].item() == pytest.approx(hits.mean(), abs=1e-12)
    # gaps are the reducers applied to the per-group values
    sizes = out["group_size"].double()
    present = sizes > 0
    vals = out["group_recall"][present]
    major, minor = int(sizes[present].argmax()), int(sizes[present].argmin())
    assert out["gap_majority_minority"].item() == pytest.approx((vals[major] - vals[minor]).item())


def test_recall_half_precision_and_degenerate():
    x, y, g = _embeddings(120, seed=5)
    a, b = GroupRecallAtK(1, 3), GroupRecallAtK(1, 3)
    a.update(x.to(torch.bfloat16), y, g)
    b.update(x.to(torch.bfloat16).float(), y, g)
    torch.testing.assert_close(a.compute(), b.compute(), equal_nan=True)
    assert torch.isnan(knn_hits(torch.randn(1, 4), torch.tensor([0]))).all()
    # k larger than N - 1 is clamped: every other row is a neighbour
    assert knn_hits(torch.randn(3, 2), torch.tensor([0, 1, 0]), k=10).tolist() == [1.0, 0.0, 1.0]


def test_recall_bad_input():
    with pytest.raises(ValueError, match="embeddings must be a tensor of shape"):
        GroupRecallAtK(1, 2).update(torch.randn(4), torch.zeros(4, dtype=torch.long), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="groups contains 3 at row 0"):
        GroupRecallAtK(1, 2).update(torch.randn(2, 3), torch.zeros(2, dtype=torch.long), torch.tensor([3, 0]))
    with pytest.raises(ValueError, match="labels must have 3 rows"):
        GroupRecallAtK(1, 2).update(torch.randn(3, 3), torch.zeros(2, dtype=torch.long),
                                    torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="non-finite value at row 1"):
        GroupRecallAtK(1, 2).update(torch.tensor([[0.0], [float("nan")]]), torch.zeros(2, dtype=torch.long),
                                    torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="distance must be"):
        GroupRecallAtK(1, 2, distance="manhattan")


# ---------------------------------------------------------------------------------------------------------------
# NMI
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_nmi_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 80))
    a = rng.integers(0, rng.integers(1, 6), n)
    b = rng.integers(0, rng.integers(1, 6), n)
    assert nmi(torch.from_numpy(a), torch.from_numpy(b)).item() == pytest.approx(
        normalized_mutual_info_score(a, b), abs=1e-12)


@pytest.mark.parametrize("a,b", [([0, 0, 0], [1, 1, 1]), ([0, 1, 2], [0, 0, 0]), ([3], [5]), ([0, 1], [1, 0])])
def test_nmi_edge_cases_match_sklearn(a, b):
    assert nmi(torch.tensor(a), torch.tensor(b)).item() == pytest.approx(normalized_mutual_info_score(a, b))


def test_group_nmi_matches_sklearn_kmeans_and_nmi_on_separated_clusters():
    gen = torch.Generator().manual_seed(0)
    n, k = 300, 4
    blob = torch.randint(k, (n,), generator=gen)
    x = 10 * torch.eye(8)[blob] + 0.3 * torch.randn(n, 8, generator=gen)
    y = blob.clone()
    flip = torch.rand(n, generator=gen) < 0.25
    y[flip] = torch.randint(k, (int(flip.sum()),), generator=gen)
    g = torch.randint(-1, 3, (n,), generator=gen)
    m = GroupNMI(k, 4)  # group 3 absent
    for idx in torch.arange(n).split(50):
        m.update(x[idx], y[idx], g[idx])
    out = m.compute()
    clusters = KMeans(k, n_init=10, random_state=0).fit_predict(x.double().numpy())
    yn, gn = y.numpy(), g.numpy()
    assert out["nmi"].item() == pytest.approx(normalized_mutual_info_score(yn, clusters), abs=1e-12)
    for a in range(3):
        assert out["group_nmi"][a].item() == pytest.approx(
            normalized_mutual_info_score(yn[gn == a], clusters[gn == a]), abs=1e-12)
    assert math.isnan(out["group_nmi"][3].item())


def test_group_nmi_independent_of_row_order():
    x, y, g = _embeddings(240, seed=9)  # overlapping classes: the K-means result depends on initialisation
    perm = torch.randperm(240, generator=torch.Generator().manual_seed(1))
    a, b = GroupNMI(4, 3), GroupNMI(4, 3)
    a.update(x, y, g)
    b.update(x[perm], y[perm], g[perm])
    for key, value in a.compute().items():
        torch.testing.assert_close(value, b.compute()[key], equal_nan=True, msg=key)


# ---------------------------------------------------------------------------------------------------------------
# U_KL
# ---------------------------------------------------------------------------------------------------------------

def test_uniformity_kl_matches_literal_svd_kl():
    x, _, g = _embeddings(150, d=6, seed=2)
    s = np.linalg.svd(x.double().numpy(), compute_uv=False)
    ref = entropy(np.full(len(s), 1 / len(s)), s / s.sum())
    assert uniformity_kl(x).item() == pytest.approx(ref, rel=1e-9)
    m = GroupUniformityKL(4)
    m.update(x, g)
    out = m.compute()
    for a in range(3):
        sa = np.linalg.svd(x[g == a].double().numpy(), compute_uv=False)
        assert out["group_uniformity_kl"][a].item() == pytest.approx(
            entropy(np.full(len(sa), 1 / len(sa)), sa / sa.sum()), rel=1e-9)
    assert math.isnan(out["group_uniformity_kl"][3].item())
    # lower is better: the worst group is the one with the largest U_KL
    vals, sizes = out["group_uniformity_kl"][:3], out["group_size"][:3].double()
    w = int(vals.argmax())
    rest = [i for i in range(3) if i != w]
    ref_gap = vals[w] - (vals[rest] * sizes[rest]).sum() / sizes[rest].sum()
    assert out["gap_worst_vs_rest"].item() == pytest.approx(ref_gap.item(), rel=1e-12)


def test_uniformity_kl_degenerate():
    assert uniformity_kl(torch.ones(5, 3)).item() == math.inf          # rank 1: zero singular values
    assert math.isnan(uniformity_kl(torch.zeros(4, 3)).item())
    assert uniformity_kl(torch.eye(3)).item() == pytest.approx(0.0, abs=1e-12)  # perfectly flat spectrum

def _ulp_noise(x: torch.Tensor, seed: int) -> torch.Tensor:
    """``x * (1 + k·eps)`` with an integer ``k`` in -4..4 per entry: the round-off another CPU's kernels leave."""
    k = torch.randint(-4, 5, x.shape, generator=torch.Generator().manual_seed(seed)).to(x.dtype)
    return x * (1 + k * torch.finfo(x.dtype).eps)


def _planted_rank(n: int, d: int, spectrum: list[float], seed: int, dtype=torch.float64) -> torch.Tensor:
    """``U diag(spectrum) Vᵀ`` with random orthonormal ``U [n, r]``, ``V [d, r]``: its rank is ``len(spectrum)``."""
    gen = torch.Generator().manual_seed(seed)
    u = torch.linalg.qr(torch.randn(n, n, generator=gen, dtype=torch.float64))[0][:, :len(spectrum)]
    v = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))[0][:, :len(spectrum)]
    return (u * torch.tensor(spectrum, dtype=torch.float64)) @ v.T


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("seed", range(5))
def test_uniformity_kl_rank_decision_survives_round_off(dtype, seed):
    """Round-off of a few ulps on a rank-deficient matrix (entries scaled by ``1 + k·eps``, ``|k| <= 4``, or a
    spectrum rebuilt from random factors) leaves tiny non-zero singular values; the rank decision uses the
    tolerance ``max(N, D)·eps·σ_max`` and stays "rank deficient" (``+inf``). A full-rank matrix whose smallest
    singular value is far above that tolerance (nothing to find) stays finite and equals the literal KL."""
    ones = _ulp_noise(torch.ones(5, 3, dtype=dtype), seed)
    assert uniformity_kl(ones).item() == math.inf
    planted = _planted_rank(12, 6, [5.0, 2.0, 1.0], seed).to(dtype)       # rank 3 of 6
    assert uniformity_kl(_ulp_noise(planted, seed + 10)).item() == math.inf
    full = _planted_rank(12, 6, [5.0, 2.0, 1.0, 0.5, 0.1, 1e-3], seed).to(dtype)   # full rank
    x = _ulp_noise(full, seed + 20)
    got = uniformity_kl(x).item()
    s = np.linalg.svd(x.double().numpy(), compute_uv=False)
    assert math.isfinite(got) and got == pytest.approx(entropy(np.full(6, 1 / 6), s / s.sum()), rel=1e-9)



# ---------------------------------------------------------------------------------------------------------------
# cluster balance
# ---------------------------------------------------------------------------------------------------------------

def test_cluster_balance_on_known_clusters():
    gen = torch.Generator().manual_seed(0)
    sizes = [40, 30, 20, 10]
    blob = torch.cat([torch.full((s,), i) for i, s in enumerate(sizes)])
    x = 20 * torch.eye(5)[blob] + 0.1 * torch.randn(len(blob), 5, generator=gen)
    m = ClusterBalance(4)
    for idx in torch.randperm(len(blob), generator=gen).split(25):
        m.update(x[idx])
    out = m.compute()
    p = np.array(sizes) / 100
    assert out["dominance_ratio"].item() == pytest.approx(0.4)
    assert out["entropy"].item() == pytest.approx(-(p * np.log2(p)).sum(), rel=1e-12)
    centroids = [x[blob == i].double().mean(0) for i in range(4)]
    pair = [float((centroids[i] - centroids[j]).norm()) for i in range(4) for j in range(i + 1, 4)]
    assert out["separation"].item() == pytest.approx(sum(pair) / len(pair), rel=1e-9)


def test_cluster_balance_errors():
    with pytest.raises(ValueError, match="num_clusters must be >= 2"):
        ClusterBalance(1)
    with pytest.raises(ValueError, match="needs at least as many rows"):
        cluster_balance(torch.randn(3, 2), num_clusters=4)


# ---------------------------------------------------------------------------------------------------------------
# CCED
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("num_versions", [2, 3])
def test_cced_matches_literal_loop(num_versions):
    gen = torch.Generator().manual_seed(num_versions)
    attr = torch.randn(20, num_versions, 5, generator=gen)
    neutral = torch.randn(20, 5, generator=gen)
    ref = []
    for t in range(20):
        d = [float(np.linalg.norm(attr[t, i].double().numpy() - neutral[t].double().numpy()))
             for i in range(num_versions)]
        pairs = [abs(d[i] - d[j]) for i in range(num_versions) for j in range(i + 1, num_versions)]
        ref.append(sum(pairs) / len(pairs))
    np.testing.assert_allclose(cced(attr, neutral).numpy(), ref, rtol=1e-12)
    m = CCEDGap()
    m.update(attr[:7], neutral[:7])
    m.update(attr[7:], neutral[7:])
    assert m.compute().item() == pytest.approx(np.mean(ref), rel=1e-6)


@pytest.mark.filterwarnings("ignore:The ``compute`` method")
def test_cced_degenerate_and_errors():
    attr = torch.randn(4, 2, 3)
    assert cced(torch.stack([attr[:, 0], attr[:, 0]], 1), torch.randn(4, 3)).abs().max().item() <= 1e-6
    assert math.isnan(CCEDGap().compute().item())
    with pytest.raises(ValueError, match="A >= 2"):
        cced(torch.randn(4, 1, 3), torch.randn(4, 3))
    with pytest.raises(ValueError, match="neutral_embeddings must have shape"):
        cced(attr, torch.randn(5, 3))


def test_group_mean_skips_unknown():
    means, sizes = group_mean(torch.tensor([1.0, 0.0, 1.0, 1.0]), torch.tensor([0, 0, -1, 2]), 3)
    assert means[0].item() == 0.5 and math.isnan(means[1].item()) and means[2].item() == 1.0
    assert sizes.tolist() == [2, 0, 1]


# ---------------------------------------------------------------------------------------------------------------
# hypothesis: batching, row order and group labels do not change the representation metrics
# ---------------------------------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.integers(4, 40), st.integers(0, 10_000), st.lists(st.integers(0, 40), max_size=4))
def test_property_recall_and_uniformity_invariances(n, seed, cuts):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=gen, dtype=torch.float64)
    y = torch.randint(3, (n,), generator=gen)
    g = torch.randint(-1, 3, (n,), generator=gen)
    perm = torch.randperm(n, generator=gen)
    relabel = torch.tensor([2, 0, 1])
    g_relabelled = torch.where(g >= 0, relabel[g.clamp_min(0)], g)
    bounds = [0, *sorted(min(c, n) for c in cuts), n]

    def run(metric_cls, args_of, rows, groups):
        m = metric_cls()
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            m.update(*args_of(rows[lo:hi], groups[lo:hi]))
        return m.compute()

    def recall():
        return GroupRecallAtK(1, 3, chunk_size=7)

    base = run(recall, lambda r, gg: (x[r], y[r], gg), torch.arange(n), g)
    shuffled = run(recall, lambda r, gg: (x[r], y[r], gg), perm, g[perm])
    renamed = run(recall, lambda r, gg: (x[r], y[r], gg), torch.arange(n), g_relabelled)
    for key in base:
        torch.testing.assert_close(shuffled[key], base[key], equal_nan=True, msg=key)
    torch.testing.assert_close(renamed["group_recall"][relabel], base["group_recall"], equal_nan=True)
    torch.testing.assert_close(renamed["recall"], base["recall"])

    def ukl():
        return GroupUniformityKL(3)

    base = run(ukl, lambda r, gg: (x[r], gg), torch.arange(n), g)
    shuffled = run(ukl, lambda r, gg: (x[r], gg), perm, g[perm])
    renamed = run(ukl, lambda r, gg: (x[r], gg), torch.arange(n), g_relabelled)
    for key in base:
        torch.testing.assert_close(shuffled[key], base[key], equal_nan=True, rtol=1e-5, atol=1e-6, msg=key)
    torch.testing.assert_close(renamed["group_uniformity_kl"][relabel], base["group_uniformity_kl"], equal_nan=True,
                               rtol=1e-5, atol=1e-6)
