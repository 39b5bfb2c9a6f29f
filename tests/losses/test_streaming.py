"""The block-by-block (linear-memory) contrastive losses equal the dense losses and literal loops over the formulas."""

from __future__ import annotations

import math

import pytest
import torch

from faircl.losses import cs_infonce_loss, fcl_loss, nt_xent_loss, supcon_loss
from faircl.losses.streaming import (
    cs_infonce_streaming,
    fcl_streaming,
    masked_logsumexp,
    nt_xent_streaming,
    supcon_streaming,
)
from faircl.mining import fair_negative_weights

TAU = 0.3


def batch(n: int = 24, d: int = 5, classes: int = 3, groups: int = 2, seed: int = 0, unknown: bool = True):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.randint(-1 if unknown else 0, classes, (n,), generator=g)
    a = torch.randint(-1 if unknown else 0, groups, (n,), generator=g)
    return z, y, a


def value_and_grad(fn, z):
    z = z.detach().clone().requires_grad_(True)
    out = fn(z)
    (grad,) = torch.autograd.grad(out.sum(), z, allow_unused=True)
    return out.detach(), torch.zeros_like(z) if grad is None else grad


def assert_same(fn_dense, fn_stream, z, tol=1e-10):
    v1, g1 = value_and_grad(fn_dense, z)
    v2, g2 = value_and_grad(fn_stream, z)
    torch.testing.assert_close(v2, v1, rtol=tol, atol=tol)
    torch.testing.assert_close(g2, g1, rtol=tol, atol=tol)
    assert torch.isfinite(g2).all()


# ---------------------------------------------------------------- the kernel against a literal loop


def literal_lse(zq, zk, tau, self_index, q_block=None, k_block=None, table=None, q_row=None, k_col=None):
    out = []
    for i in range(zq.shape[0]):
        total = 0.0
        for k in range(zk.shape[0]):
            if k == int(self_index[i]):
                continue
            if q_block is not None and int(q_block[i]) != int(k_block[k]):
                continue
            w = 1.0 if table is None else math.exp(float(table[int(q_row[i]), int(k_col[k])]))
            total += w * math.exp(float(zq[i] @ zk[k]) / tau)
        out.append(math.log(total) if total > 0 else 0.0)
    return torch.tensor(out, dtype=torch.float64)


@pytest.mark.parametrize("block_size", [1, 3, 7, 100])
def test_masked_logsumexp_matches_literal_loop(block_size):
    g = torch.Generator().manual_seed(1)
    zk = torch.randn(11, 4, generator=g, dtype=torch.float64)
    index = torch.tensor([9, 0, 4, 5, 10, 2])
    zq = zk[index]
    k_block = torch.randint(0, 3, (11,), generator=g)
    k_block[7] = 5  # a block with a single row: empty denominator for that row if it is an anchor
    q_block = k_block[index]
    table = torch.randn(4, 6, generator=g, dtype=torch.float64)
    table[0, 2] = float("-inf")
    q_row = torch.randint(0, 4, (6,), generator=g)
    k_col = torch.randint(0, 6, (11,), generator=g)
    got = masked_logsumexp(zq, zk, TAU, self_index=index, block_size=block_size)
    torch.testing.assert_close(got, literal_lse(zq, zk, TAU, index))
    got = masked_logsumexp(zq, zk, TAU, self_index=index, q_block=q_block, k_block=k_block, block_size=block_size)
    torch.testing.assert_close(got, literal_lse(zq, zk, TAU, index, q_block, k_block))
    got = masked_logsumexp(
        zq, zk, TAU, self_index=index, log_weights=table, q_weight_row=q_row, k_weight_col=k_col, block_size=block_size
    )
    torch.testing.assert_close(got, literal_lse(zq, zk, TAU, index, table=table, q_row=q_row, k_col=k_col))
    alone = torch.tensor([7])
    got = masked_logsumexp(zk[alone], zk, TAU, self_index=alone, q_block=k_block[alone], k_block=k_block)
    assert got.tolist() == [0.0]


@pytest.mark.parametrize("blocks", [False, True])
def test_masked_logsumexp_gradcheck(blocks):
    g = torch.Generator().manual_seed(2)
    zk = torch.randn(7, 3, generator=g, dtype=torch.float64, requires_grad=True)
    index = torch.tensor([1, 4, 6])
    k_block = torch.tensor([0, 1, 0, 1, 1, 0, 2]) if blocks else None
    q_block = k_block[index] if blocks else None
    zq = torch.randn(3, 3, generator=g, dtype=torch.float64, requires_grad=True)

    def fn(zq, zk):
        return masked_logsumexp(zq, zk, 0.7, self_index=index, q_block=q_block, k_block=k_block, block_size=2)

    assert torch.autograd.gradcheck(fn, (zq, zk))
    assert torch.autograd.gradcheck(lambda z: masked_logsumexp(z, z, 0.7, block_size=3), (zk,))


