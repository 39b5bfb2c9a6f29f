"""Faithfulness to the papers and the authors' code: λ scale of Chi et al., DiverseAdv's difference loss, per-class
INLP, Algorithm 1's sampled negatives, CCD's literal bandwidth."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from faircl.losses.adversarial import difference_loss, diversity_loss
from faircl.losses.ccd import ccd_bandwidth, ccd_bias_loss, ccd_kernel
from faircl.losses.sampled_negatives import sample_negatives, sampled_pair_loss
from faircl.methods import DiverseAdversarial, OneStageCL, TwoStageCL
from faircl.methods.inlp import inlp_projection
from faircl.losses.conditional import reduce_cs_terms
from faircl.mining import fair_negative_weights


# ----------------------------------------------------------------------------------------------- 1. Chi λ scale
def _literal_cs_code(z1, z2, y, a, tau):
    """The authors' code: mean over the 2N anchors of −log ℓ_i, denominators over k ≠ i with the same (a, y)."""
    z = F.normalize(torch.cat([z1, z2]).double(), dim=1)
    yy, aa = torch.cat([y, y]).tolist(), torch.cat([a, a]).tolist()
    n = len(z1)
    total = 0.0
    for i in range(2 * n):
        j = i + n if i < n else i - n
        den = sum(math.exp(float(z[i] @ z[k]) / tau) for k in range(2 * n)
                  if k != i and yy[k] == yy[i] and aa[k] == aa[i])
        total += -(float(z[i] @ z[j]) / tau - math.log(den))
    return total / (2 * n)


def _literal_cs_paper(z1, z2, y, a, tau):
    z = F.normalize(torch.cat([z1, z2]).double(), dim=1)
    yy, aa = torch.cat([y, y]).tolist(), torch.cat([a, a]).tolist()
    n = len(z1)
    total = 0.0
    for i in range(2 * n):
        j = i + n if i < n else i - n
        cell = [k for k in range(2 * n) if yy[k] == yy[i] and aa[k] == aa[i]]
        den = sum(math.exp(float(z[i] @ z[k]) / tau) for k in cell if k != i)
        total += -(float(z[i] @ z[j]) / tau - math.log(den)) / (len(cell) - 1)
    return total


def test_cs_code_reduction_is_the_authors_per_anchor_mean():
    g = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(12, 5, generator=g), torch.randn(12, 5, generator=g)
    y, a = torch.randint(0, 2, (12,), generator=g), torch.randint(0, 3, (12,), generator=g)
    code = reduce_cs_terms(z1, z2, y, a, 0.5, True, "code")
    paper = reduce_cs_terms(z1, z2, y, a, 0.5, True, "paper")
    assert code.item() == pytest.approx(_literal_cs_code(z1, z2, y, a, 0.5), rel=1e-5)
    assert paper.item() == pytest.approx(_literal_cs_paper(z1, z2, y, a, 0.5), rel=1e-5)
    assert paper.item() > 2 * code.item()  # the weighted sum is several times larger: λ is not on the same scale
    with pytest.raises(ValueError, match="cs_reduction"):
        reduce_cs_terms(z1, z2, y, a, 0.5, True, "sum")


@pytest.mark.parametrize("cls", [TwoStageCL, OneStageCL])
def test_methods_default_to_the_code_reduction(cls):
    torch.manual_seed(0)
    model = cls(num_classes=2, num_groups=2, input_dim=6, encoder="mlp", encoder_kwargs={"hidden_dim": 8},
                leakage=False, lambda_cs=1.0)
    assert model.cs_reduction == "code"
    x, x2 = torch.randn(10, 6), torch.randn(10, 6)
    y, a = torch.tensor([0, 1] * 5), torch.tensor([0, 0, 1, 1, 0] * 2)
    batch = {"x": x, "x2": x2, "y": y, "a": a, "idx": torch.arange(10)}
    model.eval()
    terms = model.losses(batch, model(x))
    z1, z2 = model(x)["z"], model(x2)["z"]
    assert terms["cs"].item() == pytest.approx(_literal_cs_code(z1.detach(), z2.detach(), y, a, model.cs_temperature),
                                               rel=1e-5)
    with pytest.raises(ValueError, match="cs_reduction"):
        cls(num_classes=2, num_groups=2, input_dim=6, encoder="mlp", cs_reduction="mean")


