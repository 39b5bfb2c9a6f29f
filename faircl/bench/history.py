"""The validation metrics of every epoch of a bench run, for a protocol's selection rule
(:mod:`faircl.bench.checkpoint_selection`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import Callback

from faircl.checkpoints import final_stage_or_unreachable

__all__ = ["EpochHistory"]


class EpochHistory(Callback):
    """Writes the validation metrics of every epoch of the final training stage (sanity checks left out; every
    epoch for a method without stages, or when the budget never reaches the final stage) to ``path`` as a JSON list
    of ``{"epoch": e, "metrics": {name: value}}``, rewritten at each validation end (rank 0). An epoch of an earlier
    stage is never a candidate: a staged method's first stage is not the method (INLP's is plain CE)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.epochs: list[dict[str, Any]] = []

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero or not final_stage_or_unreachable(trainer):
            return
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items()
                   if k.startswith("val/") and getattr(v, "numel", lambda: 1)() == 1}
        self.epochs = [e for e in self.epochs if e["epoch"] != trainer.current_epoch]
        self.epochs.append({"epoch": int(trainer.current_epoch), "metrics": metrics})
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.epochs, indent=1))
        tmp.replace(self.path)
