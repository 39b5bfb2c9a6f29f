"""Per-step bookkeeping of :class:`~faircl.methods.base.FairModule`, paid once: what runs every step, what once an
epoch.

A Lightning ``self.log`` call walks its stored result with ``apply_to_collection`` (about a millisecond on a CPU);
on a small model (an MLP over features) two of them per step cost as much as the step. The choices:

- **Loss terms** are added every step into detached, batch-size-weighted running sums (a few tensor additions, no
  device sync, no logging call); their epoch means are logged once, at the end of the train epoch, as
  ``train/<name>`` (what ``callback_metrics``, checkpoint monitors and loggers read, as before).
- **Step values** are logged (``train/<name>_step``) only where something reads them: on the steps where Lightning
  writes to its loggers (``log_every_n_steps``), and ``train/loss_step`` on every step while a progress bar shows it.
- **The finite check** stays on every step (one fused ``isfinite`` over the terms, so the error names the step that
  went non-finite); its message is built only when it fails.
- **Metrics** update on validation and test batches only; nothing updates per training step.
- **Frozen sub-modules** are put back in eval mode at each train epoch start and whenever Lightning calls
  ``train()``, not at every step.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["EpochTerms", "record_train_terms", "log_epoch_terms"]


class EpochTerms:
    """Batch-size-weighted running sums of detached loss terms over one epoch."""

    def __init__(self, epoch: int = -1) -> None:
        self.epoch = epoch
        self.sums: dict[str, torch.Tensor] = {}
        self.rows: dict[str, int] = {}

    def add(self, terms: dict[str, torch.Tensor], rows: int) -> None:
        """Add one step's terms (scalars) computed over ``rows`` rows."""
        for name, value in terms.items():
            v = value.detach().float() * rows
            self.sums[name] = self.sums[name] + v if name in self.sums else v
            self.rows[name] = self.rows.get(name, 0) + rows

    def means(self) -> dict[str, torch.Tensor]:
        """Epoch mean of every term (weighted by rows, as Lightning's ``on_epoch`` mean is)."""
        return {name: s / self.rows[name] for name, s in self.sums.items() if self.rows[name]}


def _epoch_terms(module: Any) -> EpochTerms:
    """This epoch's sums (new ones when the epoch changed, e.g. after resuming mid-epoch from a checkpoint)."""
    epoch = module.current_epoch if module._trainer is not None else -1
    acc = module.__dict__.get("_epoch_terms")
    if acc is None or acc.epoch != epoch:
        acc = module.__dict__["_epoch_terms"] = EpochTerms(epoch)
    return acc


def record_train_terms(module: Any, terms: dict[str, torch.Tensor], rows: int) -> None:
    """Accumulate a training step's terms; log step values only where a logger or the progress bar reads them."""
    _epoch_terms(module).add(terms, rows)
    trainer = module._trainer
    if trainer is None:
        return
    connector = getattr(trainer, "_logger_connector", None)
    to_loggers = bool(trainer.loggers) and bool(getattr(connector, "should_update_logs", True))
    bar = trainer.progress_bar_callback is not None
    for name, value in terms.items():
        if to_loggers or (bar and name == "loss"):  # Lightning writes to the loggers on these steps only
            module.log(f"train/{name}_step", value.detach().float(), on_step=True, on_epoch=False,
                       prog_bar=bar and name == "loss", batch_size=rows)


def log_epoch_terms(module: Any) -> None:
    """Log the epoch means of the accumulated terms as ``train/<name>`` and start a new epoch."""
    acc = _epoch_terms(module)
    for name, mean in acc.means().items():
        module.log(f"train/{name}", mean, on_step=False, on_epoch=True, prog_bar=name == "loss")
    module.__dict__["_epoch_terms"] = EpochTerms(acc.epoch)
