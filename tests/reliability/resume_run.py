"""A small deterministic CPU training run, used by test_resume.py as a subprocess.

``python resume_run.py METHOD OUT MODE`` with MODE ``full`` (train to the end), ``victim`` (train; in the middle of
epoch ``KILL_EPOCH`` write ``OUT/mid_epoch`` and wait to be killed) or ``resume`` (continue from ``OUT/ckpt/last.ckpt``).
``full`` and ``resume`` save the final weights and the test report to ``OUT/final.pt``.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from faircl.checkpoints import AtomicCheckpointIO, EpochSeed
from faircl.data.synthetic import BiasedFeatures
from faircl.methods.ce import CE
from faircl.methods.two_stage_cl import TwoStageCL

MAX_EPOCHS = 4
KILL_EPOCH = {"ce": 2, "two_stage": 3}      # TwoStageCL: killed in its second stage (stage1_epochs=2)


class _WaitToBeKilled(L.Callback):
    def __init__(self, out: Path, epoch: int) -> None:
        self.out, self.epoch = out, epoch

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.current_epoch == self.epoch and batch_idx == 5:
            (self.out / "mid_epoch").write_text(str(trainer.global_step))
            time.sleep(120)   # the test kills the process here


def main(method: str, out: Path, mode: str) -> None:
    # A process started in the background inherits SIGINT ignored; the test interrupts with SIGINT as Ctrl+C would.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    torch.use_deterministic_algorithms(True)
    L.seed_everything(0, workers=True)
    # view_noise=0: random views are drawn in the main process when a batch is fetched, and Lightning fetches the
    # first batches of a resumed run before any callback can reseed (see faircl.checkpoints.EpochSeed).
    dm = BiasedFeatures(n_train=192, n_val=32, n_test=64, dim=8, batch_size=16, two_views=method == "two_stage",
                        view_noise=0.0, seed=3)
    common = dict(num_classes=2, num_groups=2, input_dim=8, leakage=False,
                  encoder="mlp", encoder_kwargs={"hidden_dim": 16, "num_layers": 2, "dropout": 0.3})
    if method == "ce":
        model = CE(**common)
    else:
        model = TwoStageCL(stage1_epochs=2, proj_dim=8, **common)
    callbacks = [ModelCheckpoint(dirpath=out / "ckpt", save_last=True, save_top_k=1, every_n_epochs=1),
                 EpochSeed(seed=0)]
    if mode == "victim":
        callbacks.append(_WaitToBeKilled(out, KILL_EPOCH[method]))
    trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=MAX_EPOCHS, deterministic=True, logger=False,
                        enable_progress_bar=False, enable_model_summary=False, callbacks=callbacks,
                        plugins=[AtomicCheckpointIO()])
    ckpt = str(out / "ckpt" / "last.ckpt") if mode == "resume" else None
    trainer.fit(model, dm, ckpt_path=ckpt)
    if mode == "victim":
        return
    trainer.test(model, dm, verbose=False)
    torch.save({"state_dict": {k: v.clone() for k, v in model.state_dict().items()},
                "report": dict(model.test_report), "global_step": trainer.global_step}, out / "final.pt")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3])
