"""SupCon, FCL and CS-InfoNCE against literal loops over the papers' formulas and pytorch-metric-learning."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from faircl.losses import cs_infonce_loss, fcl_loss, supcon_loss

# ---------------------------------------------------------------- literal references (float64, plain Python loops)


def _unit(z: torch.Tensor) -> list[list[float]]:
    rows = z.detach().double().tolist()
    return [[v / math.sqrt(sum(x * x for x in r)) for v in r] for r in rows]


def _dot(u: list[float], v: list[float]) -> float:
    return sum(a * b for a, b in zip(u, v))


def ref_supcon_terms(z, labels, tau, rows=None, denom_rows=None):
    """Khosla/Shen eq. 2 per anchor: −1/|P(i)| Σ_p log(exp(z_i·z_p/τ) / Σ_{k≠i} exp(z_i·z_k/τ)); None if |P(i)|=0."""
    u = _unit(z)
    y = [int(v) for v in labels]
    n = len(y)
    rows = range(n) if rows is None else rows
    out = {}
    for i in rows:
        q = [k for k in (range(n) if denom_rows is None else denom_rows) if k != i]
        positives = [p for p in q if y[p] == y[i] and y[i] >= 0]
        if not positives:
            out[i] = None
            continue
        den = sum(math.exp(_dot(u[i], u[k]) / tau) for k in q)
        out[i] = -sum(math.log(math.exp(_dot(u[i], u[p]) / tau) / den) for p in positives) / len(positives)
    return out


def ref_supcon(z, labels, tau):
    terms = [t for t in ref_supcon_terms(z, labels, tau).values() if t is not None]
    return sum(terms) / len(terms) if terms else 0.0


def ref_confair(z, labels, tau):
    """The ConFair authors' reduction: Σ_p −log p / (1 + |P(i)|), averaged over all anchors."""
    u = _unit(z)
    y = [int(v) for v in labels]
    n = len(y)
    total = 0.0
    for i in range(n):
        q = [k for k in range(n) if k != i]
        positives = [p for p in q if y[p] == y[i] and y[i] >= 0]
        den = sum(math.exp(_dot(u[i], u[k]) / tau) for k in q)
        total += -sum(math.log(math.exp(_dot(u[i], u[p]) / tau) / den) for p in positives) / (1 + len(positives))
    return total / n


def ref_fcl_class(z, y, a, tau):
    """SupCon on the attribute computed inside each class, averaged over classes with a valid anchor."""
    y = [int(v) for v in y]
    losses = []
    for c in sorted(set(y)):
        rows = [i for i in range(len(y)) if y[i] == c]
        terms = [t for t in ref_supcon_terms(z, a, tau, rows=rows, denom_rows=rows).values() if t is not None]
        if terms:
            losses.append(sum(terms) / len(terms))
    return sum(losses) / len(losses) if losses else 0.0


def ref_cs_infonce(z1, z2, y, a, tau, normalize=True):
    """Chi et al. eq. 2 over the 2N rows: Σ_i 1/(N_{a_i,y_i} − 1) (−log ℓ_i); also the per-anchor −log ℓ_i."""
    rows = torch.cat([z1, z2]).detach().double()
    u = _unit(rows) if normalize else rows.tolist()
    n = z1.shape[0]
    yy = [int(v) for v in y] * 2
    aa = [int(v) for v in a] * 2
    total, terms = 0.0, []
    for i in range(2 * n):
        other = (i + n) % (2 * n)
        if aa[i] < 0:
            terms.append(0.0)
            continue
        cell = [k for k in range(2 * n) if aa[k] == aa[i] and yy[k] == yy[i]]
        den = sum(math.exp(_dot(u[i], u[k]) / tau) for k in cell if k != i)
        term = -math.log(math.exp(_dot(u[i], u[other]) / tau) / den)
        terms.append(term)
        total += term / (len(cell) - 1)
    return total, terms


# ---------------------------------------------------------------- fixtures


def random_batch(seed: int, n: int = 14, d: int = 6, classes: int = 3, groups: int = 2):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.randint(0, classes, (n,), generator=g)
    a = torch.randint(0, groups, (n,), generator=g)
    return z, y, a


