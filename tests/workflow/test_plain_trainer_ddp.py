"""A plain ``L.Trainer(devices=2, strategy="ddp_spawn" | "ddp")`` with its default arguments (Lightning's
``use_distributed_sampler=True``) gives exactly the single-process test report with every faircl sampler: the
datamodule's loaders are already sharded per rank, and Lightning must neither re-shard nor fail to re-wrap them."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import lightning as L
import pytest

from faircl.data.base import SAMPLERS
from faircl.utils import quiet_trainer_kwargs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from ddp_plain_trainer_script import build  # noqa: E402


def test_loaders_are_left_alone_by_lightning_distributed_sampler_injection(monkeypatch):
    """Lightning re-wraps a loader under DDP unless ``loader.sampler`` is a ``DistributedSampler``; every faircl loader
    on a rank must present one and still yield exactly the rank's own rows."""
    from torch.utils.data import DistributedSampler

    from faircl.data.samplers import GroupBalancedBatchSampler, SamplesPerClassSampler, StratifiedBatchSampler

    for sampler in SAMPLERS:
        dm, _ = build(sampler)
        ds = dm.splits["train"]
        for rank in (0, 1):
            monkeypatch.setattr(dm, "_dist", lambda rank=rank: (2, rank))
            train, test = dm.train_dataloader(), dm.test_dataloader()
            for loader in (train, test):
                assert isinstance(loader.sampler, DistributedSampler), (sampler, loader)
            assert [int(i) for b in test for i in b["idx"]] == list(range(rank, len(dm.splits["test"]), 2))
            rows = [int(i) for b in train for i in b["idx"]]
            if sampler == "random":
                expected = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=0, drop_last=True)
            else:
                kw = dict(num_replicas=2, rank=rank, seed=0)
                expected = {"group_balanced": lambda: GroupBalancedBatchSampler(ds.a, 32, **kw),
                            "stratified": lambda: StratifiedBatchSampler(ds.y, ds.a, 32, **kw),
                            "samples_per_class": lambda: SamplesPerClassSampler(ds.y, 32, samples_per_class=16, **kw),
                            }[sampler]()
                expected = [i for batch in expected for i in batch]
            assert rows == [int(i) for i in expected], sampler
            train.sampler.set_epoch(3)  # what Lightning calls each epoch reaches the batch sampler
            assert getattr(train.batch_sampler, "epoch", 3) == 3


def _single_process_report(sampler: str) -> dict[str, float]:
    dm, model = build(sampler)
    L.Trainer(**quiet_trainer_kwargs()).test(model, datamodule=dm, verbose=False)
    return dict(model.test_report)


def _same(got: dict[str, float], ref: dict[str, float]) -> None:
    finite = {k: v for k, v in ref.items() if isinstance(v, float) and math.isfinite(v)}
    assert set(got) == set(finite), sorted(set(got) ^ set(finite))
    for k, v in finite.items():
        assert got[k] == pytest.approx(v, rel=0, abs=1e-7), k


def _plain(strategy: str) -> dict:
    """Trainer arguments a user would write: nothing but devices, strategy and quiet output."""
    return dict(devices=2, strategy=strategy, accelerator="cpu", max_epochs=1, logger=False,
                enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)


@pytest.mark.ddp
@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_ddp_spawn_plain_trainer_fits_with_every_sampler(sampler):
    """fit (the sampler's train loader) on 2 processes; its validation metrics equal the single-process ones."""
    dm, model = build(sampler)
    single = L.Trainer(**quiet_trainer_kwargs())
    ref = {k: float(v) for k, v in single.validate(model, datamodule=dm, verbose=False)[0].items()}
    dm, model = build(sampler)
    trainer = L.Trainer(**_plain("ddp_spawn"))
    assert trainer._accelerator_connector.use_distributed_sampler  # Lightning's default, untouched
    trainer.fit(model, datamodule=dm)
    got = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
    assert got and set(got) == set(ref), sorted(set(got) ^ set(ref))
    for k, v in ref.items():
        assert got[k] == pytest.approx(v, rel=0, abs=1e-7), k


@pytest.mark.ddp
@pytest.mark.slow
@pytest.mark.e2e
def test_ddp_spawn_plain_trainer_test_report_matches_single_process():
    ref = _single_process_report("random")
    dm, model = build("random")
    trainer = L.Trainer(**_plain("ddp_spawn"))
    trainer.test(model, datamodule=dm, verbose=False)
    got = {k[len("test/"):]: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("test/")}
    _same(got, ref)


@pytest.mark.ddp
@pytest.mark.slow
@pytest.mark.e2e
def test_plain_ddp_script_matches_single_process_and_shards_rows(tmp_path):
    sampler = "group_balanced"
    out = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(HERE / "ddp_plain_trainer_script.py"), sampler, str(out)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = json.loads(out.read_text())
    assert res["world"] == 2
    got = {k: v for k, v in res["report"].items() if v is not None}
    _same(got, _single_process_report(sampler))
    # test: every row counted exactly once over the two ranks
    test_rows = [r for rank in res["ranks"] for r in rank["test"]]
    assert sorted(test_rows) == list(range(203))
    # train: each rank draws from its own shard of the sampler, full batches, same number on both ranks
    dm, _ = build(sampler)
    dm.setup("fit")
    per_rank = [rank["train"] for rank in res["ranks"]]
    assert len(per_rank[0]) == len(per_rank[1]) > 0
    from faircl.data.samplers import GroupBalancedBatchSampler

    for r, rows in enumerate(per_rank):
        ref = GroupBalancedBatchSampler(dm.splits["train"].a, 32, num_replicas=2, rank=r, seed=0)
        ref.set_epoch(0)
        assert rows == [i for batch in ref for i in batch]
