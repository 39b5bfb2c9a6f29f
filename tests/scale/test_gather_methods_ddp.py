"""Methods with ``gather_distributed=True`` on 2 CPU processes (gloo): one training step's DDP-averaged gradients
equal the single-process gradients on the concatenated batch, with and without the gradient cache."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from faircl.methods import ConFair, SimCLR, TwoStageCL
from faircl.models.encoders import register_encoder
from faircl.utils import GradientCache

WORLD, N, DIM = 2, 12, 6
CASES = {
    "ConFair": (ConFair, {"temperature": 0.5}),
    "ConFair_class": (ConFair, {"temperature": 0.5, "fcl_conditioning": "class"}),
    "TwoStageCL": (TwoStageCL, {"stage1_epochs": 1, "proj_dim": 4, "temperature": 0.5}),
    "TwoStageCL_paper": (TwoStageCL, {"stage1_epochs": 1, "proj_dim": 4, "cs_reduction": "paper"}),
    "SimCLR": (SimCLR, {"proj_dim": 4}),
}


@register_encoder("scale_test_ddp_mlp64", input_kinds=("features",))
class DoubleMLP(torch.nn.Module):
    def __init__(self, input_dim: int, hidden_dim: int = 8) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(input_dim, hidden_dim), torch.nn.Tanh(),
                                       torch.nn.Linear(hidden_dim, hidden_dim))
        self.out_dim = hidden_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def build(name: str, gather: bool):
    cls, extra = CASES[name]
    torch.manual_seed(0)
    model = cls(num_classes=2, num_groups=2, input_dim=DIM, encoder="scale_test_ddp_mlp64", leakage=False,
                gather_distributed=gather, **extra).double()
    model.on_stage_start(model.stage)  # freeze what the first stage does not train
    return model


def batch(rows: slice | None = None) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(N, DIM, generator=g, dtype=torch.float64)
    full = {"x": x, "x2": x + 0.2 * torch.randn(N, DIM, generator=g, dtype=torch.float64),
            "y": torch.randint(0, 2, (N,), generator=g), "a": torch.randint(0, 2, (N,), generator=g),
            "idx": torch.arange(N)}
    return full if rows is None else {k: v[rows] for k, v in full.items()}


def step_grads(model, b: dict[str, torch.Tensor], chunk: int | None) -> tuple[float, dict[str, torch.Tensor]]:
    model.zero_grad()
    if chunk is None:
        loss = model.losses(b, model(b["x"]))["loss"]
        loss.backward()
    else:
        def loss_fn(out, out2):
            with model.provide_second_view(out2):
                return model.losses(b, out)["loss"]
        loss = GradientCache(model, loss_fn, chunk, backward=torch.Tensor.backward)(b["x"], b["x2"])
    return float(loss), {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}


def _worker(rank: int, port: int, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        mine = slice(rank * N // WORLD, (rank + 1) * N // WORLD)
        results = {}
        for name in CASES:
            for chunk in (None, 4):
                loss, grads = step_grads(build(name, gather=True), batch(mine), chunk)
                for g in grads.values():  # DDP's gradient averaging
                    dist.all_reduce(g)
                    g /= WORLD
                results[(name, chunk)] = (loss, grads)
        torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()



@pytest.mark.ddp
def test_gathered_method_gradients_equal_single_process_big_batch(tmp_path, spawn_ddp):
    spawn_ddp(_worker, str(tmp_path), nprocs=WORLD)
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(WORLD)]
    for name in CASES:
        exp_loss, expected = step_grads(build(name, gather=False), batch(), None)
        assert any(k.startswith("encoder") for k in expected)
        for chunk in (None, 4):
            for r, res in enumerate(ranks):
                loss, grads = res[(name, chunk)]
                # eq. 2's sum is global on every rank; CE terms and per-anchor means are local values
                if name == "TwoStageCL_paper":
                    assert loss == pytest.approx(exp_loss, rel=1e-9), (name, chunk, r)
                assert sorted(grads) == sorted(expected), (name, chunk, r)
                for k in expected:
                    torch.testing.assert_close(grads[k], expected[k], rtol=1e-7, atol=1e-10,
                                               msg=f"{name} chunk={chunk} rank={r} {k}")


def test_without_gathering_two_processes_see_only_their_rows():
    """The flag matters: a local-only loss of half the batch differs from the global one."""
    loss_half, _ = step_grads(build("ConFair", gather=False), batch(slice(0, N // 2)), None)
    loss_full, _ = step_grads(build("ConFair", gather=False), batch(), None)
    assert loss_half != pytest.approx(loss_full, rel=1e-6)