def hand_batch():
    """Six hand-placed 2-D points: two tight clusters plus an outlier; labels make one anchor positive-less."""
    z = torch.tensor(
        [[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9], [-1.0, 0.0], [0.7, 0.7]], dtype=torch.float64
    )
    y = torch.tensor([0, 0, 1, 1, 2, 0])
    a = torch.tensor([0, 1, 0, 1, 0, 0])
    return z, y, a


# ---------------------------------------------------------------- SupCon


@pytest.mark.parametrize("tau", [0.1, 0.5, 2.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_supcon_matches_literal_loop(seed, tau):
    z, y, _ = random_batch(seed)
    y[3] = -1  # an unknown label: no term, never a positive, still a negative
    assert supcon_loss(z, y, temperature=tau).item() == pytest.approx(ref_supcon(z, y, tau), rel=1e-9, abs=1e-9)
    per = supcon_loss(z, y, temperature=tau, reduction="none")
    ref = ref_supcon_terms(z, y, tau)
    for i, t in ref.items():
        assert per[i].item() == pytest.approx(0.0 if t is None else t, abs=1e-9)
    assert supcon_loss(z, y, temperature=tau, reduction="sum").item() == pytest.approx(
        sum(t for t in ref.values() if t is not None), abs=1e-8
    )


def test_supcon_hand_made_and_confair_variant():
    z, y, _ = hand_batch()
    assert supcon_loss(z, y, 0.1).item() == pytest.approx(ref_supcon(z, y, 0.1), abs=1e-9)
    assert supcon_loss(z, y, 0.1, reduction="none")[4].item() == 0.0  # class 2 has one member
    assert supcon_loss(z, y, 0.1, reduction="confair").item() == pytest.approx(ref_confair(z, y, 0.1), abs=1e-9)


def test_supcon_two_views_stacked():
    z, y, _ = random_batch(3, n=8)
    z2 = z + 0.1 * torch.randn_like(z)
    stacked = torch.cat([z, z2])
    labels = torch.cat([y, y])
    assert supcon_loss(stacked, labels, 0.2).item() == pytest.approx(ref_supcon(stacked, labels, 0.2), abs=1e-9)


def test_supcon_matches_pytorch_metric_learning():
    pml = pytest.importorskip("pytorch_metric_learning.losses")
    for seed in range(3):
        z, y, _ = random_batch(seed, n=20)
        z = z.requires_grad_(True)
        ours = supcon_loss(z, y, temperature=0.07)
        (g_ours,) = torch.autograd.grad(ours, z)
        theirs = pml.SupConLoss(temperature=0.07)(z, y)
        (g_theirs,) = torch.autograd.grad(theirs, z)
        assert ours.item() == pytest.approx(theirs.item(), rel=1e-6)
        torch.testing.assert_close(g_ours, g_theirs, rtol=1e-6, atol=1e-9)


def test_supcon_without_normalisation():
    z, y, _ = random_batch(5, n=8)
    z = 0.3 * z
    got = supcon_loss(z, y, temperature=0.5, normalize=False)
    # reference: the same loop over raw dot products
    s = (z @ z.T / 0.5).tolist()
    terms = []
    for i in range(8):
        positives = [p for p in range(8) if p != i and y[p] == y[i]]
        if positives:
            den = sum(math.exp(s[i][k]) for k in range(8) if k != i)
            terms.append(-sum(s[i][p] - math.log(den) for p in positives) / len(positives))
    assert got.item() == pytest.approx(sum(terms) / len(terms), abs=1e-9)


# ---------------------------------------------------------------- FCL


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fcl_matches_literal_loops(seed):
    z, y, a = random_batch(seed, groups=3)
    a[0] = -1
    a[5] = -1
    assert fcl_loss(z, y, a, 0.1).item() == pytest.approx(ref_supcon(z, a, 0.1), abs=1e-9)
    assert fcl_loss(z, y, a, 0.1, conditioning="class").item() == pytest.approx(ref_fcl_class(z, y, a, 0.1), abs=1e-9)
    per = fcl_loss(z, y, a, 0.1, conditioning="class", reduction="none")
    for c in y.unique().tolist():
        rows = (y == c).nonzero().flatten().tolist()
        for i, t in ref_supcon_terms(z, a, 0.1, rows=rows, denom_rows=rows).items():
            assert per[i].item() == pytest.approx(0.0 if t is None else t, abs=1e-9)


def test_fcl_hand_made():
    z, y, a = hand_batch()
    assert fcl_loss(z, y, a, 0.5).item() == pytest.approx(ref_supcon(z, a, 0.5), abs=1e-9)
    assert fcl_loss(z, y, a, 0.5, conditioning="class").item() == pytest.approx(ref_fcl_class(z, y, a, 0.5), abs=1e-9)


def test_fcl_class_confair_reduction():
    z, y, a = random_batch(7, n=12)
    got = fcl_loss(z, y, a, 0.2, conditioning="class", reduction="confair")
    per_class = []
    for c in y.unique().tolist():
        rows = (y == c).nonzero().flatten()
        per_class.append(ref_confair(z[rows], a[rows], 0.2))
    assert got.item() == pytest.approx(sum(per_class) / len(per_class), abs=1e-9)


# ---------------------------------------------------------------- CS-InfoNCE


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("normalize", [True, False])
def test_cs_infonce_matches_literal_loop(seed, normalize):
    z1, y, a = random_batch(seed, n=12)
    z2 = z1 + 0.3 * torch.randn_like(z1)
    a[2] = -1
    scale = 1.0 if normalize else 0.4
    total, terms = ref_cs_infonce(scale * z1, scale * z2, y, a, 0.5, normalize)
    got = cs_infonce_loss(scale * z1, scale * z2, y, a, temperature=0.5, normalize=normalize)
    assert got.item() == pytest.approx(total, abs=1e-9)
    per = cs_infonce_loss(scale * z1, scale * z2, y, a, temperature=0.5, normalize=normalize, reduction="none")
    torch.testing.assert_close(per, torch.tensor(terms, dtype=torch.float64), atol=1e-9, rtol=0)
    mean = cs_infonce_loss(scale * z1, scale * z2, y, a, temperature=0.5, normalize=normalize, reduction="mean")
    assert mean.item() == pytest.approx(total / 24, abs=1e-9)


def test_cs_infonce_hand_made_singleton_cells_contribute_zero():
    z1, y, a = hand_batch()
    z2 = torch.flip(z1, dims=[1])
    total, terms = ref_cs_infonce(z1, z2, y, a, 0.1)
    per = cs_infonce_loss(z1, z2, y, a, 0.1, reduction="none")
    # cells (y=2, a=0) and (y=1, a=*) hold one example each: only the pair, so ℓ_i = 1
    for i in (2, 3, 4):
        assert per[i].item() == 0.0 and per[i + 6].item() == 0.0
    assert cs_infonce_loss(z1, z2, y, a, 0.1).item() == pytest.approx(total, abs=1e-9)


def test_cs_infonce_checks_inputs():
    z = torch.randn(4, 3)
    with pytest.raises(ValueError, match="same shape"):
        cs_infonce_loss(z, torch.randn(5, 3), torch.zeros(4, dtype=torch.long), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="labels"):
        cs_infonce_loss(z, z, torch.zeros(3, dtype=torch.long), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match=">= 0"):
        cs_infonce_loss(z, z, torch.tensor([0, -1, 0, 0]), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="temperature"):
        supcon_loss(z, torch.zeros(4, dtype=torch.long), temperature=0)
    with pytest.raises(ValueError, match="reduction"):
        supcon_loss(z, torch.zeros(4, dtype=torch.long), reduction="avg")
    with pytest.raises(TypeError, match="integers"):
        supcon_loss(z, torch.zeros(4))
    with pytest.raises(ValueError, match="conditioning"):
        fcl_loss(z, torch.zeros(4, dtype=torch.long), torch.zeros(4, dtype=torch.long), conditioning="group")


# ---------------------------------------------------------------- degenerate batches


def _all_losses(z, y, a):
    n = z.shape[0] // 2
    return {
        "supcon": supcon_loss(z, y),
        "supcon_confair": supcon_loss(z, y, reduction="confair"),
        "fcl": fcl_loss(z, y, a),
        "fcl_class": fcl_loss(z, y, a, conditioning="class"),
        "cs": cs_infonce_loss(z[:n], z[n : 2 * n], y[:n], a[:n]),
    }


def _assert_finite_with_grad(z, y, a, expect_zero=()):
    z = z.clone().requires_grad_(True)
    for name, loss in _all_losses(z, y, a).items():
        assert loss.requires_grad, name
        assert torch.isfinite(loss), name
        (g,) = torch.autograd.grad(loss, z)
        assert torch.isfinite(g).all(), name
        if name in expect_zero:
            assert loss.item() == 0.0, name
            assert g.abs().max().item() == 0.0, name


def test_degenerate_single_class_single_group():
    z = torch.randn(8, 4)
    same = torch.zeros(8, dtype=torch.long)
    _assert_finite_with_grad(z, same, same)


def test_degenerate_no_positives_returns_connected_zero():
    z = torch.randn(6, 4)
    distinct = torch.arange(6)
    unknown = torch.full((6,), -1)
    _assert_finite_with_grad(z, distinct, unknown, expect_zero=("supcon", "supcon_confair", "fcl", "fcl_class", "cs"))


def test_degenerate_single_row_and_cell_of_one():
    z = torch.randn(1, 4, requires_grad=True)
    loss = supcon_loss(z, torch.tensor([0]))
    assert loss.item() == 0.0 and loss.requires_grad
    loss.backward()
    assert torch.isfinite(z.grad).all()
    z1 = torch.randn(3, 4)
    # every (class, group) cell has one example
    got = cs_infonce_loss(z1, z1 + 0.1, torch.tensor([0, 1, 1]), torch.tensor([0, 0, 1]))
    assert got.item() == 0.0


def test_degenerate_all_attributes_unknown():
    z = torch.randn(10, 4)
    y = torch.randint(0, 2, (10,))
    unknown = torch.full((10,), -1)
    _assert_finite_with_grad(z, y, unknown, expect_zero=("fcl", "fcl_class", "cs"))


def test_degenerate_identical_embeddings_and_extreme_temperature():
    z = torch.ones(6, 3, requires_grad=True)
    y = torch.tensor([0, 0, 1, 1, 2, 2])
    for tau in (1e-3, 1e3):
        loss = supcon_loss(z, y, temperature=tau) + cs_infonce_loss(z[:3], z[3:], y[:3], y[:3] % 2, temperature=tau)
        (g,) = torch.autograd.grad(loss, z)
        assert torch.isfinite(loss) and torch.isfinite(g).all()


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=10),
    classes=st.integers(min_value=1, max_value=4),
    groups=st.integers(min_value=1, max_value=3),
    unknown_rate=st.sampled_from([0.0, 0.3, 1.0]),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_property_random_batch_compositions(n, classes, groups, unknown_rate, seed):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(2 * n, 3, generator=g, dtype=torch.float64)
    y = torch.randint(0, classes, (n,), generator=g).repeat(2)
    a = torch.randint(0, groups, (n,), generator=g)
    a[torch.rand(n, generator=g) < unknown_rate] = -1
    a = a.repeat(2)
    _assert_finite_with_grad(z, y, a)
    assert supcon_loss(z, y).item() == pytest.approx(ref_supcon(z, y, 0.1), abs=1e-8)
    assert fcl_loss(z, y, a).item() == pytest.approx(ref_supcon(z, a, 0.1), abs=1e-8)
    total, _ = ref_cs_infonce(z[:n], z[n:], y[:n], a[:n], 0.1)
    assert cs_infonce_loss(z[:n], z[n:], y[:n], a[:n]).item() == pytest.approx(total, abs=1e-8)
    for loss in _all_losses(z, y, a).values():
        assert loss.item() >= -1e-9


# ---------------------------------------------------------------- mixed precision


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_close_to_float32(dtype):
    torch.manual_seed(0)
    x = torch.randn(32, 16)
    proj = torch.nn.Linear(16, 8)
    y = torch.randint(0, 3, (32,))
    a = torch.randint(0, 2, (32,))

    def run():
        z = proj(x)
        n = 16
        return torch.stack(
            [
                supcon_loss(z, y),
                fcl_loss(z, y, a, conditioning="class"),
                cs_infonce_loss(z[:n], z[n:], y[:n], a[:n]),
            ]
        )

    ref = run()
    with torch.autocast("cpu", dtype=dtype):
        low = run()
    assert low.dtype == torch.float32  # logits and log-sum-exp stay in float32
    torch.testing.assert_close(low, ref, rtol=1e-2, atol=1e-3)


def test_float32_accuracy_at_low_temperature():
    """ConFair's τ = 0.01 on 256 rows: float32 stays close to the float64 value (no catastrophic cancellation)."""
    g = torch.Generator().manual_seed(9)
    z = torch.randn(256, 32, generator=g, dtype=torch.float64)
    y = torch.randint(0, 2, (256,), generator=g)
    a = torch.randint(0, 2, (256,), generator=g)
    for fn in (
        lambda v: supcon_loss(v, y, 0.01, reduction="none"),
        lambda v: fcl_loss(v, y, a, 0.01, conditioning="class", reduction="none"),
        lambda v: cs_infonce_loss(v[:128], v[128:], y[:128], a[:128], 0.01, reduction="none"),
    ):
        torch.testing.assert_close(fn(z.float()).double(), fn(z), rtol=1e-4, atol=1e-3)


def test_blockwise_and_full_masked_log_sum_exp_agree_with_gradients():
    """The padded per-block computation (balanced blocks) equals the full masked matrix (any blocks)."""
    from faircl.losses._common import _blockwise_logsumexp, _masked_logsumexp

    g = torch.Generator().manual_seed(11)
    z = torch.randn(40, 5, generator=g, dtype=torch.float64, requires_grad=True)
    block = torch.randint(0, 6, (40,), generator=g)
    block[7] = 99  # a block of one row: only its own (zero-gradient) entry remains
    w = torch.randn(40, generator=g, dtype=torch.float64)
    fast = _blockwise_logsumexp(z, block, 0.3)
    slow = _masked_logsumexp(z, block, None, 0.3)
    torch.testing.assert_close(fast, slow)
    g_fast = torch.autograd.grad((fast * w).sum(), z)[0]
    g_slow = torch.autograd.grad((slow * w).sum(), z)[0]
    torch.testing.assert_close(g_fast, g_slow)


def test_gradcheck_contrastive_losses():
    g = torch.Generator().manual_seed(12)
    z = torch.randn(10, 3, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 0, 1, 1, 1, 0, 0, 1, 1, 1])
    a = torch.tensor([0, 1, 0, 1, -1, 0, 0, 0, 1, 1])
    fns = [
        lambda v: supcon_loss(v, y, 0.5),
        lambda v: supcon_loss(v, y, 0.5, reduction="confair"),
        lambda v: fcl_loss(v, y, a, 0.5),
        lambda v: fcl_loss(v, y, a, 0.5, conditioning="class"),
        lambda v: cs_infonce_loss(v[:5], v[5:], y[:5], a[:5], 0.5),
        lambda v: cs_infonce_loss(v[:5], v[5:], y[:5], a[:5], 0.5, normalize=False),
    ]
    for fn in fns:
        assert torch.autograd.gradcheck(fn, (z,))
    # balanced blocks take the padded per-block path
    zb = torch.randn(18, 3, generator=g, dtype=torch.float64, requires_grad=True)
    yb = torch.arange(3).repeat(6)
    ab = torch.tensor([0, 1]).repeat(9)
    assert torch.autograd.gradcheck(lambda v: fcl_loss(v, yb, ab, 0.5, conditioning="class"), (zb,))
    assert torch.autograd.gradcheck(lambda v: cs_infonce_loss(v[:9], v[9:], yb[:9], ab[:9], 0.5), (zb,))
