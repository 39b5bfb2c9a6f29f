"""Gradient cache inside the methods: a chunked step gives the parameter gradients of the plain large batch."""

from __future__ import annotations

import pytest
import torch

from typing import Any

import lightning as L
from torch.utils.data import DataLoader

from faircl.methods import CE, DML, INLP, Adversarial, ConFair, OneStageCL, PARADE, SimCLR, TwoStageCL
from faircl.models.encoders import register_encoder
from faircl.testing import quiet_trainer_kwargs

DIM = 6


@register_encoder("scale_test_mlp64", input_kinds=("features",))
class DoubleMLP(torch.nn.Module):
    """A float64 MLP with dropout (the library's MLP casts inputs to float32)."""

    def __init__(self, input_dim: int, hidden_dim: int = 8, dropout: float = 0.1) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(input_dim, hidden_dim), torch.nn.Tanh(),
                                       torch.nn.Dropout(dropout), torch.nn.Linear(hidden_dim, hidden_dim))
        self.out_dim = hidden_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def fixed_batch(n: int, seed: int = 0, two_views: bool = True) -> dict[str, torch.Tensor]:
    """A float64 batch dict with labels and groups such that every (a, y) cell has several rows."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, DIM, generator=g, dtype=torch.float64)
    batch = {"x": x, "y": torch.arange(n) % 2, "a": (torch.arange(n) // 2) % 2, "idx": torch.arange(n)}
    if two_views:
        batch["x2"] = x + 0.1 * torch.randn(n, DIM, generator=g, dtype=torch.float64)
    return batch


def method_kwargs(**over: Any) -> dict[str, Any]:
    """Tiny float64-friendly method arguments: SGD with lr 1, so one step moves each parameter by minus its grad."""
    kw: dict[str, Any] = dict(num_classes=2, num_groups=2, input_dim=DIM, encoder="scale_test_mlp64",
                              optimizer="sgd", lr=1.0, leakage=False)
    kw.update(over)
    return kw


def one_step_update(model: L.LightningModule, batch: dict[str, torch.Tensor], **trainer_kw: Any
                    ) -> dict[str, torch.Tensor]:
    """Parameter change of one optimiser step of ``model`` on ``batch`` (SGD, lr 1: the first step is −grad)."""
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    kw = quiet_trainer_kwargs(max_steps=1, limit_val_batches=0, precision="64-true", **trainer_kw)
    torch.manual_seed(123)
    L.Trainer(**kw).fit(model, train_dataloaders=DataLoader([batch], batch_size=None))
    return {k: (v.detach() - before[k]) for k, v in model.named_parameters()}

CASES = [
    (ConFair, {"temperature": 0.5}),
    (ConFair, {"temperature": 0.5, "fcl_conditioning": "class", "reduction": "confair"}),
    (TwoStageCL, {"stage1_epochs": 1, "proj_dim": 4, "temperature": 0.5}),
    (OneStageCL, {"proj_dim": 4, "temperature": 0.5}),
    (SimCLR, {"proj_dim": 4}),
    # the gradient cache is FairModule's, so methods without a contrastive loss train through it too
    (CE, {}),
    (INLP, {"stage1_epochs": 1}),
]


def _build(cls, extra, **over):
    torch.manual_seed(0)
    return cls(**method_kwargs(**extra, **over)).double()


@pytest.mark.parametrize("cls,extra", CASES, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("chunk", [3, 7])
def test_grad_cache_step_equals_plain_large_batch(cls, extra, chunk):
    batch = fixed_batch(16)
    plain = one_step_update(_build(cls, extra), batch)
    cached_model = _build(cls, extra, grad_cache_chunk=chunk)
    assert cached_model.automatic_optimization is False
    cached = one_step_update(cached_model, batch)
    moved = [k for k, v in plain.items() if v.abs().max() > 0]
    assert any(k.startswith("encoder") for k in moved)
    for name in plain:
        torch.testing.assert_close(cached[name], plain[name], rtol=1e-7, atol=1e-10, msg=name)


def test_two_stage_stage1_freezes_classifier_and_trains_encoder_with_cache():
    model = _build(TwoStageCL, {"stage1_epochs": 1, "proj_dim": 4}, grad_cache_chunk=5)
    update = one_step_update(model, fixed_batch(12))
    assert all(not p.requires_grad for p in model.classifier.parameters())
    assert all(float(v.abs().max()) == 0.0 for k, v in update.items() if k.startswith("classifier"))
    assert any(float(v.abs().max()) > 0.0 for k, v in update.items() if k.startswith("encoder"))


def test_grad_cache_chunk_must_be_positive():
    with pytest.raises(ValueError, match="grad_cache_chunk"):
        ConFair(**method_kwargs(grad_cache_chunk=0))


@pytest.mark.parametrize("cls", [Adversarial, DML, PARADE])
def test_methods_with_parameters_inside_the_loss_refuse_the_gradient_cache(cls):
    """Their discriminators / margins / proxies train inside ``losses``, which the cached backward does not reach."""
    assert not cls.supports_grad_cache
    with pytest.raises(ValueError, match=rf"grad_cache_chunk: {cls.__name__} does not train through the gradient"):
        cls(**method_kwargs(grad_cache_chunk=4))