# ----------------------------------------------------------------------------------------------- 2. DiverseAdv
def _literal_authors_difference(hs, eps=1e-6):
    total = 0.0
    for k in range(len(hs)):
        for m in range(k + 1, len(hs)):
            hk, hl = hs[k].double(), hs[m].double()
            b = len(hk)
            acc = 0.0
            for i in range(b):
                for j in range(b):
                    ui = hk[i] / (float(hk[i].norm()) + eps)
                    vj = hl[j] / (float(hl[j].norm()) + eps)
                    acc += float(ui @ vj) ** 2
            total += acc / (b * b)
    return total


def test_authors_difference_loss_matches_literal_loop_and_differs_from_dsn():
    g = torch.Generator().manual_seed(1)
    hs = [torch.randn(6, 4, generator=g) + 1.0, torch.randn(6, 4, generator=g), torch.randn(6, 4, generator=g)]
    assert difference_loss(hs).item() == pytest.approx(_literal_authors_difference(hs), rel=1e-6)
    assert difference_loss(hs, form="dsn").item() == pytest.approx(diversity_loss(hs).item(), rel=1e-9)
    assert abs(difference_loss(hs).item() - diversity_loss(hs).item()) > 1e-3
    # the norm is detached: the gradient is that of Σ (h_i·h_j)² / (‖h_i‖‖h_j‖)² with the norms held constant
    h0 = hs[0].clone().requires_grad_(True)
    difference_loss([h0, hs[1]]).backward()
    n0, n1 = h0.detach().norm(dim=1, keepdim=True) + 1e-6, hs[1].norm(dim=1, keepdim=True) + 1e-6
    gram = (h0.detach() / n0) @ (hs[1] / n1).T
    ref = (2 * gram / gram.numel()) @ (hs[1] / n1) / n0
    torch.testing.assert_close(h0.grad, ref, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="form"):
        difference_loss(hs, form="centred")
    with pytest.raises(ValueError, match="width"):
        difference_loss([hs[0], torch.randn(6, 3)])


def _encoder_grads(lambda_diff: float, terms_used: tuple[str, ...]):
    torch.manual_seed(0)
    model = DiverseAdversarial(num_classes=2, num_groups=2, input_dim=6, encoder="mlp",
                               encoder_kwargs={"hidden_dim": 8}, leakage=False, lambda_adv=1.0,
                               lambda_diff=lambda_diff, adv_hidden=5, conditional=True)
    g = torch.Generator().manual_seed(3)
    batch = {"x": torch.randn(16, 6, generator=g), "y": torch.randint(0, 2, (16,), generator=g),
             "a": torch.randint(0, 2, (16,), generator=g), "idx": torch.arange(16)}
    terms = model.losses(batch, model(batch["x"]))
    model.zero_grad()
    sum((model.lambda_diff if k == "diff" else 1.0) * terms[k] for k in terms_used).backward()
    enc = torch.cat([p.grad.flatten() if p.grad is not None else torch.zeros(p.numel())
                     for p in model.encoder.parameters()])
    disc = torch.cat([p.grad.flatten() if p.grad is not None else torch.zeros(p.numel())
                      for p in model.discriminators.parameters()])
    return enc, disc, terms


def test_difference_loss_reaches_only_the_discriminators():
    # total loss: the encoder's gradient is the same whatever λ_diff (the adversarial term is unchanged)
    enc0, disc0, t0 = _encoder_grads(0.0, ("loss",))
    enc1, disc1, t1 = _encoder_grads(100.0, ("loss",))
    assert t1["diff"].item() > 0
    torch.testing.assert_close(enc0, enc1, rtol=0, atol=0)
    assert (disc0 - disc1).abs().max() > 1e-6  # ... while the discriminators do feel it
    # the difference loss alone gives the encoder no gradient at all, and the discriminators some
    enc_diff, disc_diff, _ = _encoder_grads(100.0, ("diff",))
    assert float(enc_diff.abs().max()) == 0.0
    assert float(disc_diff.abs().max()) > 0