def literal_supcon(z, labels, tau):
    u = torch.nn.functional.normalize(z.detach(), dim=1).tolist()
    y = labels.tolist()
    terms = []
    for i in range(len(y)):
        others = [k for k in range(len(y)) if k != i]
        pos = [p for p in others if y[i] >= 0 and y[p] == y[i]]
        if not pos:
            continue
        den = sum(math.exp(sum(a * b for a, b in zip(u[i], u[k])) / tau) for k in others)
        terms.append(-sum(sum(a * b for a, b in zip(u[i], u[p])) / tau - math.log(den) for p in pos) / len(pos))
    return sum(terms) / len(terms) if terms else 0.0


def test_supcon_streaming_matches_literal_loop():
    z, y, _ = batch(n=17)
    got = supcon_streaming(z, y, TAU, True, "mean", block_size=4)
    assert got.item() == pytest.approx(literal_supcon(z, y, TAU), rel=1e-12)


# ---------------------------------------------------------------- every loss against its dense path

SUPCON_REDUCTIONS = ["mean", "sum", "none", "confair"]


@pytest.mark.parametrize("reduction", SUPCON_REDUCTIONS)
@pytest.mark.parametrize("block_size", [1, 5, None])
@pytest.mark.parametrize("seed", [0, 1])
def test_supcon_and_fcl_equal_dense(reduction, block_size, seed):
    z, y, a = batch(seed=seed)
    y_known = y.clamp(min=0)
    assert_same(
        lambda z: supcon_loss(z, y, TAU, reduction=reduction),
        lambda z: supcon_streaming(z, y, TAU, True, reduction, block_size=block_size),
        z,
    )
    assert_same(
        lambda z: fcl_loss(z, y, a, TAU, reduction=reduction),
        lambda z: fcl_streaming(z, y, a, TAU, "none", True, reduction, block_size=block_size),
        z,
    )
    assert_same(
        lambda z: fcl_loss(z, y_known, a, TAU, conditioning="class", reduction=reduction),
        lambda z: fcl_streaming(z, y_known, a, TAU, "class", True, reduction, block_size=block_size),
        z,
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("block_size", [1, 4, None])
def test_cs_infonce_equals_dense(reduction, normalize, block_size):
    z, y, a = batch(n=24, classes=2)
    n = 12
    assert_same(
        lambda z: cs_infonce_loss(
            z[:n], z[n:], y[:n].clamp(min=0), a[:n], TAU, normalize=normalize, reduction=reduction
        ),
        lambda z: cs_infonce_streaming(
            z[:n], z[n:], y[:n].clamp(min=0), a[:n], TAU, normalize, reduction, block_size=block_size
        ),
        z,
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("extra", [False, True])
@pytest.mark.parametrize("block_size", [1, 5, None])
def test_nt_xent_equals_dense(reduction, weighted, extra, block_size):
    z, _, _ = batch(n=20)
    n = 10
    g = torch.Generator().manual_seed(3)
    clusters = torch.randint(0, 3, (n,), generator=g)
    weights = fair_negative_weights(z[:n], clusters, 3) if weighted else None
    extra_pos = torch.randint(-1, n, (n,), generator=g) if extra else None
    assert_same(
        lambda z: nt_xent_loss(
            z[:n], z[n:], TAU, negative_weights=weights, extra_positives=extra_pos, reduction=reduction
        ),
        lambda z: nt_xent_streaming(z[:n], z[n:], TAU, weights, extra_pos, True, reduction, block_size=block_size),
        z,
    )


def test_nt_xent_zero_weights_keep_only_positives():
    z, _, _ = batch(n=12)
    n = 6
    weights = torch.rand(n, n, dtype=torch.float64)
    weights[2] = 0.0  # row 2: every negative has weight 0
    assert_same(
        lambda z: nt_xent_loss(z[:n], z[n:], TAU, negative_weights=weights, reduction="none"),
        lambda z: nt_xent_streaming(z[:n], z[n:], TAU, weights, None, True, "none", block_size=2),
        z,
    )


# ---------------------------------------------------------------- degenerate batches


DEGENERATE = {
    "one class": torch.zeros(9, dtype=torch.long),
    "no positives": torch.arange(9),
    "all unknown": torch.full((9,), -1),
    "one known pair": torch.tensor([-1, 3, -1, -1, 3, -1, -1, -1, -1]),
}


@pytest.mark.parametrize("name", list(DEGENERATE))
@pytest.mark.parametrize("reduction", SUPCON_REDUCTIONS)
def test_degenerate_batches(name, reduction):
    labels = DEGENERATE[name]
    z, _, _ = batch(n=9)
    groups = torch.tensor([0, 1, 0, 1, 0, 1, 0, 1, -1])
    assert_same(
        lambda z: supcon_loss(z, labels, TAU, reduction=reduction),
        lambda z: supcon_streaming(z, labels, TAU, True, reduction, block_size=2),
        z,
    )
    assert_same(
        lambda z: fcl_loss(z, labels.clamp(min=0), groups, TAU, conditioning="class", reduction=reduction),
        lambda z: fcl_streaming(z, labels.clamp(min=0), groups, TAU, "class", True, reduction, block_size=2),
        z,
    )


def test_single_row_and_single_pair():
    z, y, a = batch(n=2)
    for reduction in SUPCON_REDUCTIONS:
        assert_same(
            lambda z: supcon_loss(z[:1], y[:1], TAU, reduction=reduction),
            lambda z: supcon_streaming(z[:1], y[:1], TAU, True, reduction),
            z,
        )
    for reduction in ["mean", "sum", "none"]:
        assert_same(
            lambda z: cs_infonce_loss(z[:1], z[1:], y[:1].clamp(min=0), a[:1], TAU, reduction=reduction),
            lambda z: cs_infonce_streaming(z[:1], z[1:], y[:1].clamp(min=0), a[:1], TAU, True, reduction),
            z,
        )
        assert_same(
            lambda z: nt_xent_loss(z[:1], z[1:], TAU, reduction=reduction),
            lambda z: nt_xent_streaming(z[:1], z[1:], TAU, None, None, True, reduction),
            z,
        )


def test_no_valid_anchor_is_zero_with_graph():
    z = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    loss = supcon_streaming(z, torch.arange(5), TAU, True, "mean", block_size=2)
    assert loss.item() == 0.0
    loss.backward()
    assert torch.equal(z.grad, torch.zeros_like(z))


# ---------------------------------------------------------------- gradcheck, precision, memory


def test_gradcheck_losses():
    g = torch.Generator().manual_seed(4)
    z = torch.randn(8, 3, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 0, 1, 1, 1, -1, 2, 0])
    a = torch.tensor([0, 1, 0, 1, 1, 0, -1, 1])
    w = torch.rand(4, 4, generator=g, dtype=torch.float64)
    extra = torch.tensor([2, -1, 0, 3])
    checks = [
        lambda z: supcon_streaming(z, y, 0.5, True, "mean", block_size=3),
        lambda z: fcl_streaming(z, y.clamp(min=0), a, 0.5, "class", True, "mean", block_size=3),
        lambda z: cs_infonce_streaming(z[:4], z[4:], y[:4].clamp(min=0), a[:4], 0.5, False, "sum", block_size=3),
        lambda z: nt_xent_streaming(z[:4], z[4:], 0.5, w, extra, True, "mean", block_size=3),
    ]
    for fn in checks:
        assert torch.autograd.gradcheck(fn, (z,))


def test_autocast_keeps_float32():
    z, y, _ = batch(n=16)
    z32 = z.float()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        inside = supcon_streaming(z32.bfloat16(), y, TAU, True, "mean", block_size=4)
    assert inside.dtype == torch.float32
    expected = supcon_streaming(z32.bfloat16().float(), y, TAU, True, "mean", block_size=4)
    torch.testing.assert_close(inside, expected)


def test_saves_no_square_tensor():
    """Between forward and backward, only O(B·d) tensors are kept (no [B, B] similarity, mask or softmax)."""
    n, d = 1500, 16
    z = torch.randn(n, d, requires_grad=True)
    y = torch.randint(0, 4, (n,))
    w = torch.rand(n // 2, n // 2)
    biggest = []

    def pack(t):
        biggest.append(t.numel())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        losses = [
            supcon_streaming(z, y, TAU, True, "mean", block_size=100),
            fcl_streaming(z, y, y, TAU, "class", True, "mean", block_size=100),
            cs_infonce_streaming(z[: n // 2], z[n // 2 :], y[: n // 2], y[: n // 2], TAU, True, "mean", block_size=100),
            nt_xent_streaming(z[: n // 2], z[n // 2 :], TAU, None, None, True, "mean", block_size=100),
        ]
    assert max(biggest) <= n * d
    sum(losses).backward()
    assert torch.isfinite(z.grad).all()


# ---------------------------------------------------------------- dispatch of the public losses


def test_public_losses_stream_above_the_dense_limit(monkeypatch):
    import faircl.losses.streaming as streaming

    z, y, a = batch(n=40, unknown=False)
    n = 20
    w = fair_negative_weights(z[:n], torch.randint(0, 3, (n,), generator=torch.Generator().manual_seed(5)), 3)
    public = {
        "supcon": lambda z: supcon_loss(z, y, TAU),
        "fcl": lambda z: fcl_loss(z, y, a, TAU, conditioning="class"),
        "cs": lambda z: cs_infonce_loss(z[:n], z[n:], y[:n], a[:n], TAU),
        "nt_xent": lambda z: nt_xent_loss(z[:n], z[n:], TAU, negative_weights=w),
    }
    dense = {name: value_and_grad(fn, z) for name, fn in public.items()}
    calls = []
    original = streaming._MaskedLSE.apply

    def counting(*args):
        calls.append(args[0].shape[0])
        return original(*args)

    monkeypatch.setattr(streaming._MaskedLSE, "apply", counting)
    assert not calls
    monkeypatch.setattr(streaming, "DENSE_MAX_ROWS", 16)
    for name, fn in public.items():
        before = len(calls)
        v, g = value_and_grad(fn, z)
        assert len(calls) == before + 1, name  # took the streamed path
        torch.testing.assert_close(v, dense[name][0], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(g, dense[name][1], rtol=1e-10, atol=1e-12)


def test_public_block_size_forces_streaming_and_matches():
    z, y, a = batch(n=16)
    n = 8
    for reduction in SUPCON_REDUCTIONS:
        assert_same(
            lambda z: supcon_loss(z, y, TAU, reduction=reduction),
            lambda z: supcon_loss(z, y, TAU, reduction=reduction, block_size=3),
            z,
        )
    assert_same(lambda z: fcl_loss(z, y, a, TAU), lambda z: fcl_loss(z, y, a, TAU, block_size=2), z)
    assert_same(
        lambda z: cs_infonce_loss(z[:n], z[n:], y[:n].clamp(min=0), a[:n], TAU),
        lambda z: cs_infonce_loss(z[:n], z[n:], y[:n].clamp(min=0), a[:n], TAU, block_size=2),
        z,
    )
    extra = torch.tensor([1, -1, 0, 5, 5, -1, 2, 7])
    assert_same(
        lambda z: nt_xent_loss(z[:n], z[n:], TAU, extra_positives=extra),
        lambda z: nt_xent_loss(z[:n], z[n:], TAU, extra_positives=extra, block_size=3),
        z,
    )
    # Row-level weights have no streamed form: they keep the dense path.
    w_rows = torch.rand(2 * n, 2 * n, dtype=torch.float64)
    assert_same(
        lambda z: nt_xent_loss(z[:n], z[n:], TAU, negative_weights=w_rows),
        lambda z: nt_xent_loss(z[:n], z[n:], TAU, negative_weights=w_rows, block_size=3),
        z,
    )
    # Without a process group, gathering changes nothing.
    assert_same(lambda z: supcon_loss(z, y, TAU), lambda z: supcon_loss(z, y, TAU, gather_distributed=True), z)


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError)])
def test_block_size_is_validated(bad, error):
    z, y, _ = batch(n=6)
    with pytest.raises(error, match="block_size"):
        supcon_loss(z, y, TAU, block_size=bad)


def test_streamed_weights_shape_is_checked():
    z, _, _ = batch(n=8)
    with pytest.raises(ValueError, match="negative_weights"):
        nt_xent_loss(z[:4], z[4:], TAU, negative_weights=torch.rand(4, 3), block_size=2)
    with pytest.raises(ValueError, match="negative_weights"):
        nt_xent_loss(z[:4], z[4:], TAU, negative_weights=-torch.rand(4, 4), block_size=2)


def test_default_tiles_follow_the_device(monkeypatch):
    """CPU tiles stay cache-sized; an accelerator's default tiles are larger (launch-bound otherwise)."""
    from faircl.losses import _lse_tiles
    from faircl.losses.streaming import TILE_ELEMENTS, TILE_ELEMENTS_ACCELERATOR, tile_elements

    assert tile_elements(torch.device("cpu")) == TILE_ELEMENTS
    assert tile_elements(torch.device("cuda")) == tile_elements(torch.device("mps")) == TILE_ELEMENTS_ACCELERATOR
    assert TILE_ELEMENTS_ACCELERATOR > TILE_ELEMENTS
    seen = []
    real = _lse_tiles._MaskedLSE.apply
    monkeypatch.setattr(_lse_tiles._MaskedLSE, "apply", lambda *a: seen.append(a[-1].rows_per_tile) or real(*a))
    z = torch.nn.functional.normalize(torch.randn(300, 8), dim=1)
    monkeypatch.setattr(_lse_tiles, "tile_elements", lambda device: 300 * 100)  # as an accelerator's tiles would
    wide = masked_logsumexp(z, z, 0.1)
    monkeypatch.setattr(_lse_tiles, "tile_elements", lambda device: 300 * 5)
    narrow = masked_logsumexp(z, z, 0.1)
    assert seen == [100, _lse_tiles.MIN_TILE_ROWS]
    torch.testing.assert_close(wide, narrow)
