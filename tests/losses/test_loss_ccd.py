"""CCD bias and representation losses against literal loops over eqs. 2–3."""

from __future__ import annotations

import math

import pytest
import torch

from faircl.losses import ccd_bandwidth, ccd_bias_loss, ccd_rep_loss


def ref_bias(attr, neutral, rho):
    """Σ_i Σ_{j≠i} |k_i − k_j| per tuple, k_g = exp(−‖f(S^{a_g}) − f(S^n)‖² / (2ρ²)); mean over tuples."""
    g, n, _ = attr.shape
    out = []
    for c in range(n):
        k = [math.exp(-sum((a - b) ** 2 for a, b in zip(attr[i, c].tolist(), neutral[c].tolist())) / (2 * rho**2)) for i in range(g)]
        out.append(sum(abs(k[i] - k[j]) for i in range(g) for j in range(g) if j != i))
    return out


def test_bias_matches_literal_loop():
    g = torch.Generator().manual_seed(0)
    for groups in (2, 3):
        attr = torch.randn(groups, 5, 4, generator=g, dtype=torch.float64)
        neutral = torch.randn(5, 4, generator=g, dtype=torch.float64)
        rho = ccd_bandwidth(attr, neutral)
        ref = ref_bias(attr, neutral, rho)
        assert ccd_bias_loss(attr, neutral, rho).item() == pytest.approx(sum(ref) / 5, abs=1e-12)
        assert ccd_bias_loss(attr, neutral, rho, reduction="sum").item() == pytest.approx(sum(ref), abs=1e-12)
        torch.testing.assert_close(ccd_bias_loss(attr, neutral, rho, reduction="none"), torch.tensor(ref, dtype=torch.float64))


def test_bias_hand_made_and_degenerate():
    neutral = torch.zeros(1, 2, dtype=torch.float64)
    attr = torch.tensor([[[1.0, 0.0]], [[0.0, 2.0]]], dtype=torch.float64)
    expected = 2 * abs(math.exp(-1 / 2) - math.exp(-4 / 2))  # ρ = 1, both orders of the pair
    assert ccd_bias_loss(attr, neutral, 1.0).item() == pytest.approx(expected, abs=1e-12)
    same = torch.ones(2, 3, 4, requires_grad=True)  # all versions identical: loss 0, finite zero gradient
    loss = ccd_bias_loss(same, torch.zeros(3, 4), 1.0)
    loss.backward()
    assert loss.item() == pytest.approx(0.0, abs=1e-12) and torch.isfinite(same.grad).all()
    with pytest.raises(ValueError, match=r"\[G, N, d\]"):
        ccd_bias_loss(torch.zeros(3, 4), torch.zeros(3, 4), 1.0)
    with pytest.raises(ValueError, match="rho"):
        ccd_bias_loss(same, torch.zeros(3, 4), 0.0)
    with pytest.raises(ValueError, match="disagree"):
        ccd_bias_loss(same, torch.zeros(2, 4), 1.0)


def test_bandwidth_is_median_distance():
    attr = torch.tensor([[[3.0, 4.0]], [[0.0, 1.0]], [[0.0, 2.0]]])
    assert ccd_bandwidth(attr, torch.zeros(1, 2)) == pytest.approx(2.0)


def test_rep_loss_matches_norm_and_is_finite_at_start():
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    orig = torch.randn(4, 3, dtype=torch.float64)
    expected = sum(math.sqrt(sum((a - b) ** 2 for a, b in zip(u, v))) for u, v in zip(x.tolist(), orig.tolist())) / 4
    assert ccd_rep_loss(x, orig).item() == pytest.approx(expected, abs=1e-12)
    start = ccd_rep_loss(x, x.detach().clone())  # the frozen copy equals the encoder at step 0
    start.backward()
    assert start.item() == 0.0 and torch.isfinite(x.grad).all()
    with pytest.raises(ValueError, match="same shape"):
        ccd_rep_loss(x, orig[:2])
