"""A rank started by Lightning's multiprocessing launcher (``ddp_spawn``) closes its process group when its run ends,
so no gloo thread is torn down unjoined when the child exits (``terminate called without an active exception``,
SIGABRT on a busy machine); one process and the ``ddp`` launcher are left alone."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import lightning as L
import pytest
import torch.distributed as dist
from lightning.pytorch.strategies import DDPStrategy

from faircl.data import BiasedFeatures
from faircl.methods import CE
from faircl.methods.scale import close_worker_group
from faircl.testing import quiet_trainer_kwargs


class RecordsGroup(CE):
    """CE that writes, per rank, whether the process group is still open after ``FairModule.teardown``."""

    def __init__(self, record_dir: str = "", **kwargs):
        super().__init__(**kwargs)
        self.record_dir = record_dir

    def teardown(self, stage: str) -> None:
        super().teardown(stage)
        rank = self.global_rank
        stage = str(getattr(stage, "value", stage))  # a TrainerFn member in some versions
        (Path(self.record_dir) / f"{stage}_{rank}.json").write_text(json.dumps({"open": dist.is_initialized()}))


@pytest.mark.ddp
def test_spawned_ranks_close_their_group_after_fit_and_test(tmp_path):
    L.seed_everything(0)
    dm = BiasedFeatures(n_train=128, n_val=32, n_test=64, dim=8, batch_size=32, seed=0)
    model = RecordsGroup(record_dir=str(tmp_path), num_classes=2, num_groups=2, input_dim=8,
                         encoder_kwargs={"hidden_dim": 8}, leakage=False)
    for run in ("fit", "test"):
        strategy = DDPStrategy(start_method="spawn", process_group_backend="gloo")
        trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=1, devices=2, strategy=strategy))
        getattr(trainer, run)(model, datamodule=dm)
        assert trainer.state.finished
    records = {p.stem: json.loads(p.read_text()) for p in tmp_path.glob("*.json")}
    assert records == {f"{stage}_{rank}": {"open": False} for stage in ("fit", "test") for rank in (0, 1)}


def test_one_process_and_the_subprocess_launcher_are_left_alone(monkeypatch):
    assert not close_worker_group(None)
    assert not close_worker_group(SimpleNamespace(strategy=SimpleNamespace(launcher=None)))

    class _MultiProcessingLauncher:  # the launcher's name, but this process is not its child
        pass

    trainer = SimpleNamespace(strategy=SimpleNamespace(launcher=_MultiProcessingLauncher()))
    assert not close_worker_group(trainer)  # the main process holds no rank
    monkeypatch.setattr("multiprocessing.parent_process", lambda: os.getppid())
    assert not close_worker_group(trainer)  # a child without a process group: nothing to close
