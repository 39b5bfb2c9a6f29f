"""``gather_distributed=True`` on 2 CPU processes gives the single-process loss and gradients of the concatenated batch.

Each rank holds an uneven shard. After DDP's averaging (a mean over ranks of the parameter gradients, and so of
``W``-scaled input gradients), the gradients must equal those of the single-process loss on all shards
concatenated, and every rank must report the global loss value.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from faircl.losses import cs_infonce_loss, fcl_loss, nt_xent_loss, supcon_loss
from faircl.mining import fair_negative_weights

WORLD = 2
SIZES = (5, 8)  # examples per rank: uneven shards
TAU = 0.4


def global_data():
    g = torch.Generator().manual_seed(0)
    n = sum(SIZES)
    x1 = torch.randn(n, 4, generator=g, dtype=torch.float64)
    x2 = x1 + 0.5 * torch.randn(n, 4, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (n,), generator=g)
    y[3] = -1
    a = torch.randint(-1, 2, (n,), generator=g)
    clusters = torch.randint(0, 3, (n,), generator=g)
    extra = torch.randint(-1, 4, (n,), generator=g)  # indices into each rank's own examples
    weight = torch.randn(4, 4, generator=g, dtype=torch.float64)
    return x1, x2, y, a, clusters, extra, weight


def cases(x1, x2, y, a, clusters, extra, gather, block_size):
    """Loss name -> loss of the (local or global) batch; ``extra`` already holds indices valid for ``x1``."""
    kw = {"gather_distributed": gather, "block_size": block_size}
    both = torch.cat([x1, x2])
    return {
        "supcon": lambda: supcon_loss(both, torch.cat([y, y]), TAU, **kw),
        "supcon_sum": lambda: supcon_loss(x1, y, TAU, reduction="sum", **kw),
        "supcon_confair": lambda: supcon_loss(x1, y, TAU, reduction="confair", **kw),
        "fcl": lambda: fcl_loss(x1, y, a, TAU, **kw),
        "fcl_class": lambda: fcl_loss(x1, y.clamp(min=0), a, TAU, conditioning="class", **kw),
        "fcl_class_confair": lambda: fcl_loss(
            x1, y.clamp(min=0), a, TAU, conditioning="class", reduction="confair", **kw
        ),
        "cs": lambda: cs_infonce_loss(x1, x2, y.clamp(min=0), a, TAU, **kw),
        "cs_mean_raw": lambda: cs_infonce_loss(x1, x2, y.clamp(min=0), a, TAU, normalize=False, reduction="mean", **kw),
        "nt_xent": lambda: nt_xent_loss(x1, x2, TAU, **kw),
        "nt_xent_extra": lambda: nt_xent_loss(x1, x2, TAU, extra_positives=extra, **kw),
        "nt_xent_fair": lambda: nt_xent_loss(
            x1, x2, TAU, negative_weights=fair_negative_weights(x1, clusters, 3, gather_distributed=gather), **kw
        ),
        "nt_xent_fair_extra": lambda: nt_xent_loss(
            x1,
            x2,
            TAU,
            negative_weights=fair_negative_weights(x1, clusters, 3, gather_distributed=gather),
            extra_positives=extra,
            reduction="sum",
            **kw,
        ),
    }


def run_all(x1, x2, y, a, clusters, extra, weight, gather, block_size):
    """Value, input gradients and the gradient of a shared linear map for every loss."""
    out = {}
    names = list(cases(x1, x2, y, a, clusters, extra, gather, block_size))
    for name in names:
        w = weight.clone().requires_grad_(True)
        v1 = x1.clone().requires_grad_(True)
        v2 = x2.clone().requires_grad_(True)
        loss = cases(v1 @ w, v2 @ w, y, a, clusters, extra, gather, block_size)[name]()
        loss.backward()
        g1 = v1.grad if v1.grad is not None else torch.zeros_like(v1)
        g2 = v2.grad if v2.grad is not None else torch.zeros_like(v2)
        out[name] = (loss.detach(), g1, g2, w.grad.clone())
    return out



def _worker(rank: int, port: int, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        torch.set_num_threads(1)
        x1, x2, y, a, clusters, extra, weight = global_data()
        lo = sum(SIZES[:rank])
        part = slice(lo, lo + SIZES[rank])
        local_extra = torch.where(extra[part] < SIZES[rank], extra[part], -1)
        results = {}
        for block_size in (None, 3):
            got = run_all(x1[part], x2[part], y[part], a[part], clusters[part], local_extra, weight, True, block_size)
            for name, (loss, g1, g2, gw) in got.items():
                dist.all_reduce(gw)  # DDP: mean of the parameter gradients over ranks
                results[(name, block_size)] = (loss, g1 / WORLD, g2 / WORLD, gw / WORLD)
        torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.mark.ddp
def test_gathered_losses_equal_single_process_on_concatenated_batch(tmp_path, spawn_ddp):
    spawn_ddp(_worker, str(tmp_path), nprocs=WORLD)
    x1, x2, y, a, clusters, extra, weight = global_data()
    # The same extra positives as the ranks use, as indices into the concatenated batch.
    parts, lo = [], 0
    for size in SIZES:
        e = extra[lo : lo + size]
        parts.append(torch.where((e >= 0) & (e < size), e + lo, -1))
        lo += size
    expected = run_all(x1, x2, y, a, clusters, torch.cat(parts), weight, False, None)
    for rank in range(WORLD):
        got = torch.load(tmp_path / f"rank{rank}.pt")
        lo = sum(SIZES[:rank])
        part = slice(lo, lo + SIZES[rank])
        for (name, block_size), (loss, g1, g2, gw) in got.items():
            loss_e, g1_e, g2_e, gw_e = expected[name]
            msg = f"rank {rank}, {name}, block_size={block_size}"
            torch.testing.assert_close(loss, loss_e, rtol=1e-10, atol=1e-12, msg=msg)
            torch.testing.assert_close(g1, g1_e[part], rtol=1e-5, atol=1e-10, msg=msg)
            torch.testing.assert_close(g2, g2_e[part], rtol=1e-5, atol=1e-10, msg=msg)
            torch.testing.assert_close(gw, gw_e, rtol=1e-5, atol=1e-10, msg=msg)
