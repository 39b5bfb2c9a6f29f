"""NT-Xent (plain, weighted, extra positives) against a literal loop and pytorch-metric-learning."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from faircl.losses import nt_xent_loss
from faircl.mining import fair_negative_weights, nearest_cluster_positive


def ref_nt_xent(z1, z2, tau, weights=None, extra=None):
    """Per-anchor −1/|P| Σ_p log(exp(s_ip) / (Σ_{p'} exp(s_ip') + Σ_{k∈N(i)} w̃_ik exp(s_ik))), w̃ mean-1 per row."""
    z = torch.nn.functional.normalize(torch.cat([z1, z2]).double(), dim=1).tolist()
    n = len(z) // 2
    ex = lambda r: r % n  # noqa: E731  (example of row r)
    terms = []
    for i in range(2 * n):
        e = ex(i)
        partners = set()
        if extra is not None:
            partners = {int(extra[e])} if extra[e] >= 0 else set()
            partners |= {m for m in range(n) if extra[m] == e}  # the relation is symmetric
        positives = [(i + n) % (2 * n)] + [r for m in sorted(partners) for r in (m, m + n)]
        negatives = [k for k in range(2 * n) if k != i and k not in positives]
        s = {k: sum(a * b for a, b in zip(z[i], z[k])) / tau for k in range(2 * n)}
        if weights is None:
            w = {k: 1.0 for k in negatives}
        else:
            raw = {k: float(weights[ex(i)][ex(k)]) for k in negatives}
            total = sum(raw.values())
            w = {k: (raw[k] * len(negatives) / total if total > 0 else 0.0) for k in negatives}
        den = sum(math.exp(s[p]) for p in positives) + sum(w[k] * math.exp(s[k]) for k in negatives)
        terms.append(-sum(math.log(math.exp(s[p]) / den) for p in positives) / len(positives))
    return terms


def views(seed, n=8, d=5):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(n, d, generator=g, dtype=torch.float64)
    return z1, z1 + 0.5 * torch.randn(n, d, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("tau", [0.5, 0.1])
def test_plain_matches_literal_loop(seed, tau):
    z1, z2 = views(seed)
    terms = ref_nt_xent(z1, z2, tau)
    assert nt_xent_loss(z1, z2, tau).item() == pytest.approx(sum(terms) / len(terms), abs=1e-9)
    torch.testing.assert_close(nt_xent_loss(z1, z2, tau, reduction="none"), torch.tensor(terms, dtype=torch.float64))


def test_plain_matches_pytorch_metric_learning():
    pml = pytest.importorskip("pytorch_metric_learning.losses")
    z1, z2 = views(3, n=16)
    z = torch.cat([z1, z2]).requires_grad_(True)
    labels = torch.arange(16).repeat(2)
    ours = nt_xent_loss(z[:16], z[16:], 0.5)
    theirs = pml.NTXentLoss(temperature=0.5)(z, labels)
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-9)
    torch.testing.assert_close(torch.autograd.grad(ours, z)[0], torch.autograd.grad(theirs, z)[0])


def test_weighted_and_extra_positives_match_literal_loop():
    z1, z2 = views(4, n=9)
    clusters = torch.tensor([0, 0, 1, 1, 1, 2, 2, 3, 0])
    w = fair_negative_weights(z1, clusters, num_clusters=4)
    extra = nearest_cluster_positive(z1, clusters)
    extra[3] = -1
    got = nt_xent_loss(z1, z2, 0.5, negative_weights=w, extra_positives=extra, reduction="none")
    ref = ref_nt_xent(z1, z2, 0.5, weights=w.tolist(), extra=extra.tolist())
    torch.testing.assert_close(got, torch.tensor(ref, dtype=torch.float64))
    only_w = nt_xent_loss(z1, z2, 0.5, negative_weights=w, reduction="none")
    torch.testing.assert_close(only_w, torch.tensor(ref_nt_xent(z1, z2, 0.5, weights=w.tolist()), dtype=torch.float64))


def test_uniform_weights_give_plain_nt_xent_and_scale_does_not_matter():
    z1, z2 = views(5)
    plain = nt_xent_loss(z1, z2)
    torch.testing.assert_close(nt_xent_loss(z1, z2, negative_weights=torch.full((8, 8), 3.0)), plain)
    w = torch.rand(16, 16, dtype=torch.float64)
    torch.testing.assert_close(nt_xent_loss(z1, z2, negative_weights=w), nt_xent_loss(z1, z2, negative_weights=7 * w))


def test_degenerate_inputs():
    z1 = torch.randn(1, 4, requires_grad=True)
    z2 = torch.randn(1, 4)
    loss = nt_xent_loss(z1, z2)  # one pair: the positive is the whole denominator
    assert loss.item() == pytest.approx(0.0, abs=1e-6)
    loss.backward()
    assert torch.isfinite(z1.grad).all()
    z1 = torch.randn(5, 4, requires_grad=True)
    zeros = torch.zeros(5, 5)  # every negative has weight 0: only positives remain
    loss = nt_xent_loss(z1, z1.detach() + 0.1, negative_weights=zeros)
    (g,) = torch.autograd.grad(loss, z1)
    assert torch.isfinite(loss) and torch.isfinite(g).all()
    with pytest.raises(ValueError, match="non-negative"):
        nt_xent_loss(z1, z1, negative_weights=-torch.ones(5, 5))
    with pytest.raises(ValueError, match="shape"):
        nt_xent_loss(z1, z1, negative_weights=torch.ones(4, 4))
    with pytest.raises(ValueError, match="extra_positives"):
        nt_xent_loss(z1, z1, extra_positives=torch.tensor([0, 1, 2, 3, 9]))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_close_to_float32(dtype):
    torch.manual_seed(1)
    x = torch.randn(24, 12)
    proj = torch.nn.Linear(12, 8)
    w = torch.rand(12, 12)
    ref = nt_xent_loss(proj(x[:12]), proj(x[12:]), negative_weights=w)
    with torch.autocast("cpu", dtype=dtype):
        low = nt_xent_loss(proj(x[:12]), proj(x[12:]), negative_weights=w)
    assert low.dtype == torch.float32
    torch.testing.assert_close(low, ref, rtol=1e-2, atol=1e-3)


def test_hand_made_value():
    """Rows e1, e2 | e1, −e2 at τ = 1: anchors 0 and 2 see s = 1 with their positive, 1 and 3 see s = −1."""
    z1 = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    z2 = torch.tensor([[1.0, 0.0], [0.0, -1.0]], dtype=torch.float64)
    e = math.e
    expected = (-math.log(e / (e + 2)) - math.log((1 / e) / (1 / e + 2))) / 2
    assert nt_xent_loss(z1, z2, temperature=1.0).item() == pytest.approx(expected, abs=1e-12)


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=10),
    clusters=st.integers(min_value=1, max_value=4),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_property_weighted_nt_xent_on_random_batches(n, clusters, seed):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(n, 3, generator=g, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(n, 3, generator=g, dtype=torch.float64)
    c = torch.randint(0, clusters, (n,), generator=g)
    w = fair_negative_weights(z1, c, num_clusters=clusters)
    extra = nearest_cluster_positive(z1, c)
    for loss in (
        nt_xent_loss(z1, z2, negative_weights=w),
        nt_xent_loss(z1, z2, negative_weights=w, extra_positives=extra),
    ):
        (grad,) = torch.autograd.grad(loss, z1)
        assert torch.isfinite(loss) and loss.item() >= -1e-12 and torch.isfinite(grad).all()
    ref = ref_nt_xent(z1, z2, 0.5, weights=w.tolist(), extra=extra.tolist())
    got = nt_xent_loss(z1, z2, negative_weights=w, extra_positives=extra, reduction="none")
    torch.testing.assert_close(got, torch.tensor(ref, dtype=torch.float64))