# ----------------------------------------------------------------------------------------------- 3. per-class INLP
def _class_specific_attribute(n: int, seed: int):
    """The attribute is written along e0 in class 0 and along e1 in class 1 (plus noise dims)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    a = rng.integers(0, 2, n)
    x = rng.normal(size=(n, 6)) * 0.3
    sign = 2.0 * a - 1.0
    x[y == 0, 0] += 2.0 * sign[y == 0]
    x[y == 1, 1] += 2.0 * sign[y == 1]
    x[:, 2] += 1.5 * (2.0 * y - 1.0)
    return x, y, a


def _within_class_leakage(x, y, a, xt, yt, at):
    from sklearn.linear_model import LogisticRegression

    return [LogisticRegression(max_iter=2000).fit(x[y == c], a[y == c]).score(xt[yt == c], at[yt == c])
            for c in (0, 1)]


def test_per_class_inlp_removes_the_attribute_within_each_class():
    x, y, a = _class_specific_attribute(3000, 0)
    xt, yt, at = _class_specific_attribute(2000, 1)
    assert min(_within_class_leakage(x, y, a, xt, yt, at)) > 0.95
    p_glob, _ = inlp_projection(x, a, None, n_clf=1, probe="logistic", seed=0)
    p_cls, _ = inlp_projection(x, a, y, n_clf=1, probe="logistic", seed=0)
    glob = _within_class_leakage(x @ p_glob, y, a, xt @ p_glob, yt, at)
    cls = _within_class_leakage(x @ p_cls, y, a, xt @ p_cls, yt, at)
    assert max(cls) < 0.6, cls            # per class: chance within both classes after one round
    assert max(glob) > 0.9, glob          # one global direction leaves the attribute readable inside a class


# ----------------------------------------------------------------------------------------------- 4. sampled negatives
def test_sampled_negatives_follow_algorithm_1_probabilities():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(12, 4, generator=g)
    clusters = torch.tensor([0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 3])
    freq = torch.tensor([0.55, 0.25, 0.15, 0.05])
    w = fair_negative_weights(z, clusters, 4, 0.1, cluster_freq=freq)
    # literal probabilities for anchor 0: cluster weight ∝ max(0, 1/K − p) + ε over c ≠ c_0, then ∝ distance
    zn = F.normalize(z.double(), dim=1)
    wc = {c: max(0.0, 0.25 - float(freq[c])) + 0.1 for c in (1, 2, 3)}
    tot = sum(wc.values())
    expect = torch.zeros(12, dtype=torch.float64)
    for c in (1, 2, 3):
        members = [k for k in range(12) if int(clusters[k]) == c]
        d = torch.stack([(zn[0] - zn[k]).norm() for k in members])
        for k, dk in zip(members, d):
            expect[k] = wc[c] / tot * dk / d.sum()
    draws = 20000
    anchor_rows = w[0:1].expand(draws, -1).contiguous()
    drawn = sample_negatives(anchor_rows, generator=torch.Generator().manual_seed(1))
    freq_emp = torch.bincount(drawn, minlength=12).double() / draws
    assert bool((clusters[drawn] != 0).all())  # only other clusters
    assert float((freq_emp - expect).abs().max()) < 0.02
    # every anchor: the drawn negative is never in its own cluster
    many = sample_negatives(w.repeat(50, 1), generator=torch.Generator().manual_seed(2))
    assert bool((clusters[many] != clusters.repeat(50)).all())
    # a row with no admissible negative draws nothing
    assert sample_negatives(torch.zeros(2, 3)).tolist() == [-1, -1]


def test_sampled_pair_loss_matches_literal_pairs():
    g = torch.Generator().manual_seed(4)
    z1, z2 = torch.randn(5, 3, generator=g), torch.randn(5, 3, generator=g)
    neg = torch.tensor([2, -1, 0, 4, 1])
    pos = torch.tensor([1, 0, -1, 2, 3])
    tau = 0.5
    u1, u2 = F.normalize(z1.double(), dim=1), F.normalize(z2.double(), dim=1)
    total = 0.0
    for anchor, other in ((u1, u2), (u2, u1)):
        for i in range(5):
            ps = [other[i]] + ([anchor[int(pos[i])]] if pos[i] >= 0 else [])
            if neg[i] < 0:
                continue
            sn = float(anchor[i] @ anchor[int(neg[i])]) / tau
            terms = [-(float(anchor[i] @ p) / tau - math.log(math.exp(float(anchor[i] @ p) / tau) + math.exp(sn)))
                     for p in ps]
            total += sum(terms) / len(ps)
    got = sampled_pair_loss(z1, z2, neg, tau, extra_positives=pos)
    assert got.item() == pytest.approx(total / 10, rel=1e-5)


def test_fair_sampling_simclr_sampled_mode_trains():
    from faircl.methods import FairSamplingSimCLR

    torch.manual_seed(0)
    m = FairSamplingSimCLR(num_classes=2, num_groups=2, input_dim=6, encoder="mlp", encoder_kwargs={"hidden_dim": 8},
                           stage1_epochs=0, leakage=False, negatives="sampled")
    m.cluster_ids = torch.tensor([0, 1, 2, 3] * 4)
    m.cluster_freq.copy_(torch.tensor([0.4, 0.3, 0.2, 0.1]))
    assert m.stage == "fair"  # stage1_epochs=0: the fair phase from epoch 0
    batch = {"x": torch.randn(16, 6), "x2": torch.randn(16, 6), "y": torch.zeros(16, dtype=torch.long),
             "a": torch.zeros(16, dtype=torch.long), "idx": torch.arange(16)}
    terms = m.losses(batch, m(batch["x"]))
    assert torch.isfinite(terms["nt_xent"]) and terms["nt_xent"].requires_grad
    with pytest.raises(ValueError, match="negatives"):
        FairSamplingSimCLR(input_dim=6, encoder="mlp", negatives="hard")


# ----------------------------------------------------------------------------------------------- 5. CCD bandwidth
def test_literal_variance_bandwidth_underflows_on_normalised_embeddings():
    g = torch.Generator().manual_seed(0)
    neutral = F.normalize(torch.randn(200, 32, generator=g), dim=1)
    # versions at distances spread like sentence-embedding CDA tuples (median ≈ 0.45)
    noise = F.normalize(torch.randn(2, 200, 32, generator=g), dim=2)
    scale = (0.45 + 0.2 * torch.randn(2, 200, 1, generator=g)).clamp(min=0.05)
    attr = F.normalize(neutral[None] + scale * noise, dim=2)
    rho_med, rho_var = ccd_bandwidth(attr, neutral), ccd_bandwidth(attr, neutral, how="variance")
    assert rho_var < 0.2 * rho_med
    k_med, k_var = ccd_kernel(attr, neutral, rho_med), ccd_kernel(attr, neutral, rho_var)
    frac_tiny_var = float((k_var < 1e-20).double().mean())
    frac_tiny_med = float((k_med < 1e-20).double().mean())
    assert frac_tiny_var > 0.5 and frac_tiny_med == 0.0

    assert float((k_var == 0).double().mean()) > 0.3  # exactly zero: underflow

    def tuples_with_gradient(rho):
        a = attr.clone().requires_grad_(True)
        ccd_bias_loss(a, neutral, rho).backward()
        return float((a.grad.norm(dim=-1).amax(dim=0) > 1e-12).double().mean())

    # measured: every tuple trains under the median bandwidth, about a quarter under the literal variance (only
    # the tuples whose versions happen to lie very close to the neutral one)
    assert tuples_with_gradient(rho_med) == 1.0
    assert tuples_with_gradient(rho_var) < 0.4
    with pytest.raises(ValueError, match="how"):
        ccd_bandwidth(attr, neutral, how="iqr")
