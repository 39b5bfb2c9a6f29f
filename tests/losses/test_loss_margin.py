"""Margin, triplet, contrastive-pair and multi-similarity losses against literal loops and pytorch-metric-learning."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from faircl.losses import MarginLoss, contrastive_pair_loss, multi_similarity_loss, triplet_margin_loss
from faircl.mining import distance_weighted_triplets

pml_losses = pytest.importorskip("pytorch_metric_learning.losses")


def _unit(z):
    return [[v / math.sqrt(sum(x * x for x in r)) for v in r] for r in z.detach().double().tolist()]


def _dist(u, v):
    return math.sqrt(sum((a - b) ** 2 for a, b in zip(u, v)))


def literal_triplets(y):
    y = [int(v) for v in y]
    n = len(y)
    return [
        (a, p, q)
        for a in range(n)
        for p in range(n)
        for q in range(n)
        if a != p and y[a] == y[p] and y[a] >= 0 and y[q] >= 0 and y[q] != y[a]
    ]


def batch(seed, n=12, d=5, classes=3):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=torch.float64), torch.randint(0, classes, (n,), generator=g)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_triplet_matches_literal_loop_and_pml(seed):
    z, y = batch(seed)
    u = _unit(z)
    trip = literal_triplets(y)
    losses = [max(0.0, _dist(u[a], u[p]) - _dist(u[a], u[q]) + 0.2) for a, p, q in trip]
    active = [v for v in losses if v > 0]
    assert triplet_margin_loss(z, y, margin=0.2).item() == pytest.approx(sum(active) / len(active), abs=1e-9)
    assert triplet_margin_loss(z, y, margin=0.2, reduction="mean").item() == pytest.approx(sum(losses) / len(losses), abs=1e-9)
    zz = z.clone().requires_grad_(True)
    ours = triplet_margin_loss(zz, y, margin=0.2)
    theirs = pml_losses.TripletMarginLoss(margin=0.2)(zz, y)
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-9)
    torch.testing.assert_close(torch.autograd.grad(ours, zz)[0], torch.autograd.grad(theirs, zz)[0])


@pytest.mark.parametrize("per_class", [False, True])
@pytest.mark.parametrize("nu", [0.0, 0.1])
def test_margin_loss_matches_literal_loop_and_pml(per_class, nu):
    z, y = batch(3, n=16)
    triplets = distance_weighted_triplets(z, y, generator=torch.Generator().manual_seed(0))
    ours = MarginLoss(margin=0.2, beta=1.2, num_classes=3 if per_class else None, nu=nu)
    with torch.no_grad():
        ours.beta.copy_(torch.tensor([1.1, 1.2, 1.3][: ours.beta.numel()], dtype=ours.beta.dtype))
    # literal: Σ ([d_ap − β + γ]_+ + [β − d_an + γ]_+) / #active terms (+ ν·β)
    u = _unit(z)
    betas = ours.beta.detach().tolist()
    pos_terms, neg_terms, reg = [], [], 0.0
    for a, p, q in zip(*(t.tolist() for t in triplets)):
        b = betas[int(y[a])] if per_class else betas[0]
        pos_terms.append(max(0.0, _dist(u[a], u[p]) - b + 0.2))
        neg_terms.append(max(0.0, b - _dist(u[a], u[q]) + 0.2))
        reg += nu * b
    active = sum(v > 0 for v in pos_terms + neg_terms)
    expected = sum(pos_terms + neg_terms) / active + (reg / active if per_class else nu * betas[0])
    zz = z.clone().requires_grad_(True)
    got = ours(zz, y, triplets)
    assert got.item() == pytest.approx(expected, abs=1e-6)  # β is a float32 parameter

    theirs = pml_losses.MarginLoss(margin=0.2, nu=nu, beta=1.2, learn_beta=True, num_classes=3 if per_class else None)
    with torch.no_grad():
        theirs.beta.copy_(ours.beta)
    ref = theirs(zz, y, triplets)
    assert got.item() == pytest.approx(ref.item(), rel=1e-6)
    g_ours = torch.autograd.grad(got, [zz, ours.beta])
    g_theirs = torch.autograd.grad(ref, [zz, theirs.beta])
    torch.testing.assert_close(g_ours[0], g_theirs[0], rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(g_ours[1], g_theirs[1].to(g_ours[1].dtype), rtol=1e-5, atol=1e-7)


def test_margin_loss_learns_beta_and_handles_empty_triplets():
    z, y = batch(4)
    loss_fn = MarginLoss()
    assert isinstance(loss_fn.beta, torch.nn.Parameter)
    empty = tuple(torch.empty(0, dtype=torch.long) for _ in range(3))
    zz = z.clone().requires_grad_(True)
    loss = loss_fn(zz, y, empty)
    assert loss.item() == 0.0 and loss.requires_grad
    loss.backward()
    assert torch.isfinite(zz.grad).all() and zz.grad.abs().max() == 0
    fixed = MarginLoss(learn_beta=False)
    assert "beta" in dict(fixed.named_buffers())
    with pytest.raises(ValueError, match="per-class"):
        MarginLoss(num_classes=3)(z, None, empty)
    with pytest.raises(ValueError, match="negatives"):
        loss_fn(z, y, (torch.tensor([0]), torch.tensor([1]), torch.tensor([99])))


def test_contrastive_pair_loss_matches_literal_loop_and_pml():
    z, y = batch(5)
    y[0] = -1
    u = _unit(z)
    pos, neg = [], []
    for i in range(12):
        for j in range(12):
            if i == j or y[i] < 0 or y[j] < 0:
                continue
            d = _dist(u[i], u[j])
            (pos if y[i] == y[j] else neg).append(max(0.0, d - 0.1) if y[i] == y[j] else max(0.0, 1.0 - d))
    mean_nz = lambda v: sum(v) / max(1, sum(x > 0 for x in v))  # noqa: E731
    got = contrastive_pair_loss(z, y, pos_margin=0.1, neg_margin=1.0)
    assert got.item() == pytest.approx(mean_nz(pos) + mean_nz(neg), abs=1e-9)
    keep = y >= 0
    ref = pml_losses.ContrastiveLoss(pos_margin=0.1, neg_margin=1.0)(z[keep], y[keep])
    assert got.item() == pytest.approx(ref.item(), rel=1e-7)


def test_multi_similarity_matches_literal_loop_and_pml():
    z, y = batch(6)
    u = _unit(z)
    total = 0.0
    for i in range(12):
        s = [sum(a * b for a, b in zip(u[i], u[k])) for k in range(12)]
        p = sum(math.exp(-2.0 * (s[k] - 0.5)) for k in range(12) if k != i and y[k] == y[i])
        n = sum(math.exp(50.0 * (s[k] - 0.5)) for k in range(12) if y[k] != y[i])
        total += math.log1p(p) / 2.0 + math.log1p(n) / 50.0
    got = multi_similarity_loss(z, y)
    assert got.item() == pytest.approx(total / 12, abs=1e-9)
    ref = pml_losses.MultiSimilarityLoss(alpha=2, beta=50, base=0.5)(z, y)
    assert got.item() == pytest.approx(ref.item(), rel=1e-7)


def test_degenerate_single_class_and_unknown_labels():
    z = torch.randn(6, 4, requires_grad=True)
    one_class = torch.zeros(6, dtype=torch.long)
    unknown = torch.full((6,), -1)
    for labels in (one_class, unknown):
        losses = [
            triplet_margin_loss(z, labels),
            MarginLoss()(z, labels),
            contrastive_pair_loss(z, labels),
            multi_similarity_loss(z, labels),
        ]
        for loss in losses:
            (g,) = torch.autograd.grad(loss, z)
            assert torch.isfinite(loss) and torch.isfinite(g).all()
    assert triplet_margin_loss(z, unknown).item() == 0.0
    dup = torch.ones(4, 3, requires_grad=True)  # zero distances: the square root must not produce NaN gradients
    loss = triplet_margin_loss(dup, torch.tensor([0, 0, 1, 1])) + MarginLoss()(dup, torch.tensor([0, 0, 1, 1]))
    (g,) = torch.autograd.grad(loss, dup)
    assert torch.isfinite(g).all()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_close_to_float32(dtype):
    torch.manual_seed(2)
    x = torch.randn(20, 10)
    proj = torch.nn.Linear(10, 8)
    y = torch.randint(0, 3, (20,))
    fn = MarginLoss()
    ref = torch.stack([triplet_margin_loss(proj(x), y), fn(proj(x), y), multi_similarity_loss(proj(x), y)])
    with torch.autocast("cpu", dtype=dtype):
        low = torch.stack([triplet_margin_loss(proj(x), y), fn(proj(x), y), multi_similarity_loss(proj(x), y)])
    torch.testing.assert_close(low.float(), ref, rtol=1e-2, atol=1e-3)


def test_hand_made_triplet_and_margin_values():
    """Three unit vectors with hand-computed distances."""
    z = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([0, 0, 1])
    # d(0,1) = √2, d(0,2) = 2, d(1,2) = √2
    trip = (torch.tensor([0, 1]), torch.tensor([1, 0]), torch.tensor([2, 2]))
    r2 = math.sqrt(2.0)
    expected_triplet = [max(0.0, r2 - 2 + 0.2), max(0.0, r2 - r2 + 0.2)]  # [0, 0.2]
    got = triplet_margin_loss(z, triplets=trip, margin=0.2, reduction="none")
    torch.testing.assert_close(got, torch.tensor(expected_triplet, dtype=torch.float64))
    assert triplet_margin_loss(z, triplets=trip, margin=0.2).item() == pytest.approx(0.2)  # one active triplet
    # margin loss, β = 1.2, γ = 0.2: pos terms [√2 − 1.0]_+ twice, neg terms [1.4 − 2]_+ = 0 and [1.4 − √2]_+ = 0
    loss = MarginLoss(margin=0.2, beta=1.2)(z, y, trip)
    assert loss.item() == pytest.approx(2 * (r2 - 1.0) / 2, abs=1e-7)


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=12),
    classes=st.integers(min_value=1, max_value=4),
    unknown=st.booleans(),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_property_miners_and_margin_losses_on_random_batches(n, classes, unknown, seed):
    from faircl.mining import semihard_triplets

    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, 4, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, classes, (n,), generator=g)
    if unknown:
        y[torch.rand(n, generator=g) < 0.3] = -1
    for triplets in (distance_weighted_triplets(z, y, generator=g), semihard_triplets(z, y), None):
        if triplets is not None:
            a, p, q = triplets
            assert ((y[a] == y[p]) & (a != p) & (y[q] != y[a]) & (y[a] >= 0) & (y[q] >= 0)).all()
        for loss in (triplet_margin_loss(z, y, triplets), MarginLoss()(z, y, triplets)):
            (grad,) = torch.autograd.grad(loss, z)
            assert torch.isfinite(loss) and loss.item() >= 0 and torch.isfinite(grad).all()
