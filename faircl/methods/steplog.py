"""Per-step bookkeeping of :class:`~faircl.methods.base.FairModule`, paid once: what runs every step, what once an
epoch.

A Lightning ``self.log`` call walks its stored result with ``apply_to_collection`` (about a millisecond on a CPU);
on a small model (an MLP over features) two of them per step cost as much as the step. The choices:

- **Loss terms** are added every step into detached, batch-size-weighted running sums (a few tensor additions, no
  device sync, no logging call); their epoch means are logged once, at the end of the train epoch, as
  ``train/<name>`` (what ``callback_metrics``, checkpoint monitors and loggers read, as before).
- **Step values** are logged (``train/<name>_step``) only where something reads them: on the steps where Lightning
  writes to its loggers (``log_every_n_steps``), and ``train/loss_step`` on every step while a progress bar shows it.
- **The finite check** stays on every step (one ``isfinite`` over the step's terms stacked once, the same vector
  the running sums add, so the error names the step that went non-finite); its message is built only when it fails.
- **Metrics** update on validation and test batches only; nothing updates per training step.
- **Frozen sub-modules** are put back in eval mode at each train epoch start and whenever Lightning calls
  ``train()``, not at every step.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["EpochTerms", "log_epoch_terms", "record_train_terms", "stack_terms"]


def stack_terms(terms: dict[str, torch.Tensor]) -> torch.Tensor | None:
    """One step's scalar terms as one detached float vector (one op instead of one per term), or ``None`` when a term
    is not a scalar."""
    values = [v.detach() for v in terms.values()]
    if not values or any(v.numel() != 1 for v in values):
        return None
    return torch.stack([v.reshape(()) for v in values]).float()


class EpochTerms:
    """Batch-size-weighted running sums of detached loss terms over one epoch.

    A step's terms are summed as one vector per set of term names (a method returns the same names step after step),
    so a step costs two tensor operations whatever the number of terms."""

    def __init__(self, epoch: int = -1) -> None:
        self.epoch = epoch
        self.sums: dict[tuple[str, ...], torch.Tensor] = {}
        self.rows: dict[tuple[str, ...], int] = {}

    def add(self, terms: dict[str, torch.Tensor], rows: int, stacked: torch.Tensor | None = None) -> None:
        """Add one step's terms (scalars) computed over ``rows`` rows; ``stacked`` is :func:`stack_terms` of them
        when the caller already has it."""
        vec = stacked if stacked is not None else stack_terms(terms)
        if vec is None:  # non-scalar terms: their mean, one name at a time
            vec = torch.stack([v.detach().float().mean() for v in terms.values()])
        key = tuple(terms)
        vec = vec * rows
        self.sums[key] = self.sums[key] + vec if key in self.sums else vec
        self.rows[key] = self.rows.get(key, 0) + rows

    def means(self) -> dict[str, torch.Tensor]:
        """Epoch mean of every term (weighted by rows, as Lightning's ``on_epoch`` mean is)."""
        sums: dict[str, torch.Tensor] = {}
        rows: dict[str, int] = {}
        for key, vec in self.sums.items():
            for i, name in enumerate(key):
                sums[name] = sums[name] + vec[i] if name in sums else vec[i]
                rows[name] = rows.get(name, 0) + self.rows[key]
        return {name: s / rows[name] for name, s in sums.items() if rows[name]}


def _epoch_terms(module: Any) -> EpochTerms:
    """This epoch's sums (new ones when the epoch changed, e.g. after resuming mid-epoch from a checkpoint)."""
    epoch = module.current_epoch if module._trainer is not None else -1
    acc = module.__dict__.get("_epoch_terms")
    if acc is None or acc.epoch != epoch:
        acc = module.__dict__["_epoch_terms"] = EpochTerms(epoch)
    return acc


def record_train_terms(module: Any, terms: dict[str, torch.Tensor], rows: int,
                       stacked: torch.Tensor | None = None) -> None:
    """Accumulate a training step's terms (``stacked``: :func:`stack_terms` of them, when already built); log step
    values only where a logger or the progress bar reads them."""
    _epoch_terms(module).add(terms, rows, stacked)
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
        # sync_dist: the mean over every process (one reduction per term and epoch), as the validation metrics are
        module.log(f"train/{name}", mean, on_step=False, on_epoch=True, prog_bar=name == "loss", sync_dist=True)
    module.__dict__["_epoch_terms"] = EpochTerms(acc.epoch)
