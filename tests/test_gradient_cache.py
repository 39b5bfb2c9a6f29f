"""GradientCache: chunked backward equals the full-batch backward."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from faircl.losses import cs_infonce_loss, supcon_loss
from faircl.utils import GradientCache, all_gather_with_grad, split_batch


def make_encoder(dropout: float = 0.0) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Dropout(dropout), nn.Linear(16, 5)).double()


def grads(module: nn.Module) -> list[torch.Tensor]:
    return [p.grad.clone() for p in module.parameters()]


def data(n: int = 22):
    g = torch.Generator().manual_seed(1)
    x1 = torch.randn(n, 6, generator=g, dtype=torch.float64)
    x2 = x1 + 0.2 * torch.randn(n, 6, generator=g, dtype=torch.float64)
    y = torch.randint(0, 2, (n,), generator=g)
    a = torch.randint(0, 2, (n,), generator=g)
    return x1, x2, y, a


@pytest.mark.parametrize("chunk", [1, 5, 8, 22, 64])
def test_two_view_cs_infonce_gradients_equal_full_batch(chunk):
    x1, x2, y, a = data()
    enc = make_encoder()
    full = cs_infonce_loss(enc(x1), enc(x2), y, a, temperature=0.5)
    full.backward()
    expected = grads(enc)
    enc.zero_grad()
    loss = GradientCache(enc, cs_infonce_loss, chunk_size=chunk)(x1, x2, labels=y, groups=a, temperature=0.5)
    assert loss.item() == pytest.approx(full.item(), abs=1e-12)
    assert not loss.requires_grad
    for got, exp in zip(grads(enc), expected):
        torch.testing.assert_close(got, exp, rtol=1e-5, atol=1e-10)


def test_loss_parameters_get_gradients_and_grads_accumulate():
    x1, _, y, _ = data()
    enc = make_encoder()
    log_tau = nn.Parameter(torch.tensor(-1.0, dtype=torch.float64))

    def scaled(z, labels):
        return supcon_loss(z * log_tau.exp(), labels, temperature=1.0, normalize=False)

    full = scaled(enc(x1), y)
    full.backward()
    expected = grads(enc) + [log_tau.grad.clone()]
    enc.zero_grad()
    log_tau.grad = None
    GradientCache(enc, scaled, chunk_size=4)(x1, labels=y)
    got = grads(enc) + [log_tau.grad.clone()]
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-10)
    GradientCache(enc, scaled, chunk_size=4)(x1, labels=y)  # second call adds, like loss.backward()
    for g, e in zip(grads(enc), expected):
        torch.testing.assert_close(g, 2 * e, rtol=1e-5, atol=1e-10)


def test_dropout_masks_are_replayed():
    """With dropout, the cached pass and the recomputation must see the same masks: compare to a graph-keeping
    chunked forward that draws from the same random stream."""
    x1, x2, y, a = data(12)
    enc = make_encoder(dropout=0.5)
    enc.train()
    torch.manual_seed(123)
    reps = [torch.cat([enc(c) for c in x.split(5)]) for x in (x1, x2)]
    cs_infonce_loss(*reps, y, a).backward()
    expected = grads(enc)
    enc.zero_grad()
    torch.manual_seed(123)
    GradientCache(enc, cs_infonce_loss, chunk_size=5)(x1, x2, labels=y, groups=a)
    for got, exp in zip(grads(enc), expected):
        torch.testing.assert_close(got, exp, rtol=1e-5, atol=1e-10)


def test_one_encoder_per_input_and_dict_and_list_batches():
    x1, x2, y, a = data(10)
    enc_q, enc_d = make_encoder(), make_encoder()
    with torch.no_grad():
        for p in enc_d.parameters():
            p.mul_(0.5)
    cs_infonce_loss(enc_q(x1), enc_d(x2), y, a).backward()
    expected = grads(enc_q) + grads(enc_d)
    enc_q.zero_grad()
    enc_d.zero_grad()
    GradientCache([lambda b: enc_q(b["x"]), lambda b: enc_d(torch.stack(b))], cs_infonce_loss, chunk_size=3)(
        {"x": x1, "idx": torch.arange(10)}, list(x2), labels=y, groups=a
    )
    for got, exp in zip(grads(enc_q) + grads(enc_d), expected):
        torch.testing.assert_close(got, exp, rtol=1e-5, atol=1e-10)


def test_split_batch_and_errors():
    assert [len(c) for c in split_batch(["a", "b", "c", "d", "e"], 2)] == [2, 2, 1]
    chunks = split_batch({"ids": torch.zeros(5, 3), "mask": torch.ones(5, 3)}, 3)
    assert [c["ids"].shape[0] for c in chunks] == [3, 2]
    with pytest.raises(ValueError, match="different lengths"):
        split_batch({"a": torch.zeros(5), "b": torch.zeros(2)}, 3)
    with pytest.raises(TypeError, match="cannot split"):
        split_batch(3.0, 2)
    with pytest.raises(ValueError, match="chunk_size"):
        GradientCache(make_encoder(), supcon_loss, chunk_size=0)
    with pytest.raises(ValueError, match="encoders"):
        GradientCache([make_encoder()], cs_infonce_loss, chunk_size=2)(torch.zeros(2, 6), torch.zeros(2, 6))


def test_all_gather_is_identity_without_process_group():
    x = torch.randn(3, 2)
    assert all_gather_with_grad(x) is x
