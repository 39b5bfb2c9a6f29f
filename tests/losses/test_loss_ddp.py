"""A global-batch loss gathered over 2 CPU processes equals the single-process loss, and so do the gradients."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch import nn

from faircl.losses import cs_infonce_loss, fcl_loss, nt_xent_loss, supcon_loss
from faircl.utils import GradientCache, all_gather_with_grad

WORLD = 2
SIZES = (5, 7)  # uneven shards: the gather pads and trims


def global_batch():
    g = torch.Generator().manual_seed(0)
    n = sum(SIZES)
    x1 = torch.randn(n, 6, generator=g, dtype=torch.float64)
    x2 = x1 + 0.3 * torch.randn(n, 6, generator=g, dtype=torch.float64)
    y = torch.randint(0, 2, (n,), generator=g)
    a = torch.randint(-1, 2, (n,), generator=g)
    return x1, x2, y, a


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4)).double()


def losses(z1, z2, y, a):
    return {
        "supcon": supcon_loss(torch.cat([z1, z2]), torch.cat([y, y]), temperature=0.2),
        "fcl_class": fcl_loss(z1, y, a, temperature=0.2, conditioning="class"),
        "cs": cs_infonce_loss(z1, z2, y, a, temperature=0.5),
        "nt_xent": nt_xent_loss(z1, z2),
    }



def _worker(rank: int, port: int, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        x1, x2, y, a = global_batch()
        lo = sum(SIZES[:rank])
        part = slice(lo, lo + SIZES[rank])
        net = nn.parallel.DistributedDataParallel(model())
        results = {}
        for name in losses(x1[:2], x2[:2], y[:2], a[:2]):
            net.zero_grad()
            z1 = all_gather_with_grad(net(x1[part]))
            z2 = all_gather_with_grad(net(x2[part]))
            labels = all_gather_with_grad(y[part])
            groups = all_gather_with_grad(a[part])
            loss = losses(z1, z2, labels, groups)[name]
            loss.backward()  # DDP averages the parameter gradients over the ranks
            results[name] = (loss.detach(), [p.grad.clone() for p in net.parameters()])

        # The gradient cache under DDP: chunks without sync, loss on the gathered cached embeddings.
        net.zero_grad()

        def global_cs(z1, z2):
            return cs_infonce_loss(all_gather_with_grad(z1), all_gather_with_grad(z2), y, a, temperature=0.5)

        loss = GradientCache(net, global_cs, chunk_size=2)(x1[part], x2[part])
        results["cs_cached"] = (loss, [p.grad.clone() for p in net.parameters()])
        net.zero_grad()
        loss = GradientCache(lambda x: net(x), global_cs, chunk_size=3, ddp_module=net)(x1[part], x2[part])
        results["cs_cached_lambda"] = (loss, [p.grad.clone() for p in net.parameters()])
        torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.mark.ddp
def test_gathered_global_loss_and_gradients_equal_single_process(tmp_path, spawn_ddp):
    spawn_ddp(_worker, str(tmp_path), nprocs=WORLD)
    x1, x2, y, a = global_batch()
    net = model()
    expected = {}
    for name in losses(x1[:2], x2[:2], y[:2], a[:2]):
        net.zero_grad()
        loss = losses(net(x1), net(x2), y, a)[name]
        loss.backward()
        expected[name] = (loss.detach(), [p.grad.clone() for p in net.parameters()])
    expected["cs_cached"] = expected["cs_cached_lambda"] = expected["cs"]
    for rank in range(WORLD):
        got = torch.load(tmp_path / f"rank{rank}.pt")
        for name, (loss, grads) in expected.items():
            assert got[name][0].item() == pytest.approx(loss.item(), abs=1e-10), (rank, name)
            for g_got, g_exp in zip(got[name][1], grads):
                torch.testing.assert_close(g_got, g_exp, rtol=1e-7, atol=1e-10, msg=f"rank {rank}, {name}")
