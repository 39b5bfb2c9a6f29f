"""The validation metrics of every epoch of a run: what a sweep reports for the chosen checkpoint and what a bench
protocol's selection rule chooses from (:mod:`faircl.bench.checkpoint_selection`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import Callback

from faircl.checkpoints import final_stage_or_unreachable

__all__ = ["EpochHistory"]


class EpochHistory(Callback):
    """Keeps the logged ``val/*`` metrics of every validation (sanity checks left out) as ``{"epoch", "step",
    "metrics", "final"}``, ``final`` telling whether the epoch is of the final training stage (always, for a method
    without stages, or when the budget never reaches the final stage). With ``path`` the list is rewritten there as
    JSON at each validation end (rank 0)."""

    def __init__(self, path: str | None = None) -> None:
        self.path = Path(path) if path else None
        self.epochs: list[dict[str, Any]] = []

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero:
            return
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items()
                   if k.startswith("val/") and getattr(v, "numel", lambda: 1)() == 1}
        self.epochs = [e for e in self.epochs if e["epoch"] != trainer.current_epoch]
        self.epochs.append({"epoch": int(trainer.current_epoch), "step": int(trainer.global_step), "metrics": metrics,
                            "final": bool(final_stage_or_unreachable(trainer))})
        if self.path is not None:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.epochs, indent=1))
            tmp.replace(self.path)

    def final_epochs(self) -> list[dict[str, Any]]:
        """The epochs of the final training stage: the candidates of a selection rule (an earlier stage is not the
        method: INLP's first stage is plain CE)."""
        return [e for e in self.epochs if e.get("final", True)]

    def at_checkpoint(self, ckpt: str) -> dict[str, Any]:
        """The record of the checkpoint file ``ckpt`` (its ``step=`` or ``epoch=`` in the name), else the last one."""
        name = Path(ckpt).name if ckpt else ""
        for key in ("step", "epoch"):
            match = re.search(rf"{key}=(\d+)", name)
            if match:
                for rec in reversed(self.epochs):
                    if rec[key] == int(match.group(1)):
                        return rec
        return self.epochs[-1] if self.epochs else {"epoch": None, "step": None, "metrics": {}}
