"""The validation metrics of every epoch of a bench run, for a protocol's selection rule
(:mod:`faircl.bench.selection`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import Callback

__all__ = ["EpochHistory"]


class EpochHistory(Callback):
    """Writes the validation metrics of every epoch (sanity checks left out) to ``path`` as a JSON list of
    ``{"epoch": e, "metrics": {name: value}}``, rewritten at each validation end (rank 0)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.epochs: list[dict[str, Any]] = []

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero:
            return
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items()
                   if k.startswith("val/") and getattr(v, "numel", lambda: 1)() == 1}
        self.epochs = [e for e in self.epochs if e["epoch"] != trainer.current_epoch]
        self.epochs.append({"epoch": int(trainer.current_epoch), "metrics": metrics})
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.epochs, indent=1))
        tmp.replace(self.path)
