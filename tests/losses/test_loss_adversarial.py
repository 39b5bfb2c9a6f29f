"""Gradient reversal, the diverse-adversaries difference loss and DiVA decorrelation."""

from __future__ import annotations

import pytest
import torch

from faircl.losses import Decorrelation, GradientReversal, GradientReversalLayer, diversity_loss, grad_reverse


def test_gradient_reversal_flips_and_scales():
    x = torch.randn(5, 3, requires_grad=True)
    w = torch.randn(5, 3)
    y = GradientReversal.apply(x, 0.5)
    torch.testing.assert_close(y, x)
    (y * w).sum().backward()
    torch.testing.assert_close(x.grad, -0.5 * w)
    x.grad = None
    (GradientReversalLayer(2.0)(x) * w).sum().backward()
    torch.testing.assert_close(x.grad, -2.0 * w)
    x.grad = None
    (grad_reverse(x) * w).sum().backward()
    torch.testing.assert_close(x.grad, -w)
    with pytest.raises(ValueError, match="lambda_"):
        GradientReversalLayer(-1.0)


def ref_diversity(hs, eps=1e-6):
    """Literal loop: centre columns, unit rows, Σ_{k<l} mean over (p, q) of (Σ_b H_k[b,p] H_l[b,q])²."""
    units = []
    for h in hs:
        rows = h.tolist()
        b = len(rows)
        means = [sum(r[c] for r in rows) / b for c in range(len(rows[0]))]
        centred = [[v - m for v, m in zip(r, means)] for r in rows]
        units.append([[v / (sum(x * x for x in r) ** 0.5 + eps) for v in r] for r in centred])
    total = 0.0
    for k in range(len(units)):
        for l in range(k + 1, len(units)):
            hk, hl = units[k], units[l]
            entries = [
                sum(hk[b][p] * hl[b][q] for b in range(len(hk))) ** 2 for p in range(len(hk[0])) for q in range(len(hl[0]))
            ]
            total += sum(entries) / len(entries)
    return total


def test_diversity_loss_matches_literal_loop():
    g = torch.Generator().manual_seed(0)
    hs = [torch.randn(7, w, generator=g, dtype=torch.float64) for w in (4, 4, 3)]
    assert diversity_loss(hs).item() == pytest.approx(ref_diversity(hs), abs=1e-12)
    stacked = torch.randn(3, 7, 4, generator=g, dtype=torch.float64)
    assert diversity_loss(stacked).item() == pytest.approx(ref_diversity(list(stacked)), abs=1e-12)


def test_diversity_loss_zero_for_orthogonal_and_finite_for_constant():
    a = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    b = torch.tensor([[0.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    assert diversity_loss([a, b]).item() == pytest.approx(0.0, abs=1e-12)
    const = torch.ones(4, 3, requires_grad=True)
    loss = diversity_loss([const, torch.randn(4, 3)])
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(const.grad).all()
    with pytest.raises(ValueError, match="at least 2"):
        diversity_loss([a])


def test_decorrelation_value_and_adversarial_gradients():
    torch.manual_seed(0)
    dec = Decorrelation(dim_targ=4, dim_sa=3, hidden=8).double()
    zt = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    zs = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    c = dec(zt, zs)
    # literal: mean over (b, j) of (t̂_bj · r̂_bj)² with t̂, ŝ unit rows and r = ξ(ŝ)
    t = zt.detach() / zt.detach().norm(dim=1, keepdim=True)
    s = zs.detach() / zs.detach().norm(dim=1, keepdim=True)
    r = dec.regressor(s).detach()
    r = r / r.norm(dim=1, keepdim=True)
    expected = sum((t[b, j] * r[b, j]).item() ** 2 for b in range(6) for j in range(4)) / 24
    assert c.item() == pytest.approx(expected, abs=1e-12)

    # The caller minimises −ρ·c: ξ ascends c, the embeddings (through the reversal) descend it.
    rho = 10.0
    (-rho * c).backward()
    plain = Decorrelation(4, 3, 8).double()
    plain.load_state_dict(dec.state_dict())
    plain.reversal.lambda_ = -1.0  # no reversal: the true gradient of c
    zt2, zs2 = zt.detach().clone().requires_grad_(True), zs.detach().clone().requires_grad_(True)
    (-rho * plain(zt2, zs2)).backward()
    torch.testing.assert_close(zt.grad, -zt2.grad)
    torch.testing.assert_close(zs.grad, -zs2.grad)
    for p_rev, p_plain in zip(dec.regressor.parameters(), plain.regressor.parameters()):
        torch.testing.assert_close(p_rev.grad, p_plain.grad)
    with pytest.raises(ValueError, match="z_targ"):
        dec(torch.randn(6, 5, dtype=torch.float64), zs)


def test_decorrelation_step_lowers_c_for_the_embeddings_and_raises_it_for_the_adversary():
    torch.manual_seed(1)
    dec = Decorrelation(4, 4, hidden=16).double()
    base = torch.randn(32, 4, dtype=torch.float64)
    zt = torch.nn.Parameter(base.clone())
    zs = torch.nn.Parameter(base + 0.1 * torch.randn(32, 4, dtype=torch.float64))
    c0 = dec(zt, zs)
    (-c0).backward()
    with torch.no_grad():  # one small gradient step on the embeddings only
        moved = dec(zt - 1e-2 * zt.grad, zs - 1e-2 * zs.grad)
    with torch.no_grad():  # one small gradient step on the adversary only
        for p in dec.parameters():
            p -= 1e-2 * p.grad
        trained = dec(zt, zs)
    assert moved.item() < c0.item() < trained.item()
