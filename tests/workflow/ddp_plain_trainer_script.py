"""Plain ``L.Trainer(devices=2, strategy="ddp")`` (default arguments otherwise) on a faircl datamodule, 2 CPU
processes. Run as ``python ddp_plain_trainer_script.py <sampler> <out.json>``; Lightning re-launches this script for
rank 1. Rank 0 writes the test report and the rows each rank's train and test loaders yielded."""

from __future__ import annotations

import json
import math
import sys

import lightning as L
import torch
import torch.distributed as dist

from faircl.data import BiasedFeatures
from faircl.methods import CE
from faircl.utils import end_distributed


def build(sampler: str):
    """The datamodule and the model (seeded; ``lr=0`` keeps the initial weights, so the test report of a run on
    any number of processes must equal the single-process report of the same weights)."""
    L.seed_everything(0, verbose=False)
    dm = BiasedFeatures(n_train=256, n_val=64, n_test=203, batch_size=32, sampler=sampler, seed=0,
                        samples_per_class=16)  # SPC-16: 2 classes x 16 rows per batch
    model = CE(num_classes=2, num_groups=2, input_dim=dm.input_dim, encoder_kwargs={"hidden_dim": 16}, lr=0.0)
    return dm, model


def _rows(loader) -> list[int]:
    return [int(i) for batch in loader for i in batch["idx"]]


def main(sampler: str, out: str) -> None:
    dm, model = build(sampler)
    trainer = L.Trainer(devices=2, strategy="ddp", accelerator="cpu", max_epochs=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, datamodule=dm)
    train_rows = _rows(trainer.train_dataloader)
    trainer.test(model, datamodule=dm, verbose=False)
    test_rows = _rows(trainer.test_dataloaders)
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, {"train": train_rows, "test": test_rows})
    if trainer.is_global_zero:
        report = {k: (v if math.isfinite(v) else None) for k, v in model.test_report.items()}
        with open(out, "w") as f:
            json.dump({"report": report, "ranks": gathered, "world": trainer.world_size}, f)
    end_distributed()  # wait for both ranks, then close the process group: no thread is torn down unjoined


if __name__ == "__main__":
    torch.set_num_threads(1)
    main(sys.argv[1], sys.argv[2])
