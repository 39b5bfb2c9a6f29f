"""Two-process CPU (gloo) check of every metric class: the synced result equals the single-process result.

Run by ``test_ddp.py`` in a subprocess (``python ddp_metrics_script.py``); exits non-zero with a traceback on any
mismatch. Each rank updates different batches, and rank 1 never sees group 2.
"""

from __future__ import annotations

import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from faircl.testing import run_then_leave

WORLD = 2
N = 600
NUM_GROUPS = 3


def make_data():
    gen = torch.Generator().manual_seed(0)
    g = torch.randint(-1, NUM_GROUPS, (N,), generator=gen)
    y6 = torch.randint(6, (N,), generator=gen)
    y2 = y6 % 2
    x = torch.randn(6, 16, generator=gen)[y6] + (1 + g.clamp_min(0)).unsqueeze(1) * torch.randn(N, 16, generator=gen)
    scores6 = (torch.randn(N, 6, generator=gen) + 2 * torch.nn.functional.one_hot(y6, 6)).to(torch.float16)
    pred2 = torch.where(torch.rand(N, generator=gen) < 0.3 + 0.2 * g.clamp_min(0), y2, 1 - y2)
    attr = torch.randn(N, 2, 8, generator=gen)
    neutral = torch.randn(N, 8, generator=gen)
    train_x = torch.randn(400, 16, generator=gen) + torch.randint(NUM_GROUPS, (400,), generator=gen).unsqueeze(1)
    train_a = (train_x.mean(1) > 1).long() + (train_x.mean(1) > 2).long()
    return dict(g=g, y6=y6, y2=y2, x=x, scores6=scores6, pred2=pred2, attr=attr, neutral=neutral,
                train_x=train_x, train_a=train_a)


def rank_rows(d, rank):
    """Rank 1 gets the odd rows that are not in group 2; rank 0 everything else."""
    idx = torch.arange(N)
    on_rank1 = (idx % 2 == 1) & (d["g"] != 2)
    return idx[on_rank1] if rank == 1 else idx[~on_rank1]


def build(sync: bool):
    from faircl.metrics import (
        CCEDGap,
        ClusterBalance,
        GroupFairness,
        GroupNMI,
        GroupRecallAtK,
        GroupUniformityKL,
        LinearLeakage,
    )

    kw = {} if sync else {"sync_on_compute": False}
    return {
        "GroupFairness(6)": (GroupFairness(6, NUM_GROUPS, **kw), lambda d, i: (d["scores6"][i], d["y6"][i], d["g"][i])),
        "GroupFairness(2)": (GroupFairness(2, NUM_GROUPS, **kw), lambda d, i: (d["pred2"][i], d["y2"][i], d["g"][i])),
        "LinearLeakage": (LinearLeakage(**kw), lambda d, i: (d["x"][i], d["g"][i])),
        "GroupRecallAtK": (GroupRecallAtK(1, NUM_GROUPS, chunk_size=64, **kw),
                           lambda d, i: (d["x"][i], d["y6"][i], d["g"][i])),
        "GroupNMI": (GroupNMI(6, NUM_GROUPS, n_init=3, **kw), lambda d, i: (d["x"][i], d["y6"][i], d["g"][i])),
        "GroupUniformityKL": (GroupUniformityKL(NUM_GROUPS, **kw), lambda d, i: (d["x"][i], d["g"][i])),
        "ClusterBalance": (ClusterBalance(4, n_init=3, **kw), lambda d, i: (d["x"][i],)),
        "CCEDGap": (CCEDGap(**kw), lambda d, i: (d["attr"][i], d["neutral"][i])),
    }


def assert_same(name, got, ref):
    if isinstance(ref, dict):
        assert got.keys() == ref.keys(), (name, got.keys(), ref.keys())
        for key in ref:
            assert_same(f"{name}[{key}]", got[key], ref[key])
        return
    if name.startswith("GroupFairness"):
        # integer count states: bit-identical
        assert torch.equal(torch.nan_to_num(got, nan=-7.0), torch.nan_to_num(ref, nan=-7.0)), (name, got, ref)
    else:
        torch.testing.assert_close(got, ref, rtol=1e-9, atol=1e-12, equal_nan=True, msg=name)


def worker(rank: int, port: int) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        d = make_data()
        mine = rank_rows(d, rank)
        if rank == 1:
            assert not (d["g"][mine] == 2).any()
        order = torch.cat([rank_rows(d, r) for r in range(WORLD)])   # the order in which cat states are gathered
        synced, reference = build(sync=True), build(sync=False)
        for name, (metric, args) in synced.items():
            if name == "LinearLeakage":
                metric.fit(d["train_x"], d["train_a"])
                reference[name][0].fit(d["train_x"], d["train_a"])
            # uneven batches, a different number on each rank
            for batch in torch.tensor_split(mine, 3 + rank):
                metric.update(*args(d, batch))
            ref_metric = reference[name][0]
            ref_metric.update(*args(d, order))
            assert_same(name, metric.compute(), ref_metric.compute())
        dist.barrier()
        if rank == 0:
            print("OK " + " ".join(synced))
    except BaseException:
        dist.destroy_process_group()  # on an error only: run_then_leave ends a finished rank without a teardown
        raise


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    mp.spawn(run_then_leave, args=(worker, free_port()), nprocs=WORLD, join=True)
    sys.exit(0)
