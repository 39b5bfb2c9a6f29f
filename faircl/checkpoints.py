"""Safe, checked and atomic checkpoints, and per-epoch seeding for exact resumes.

* :func:`load_checkpoint` reads a checkpoint with ``torch.load(weights_only=True)`` (no code runs from the file) and
  turns every failure (missing, empty, truncated, random bytes, objects that are not plain data) into one
  :class:`CheckpointError` line naming the file and what is wrong with it; :func:`check_checkpoint` also requires a
  Lightning ``state_dict``.
* :class:`AtomicCheckpointIO` is a Lightning ``CheckpointIO`` plugin that writes a checkpoint to a temporary file in the
  same folder, ``fsync``\\ s it and ``os.replace``\\ s it over the target, so a crash during a save leaves the previous
  good file in place (never a truncated one).
* :func:`check_finite_terms` is the training-time guard of ``FairModule.training_step``: it stops at the first
  non-finite loss term, naming the step, the term and the batch's row ids.
* :class:`FairCheckpoint` is the checkpoint policy of every faircl method (``FairModule.configure_callbacks``
  returns it, so a plain ``Trainer`` keeps the same ``best`` as the ``faircl`` command): ``last.ckpt`` plus the best
  checkpoint by the method's monitored metric, chosen among the epochs of the method's final training stage.
* :class:`EpochSeed` is a callback that seeds Python, NumPy and torch from ``(seed, epoch, batch)`` before every
  training step, so the randomness of a step (dropout) does not depend on what ran before: an epoch re-run after a
  resume is identical to the uninterrupted one.
"""

from __future__ import annotations

import logging
import os
import pickle
import random
import re
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning.pytorch as L
import numpy as np
import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.utilities import rank_zero_info

__all__ = ["AtomicCheckpointIO", "CheckpointError", "EpochSeed", "FairCheckpoint", "check_checkpoint",
           "check_finite_terms", "final_stage_or_unreachable", "is_default_checkpoint", "load_checkpoint"]


class CheckpointError(ValueError):
    """A checkpoint file cannot be used; the message names the file and what is wrong with it."""


#: the first bytes of an old-style (non-zip) ``torch.save`` file: its magic number, pickled with protocol 2
_LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"


def _first_line(err: BaseException) -> str:
    """The loader's own reason, without torch's advice to load with ``weights_only=False`` (faircl never does)."""
    text = str(err).strip()
    found = re.search(r"WeightsUnpickler error:\s*(.+?)(?:\n\s*\n|$)", text, flags=re.DOTALL)
    if found:
        text = found.group(1).strip()
    lines = text.splitlines()
    return lines[0][:200] if lines else type(err).__name__


def _diagnose(path: Path, err: BaseException) -> str:
    """What is wrong with ``path``, in a few words, from the file's bytes and the loader's error."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(len(_LEGACY_MAGIC))
    msg = str(err)
    is_zip, is_pickle = head.startswith(b"PK\x03\x04"), head[:1] == b"\x80"
    if not (is_zip or is_pickle):
        return f"not a PyTorch checkpoint ({size} bytes of unrecognised data)"
    if is_zip and not zipfile.is_zipfile(path):
        return f"truncated or corrupt zip archive ({size} bytes)"
    found = re.search(r"(?:unsupported|not an allowed) GLOBAL ([\w.]+)|GLOBAL ([\w.]+) (?:was not|is not) an allowed",
                      msg, flags=re.IGNORECASE)
    if isinstance(err, pickle.UnpicklingError) and found:
        name = found.group(1) or found.group(2)
        return (f"refused: the file holds code ({name}), not plain tensors and data; faircl never runs code from "
                "files")
    if is_pickle and not head.startswith(_LEGACY_MAGIC):
        return (f"a plain pickle file (protocol {head[1] if len(head) > 1 else '?'}, {size} bytes), not a checkpoint "
                "written by torch.save or a Lightning Trainer; faircl reads checkpoints without unpickling objects, "
                "so it never runs code from a file: save the model's state with Trainer.save_checkpoint or torch.save "
                "in a Python session you trust")
    if is_pickle:
        return (f"an old-style (non-zip) torch.save file that cannot be read as plain tensors and data ({size} "
                f"bytes; {_first_line(err)}): truncated or corrupt, or saved from objects faircl does not unpickle; "
                "re-save it with a current torch.save (zip format) in a Python session you trust")
    return f"corrupt checkpoint archive ({_first_line(err)})"


def load_checkpoint(path: str | os.PathLike, map_location: Any = "cpu") -> dict[str, Any]:
    """The checkpoint dict at ``path``, loaded with ``weights_only=True``.

    Raises:
        CheckpointError: missing, empty, truncated or corrupt file, a file that holds anything but plain data
            (tensors, numbers, strings, containers), or a file whose content is not a dict. One line, naming the file.
    """
    p = Path(path)
    if not p.exists():
        raise CheckpointError(f"checkpoint {str(p)!r}: file not found")
    if not p.is_file():
        raise CheckpointError(f"checkpoint {str(p)!r}: not a file")
    if p.stat().st_size == 0:
        raise CheckpointError(f"checkpoint {str(p)!r}: empty file (0 bytes)")
    try:
        with warnings.catch_warnings():  # torch's notes on a file it then refuses (pickle protocol, legacy format)
            warnings.simplefilter("ignore", UserWarning)
            obj = torch.load(str(p), map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError, AttributeError, TypeError,
            KeyError, IndexError, UnicodeDecodeError, zipfile.BadZipFile) as err:
        raise CheckpointError(f"checkpoint {str(p)!r}: {_diagnose(p, err)}") from None
    if not isinstance(obj, dict):
        raise CheckpointError(f"checkpoint {str(p)!r}: holds a {type(obj).__name__}, expected a dict")
    return obj


def check_checkpoint(path: str | os.PathLike, map_location: Any = "cpu") -> dict[str, Any]:
    """:func:`load_checkpoint`, also requiring a Lightning ``state_dict`` of tensors; returns the checkpoint."""
    ckpt = load_checkpoint(path, map_location)
    state = ckpt.get("state_dict")
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {str(path)!r}: no 'state_dict' (keys: {sorted(map(str, ckpt))[:10]}); "
                              "expected a Lightning checkpoint written by `faircl fit` or Trainer.save_checkpoint")
    bad = [k for k, v in state.items() if not isinstance(v, torch.Tensor)]
    if bad:
        raise CheckpointError(f"checkpoint {str(path)!r}: state_dict entry {bad[0]!r} is not a tensor")
    return ckpt


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # platforms without directory handles
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class AtomicCheckpointIO(TorchCheckpointIO):
    """Local checkpoints written atomically: temp file in the target folder, ``fsync``, ``os.replace``.

    A process killed during a save leaves at most a stray ``.<name>.*.tmp`` file next to the previous, complete
    checkpoint. Loading goes through :func:`load_checkpoint` (``weights_only=True``, one-line errors).
    Use: ``Trainer(plugins=[AtomicCheckpointIO()])``.
    """

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None) -> None:
        if storage_options is not None:
            raise TypeError(f"{type(self).__name__} takes no storage_options")
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                self._write(checkpoint, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        _fsync_dir(target.parent)

    @staticmethod
    def _write(checkpoint: dict[str, Any], fh: Any) -> None:
        """Serialise ``checkpoint`` into the open temporary file (a hook for tests that simulate a crash)."""
        torch.save(checkpoint, fh)

    def load_checkpoint(self, path: Any, map_location: Any = "cpu", weights_only: bool | None = None) -> dict:
        if weights_only is False:
            raise CheckpointError(f"checkpoint {str(path)!r}: loading with weights_only=False is not allowed by "
                                  f"{type(self).__name__} (it would run code from the file)")
        return load_checkpoint(path, map_location=map_location)


class FairCheckpoint(ModelCheckpoint):
    """``last.ckpt`` (rewritten at every validation) plus the best checkpoint by the model's monitored metric.

    When the monitored metric is not logged (no validation split, or a method that does not log it) the run keeps
    ``last.ckpt`` and says once that no best checkpoint is kept, instead of failing.

    For a method trained in stages (TwoStageCL, INLP, the ConFair pipeline, FairSamplingSimCLR, ...) the best
    checkpoint is chosen among the epochs of its final stage whenever the run reaches that stage: an earlier epoch
    is an unfinished model (e.g. INLP before its projection is fitted, a classifier head not yet trained).

    Args:
        monitor: the validation metric (e.g. ``val/accuracy``).
        mode: ``min`` | ``max``.
        **kwargs: other :class:`~lightning.pytorch.callbacks.ModelCheckpoint` arguments (``dirpath``, ...).
    """

    def __init__(self, monitor: str, mode: str, **kwargs: Any) -> None:
        super().__init__(monitor=monitor, mode=mode, save_last=True, save_top_k=1, filename="best-{epoch}-{step}",
                         **kwargs)
        self._said_missing = False
        self._last_written_at = -1

    def _save_topk_checkpoint(self, trainer, monitor_candidates: dict[str, torch.Tensor]) -> None:
        if not final_stage_or_unreachable(trainer):
            self._save_last_checkpoint(trainer, monitor_candidates)
            return
        if self.monitor in monitor_candidates:
            super()._save_topk_checkpoint(trainer, monitor_candidates)
        elif not self._said_missing:
            self._said_missing = True
            rank_zero_info(f"faircl: {self.monitor!r} is not logged, so only last.ckpt is kept (choose a logged "
                           f"metric with --model.monitor; logged: {sorted(monitor_candidates)})")
        # Lightning writes last.ckpt only when a top-k file was written; here it follows every epoch.
        self._save_last_checkpoint(trainer, monitor_candidates)

    def _save_last_checkpoint(self, trainer, monitor_candidates: dict[str, torch.Tensor]) -> None:
        if self._last_written_at == trainer.global_step:
            return
        super()._save_last_checkpoint(trainer, monitor_candidates)
        self._last_written_at = trainer.global_step


def final_stage_or_unreachable(trainer) -> bool:
    """True when the model is in its final training stage, or when ``max_epochs`` never reaches that stage (then
    every epoch may be selected). Models without stages are always in their final stage."""
    module = trainer.lightning_module
    if not hasattr(module, "stage_epochs"):
        return True
    final = module.stage_epochs()[-1][0]
    if module.stage_at(trainer.current_epoch) == final:
        return True
    last_epoch = trainer.max_epochs - 1 if trainer.max_epochs and trainer.max_epochs > 0 else None
    return last_epoch is not None and module.stage_at(last_epoch) != final


_DEFAULT_CHECKPOINT = ModelCheckpoint()
#: Lightning's note when a module's ``configure_callbacks`` replaces the default ``ModelCheckpoint``
_REPLACED_DEFAULT = ("The following callbacks returned in `LightningModule.configure_callbacks` will override existing "
                     "callbacks passed to Trainer: ModelCheckpoint")


class _PolicyNoteFilter(logging.Filter):
    """Drops Lightning's note that ``configure_callbacks`` overrides the ``ModelCheckpoint``, exactly when the
    override is faircl's checkpoint policy (a :class:`FairCheckpoint` returned by ``FairModule.configure_callbacks``
    in place of the default checkpoint: what a plain ``Trainer`` is meant to get); any other override is still said."""

    faircl_policy_note = True

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() != _REPLACED_DEFAULT:
            return True
        frame = sys._getframe()
        while frame is not None and frame.f_code.co_name != "_attach_model_callbacks":
            frame = frame.f_back
        returned = frame.f_locals.get("model_callbacks") if frame is not None else None
        return not (returned and any(isinstance(cb, FairCheckpoint) for cb in returned))


def _quiet_policy_note() -> None:
    """Install :class:`_PolicyNoteFilter` once; also silence the torch deprecation Lightning's own ``_pytree`` helper
    triggers at every fit (``isinstance(treespec, LeafSpec)``: nothing a faircl user can change)."""
    log = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    if not any(getattr(f, "faircl_policy_note", False) for f in log.filters):
        log.addFilter(_PolicyNoteFilter())
    warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)` is deprecated.*")


_quiet_policy_note()


def is_default_checkpoint(callback: Any) -> bool:
    """Whether ``callback`` is the ``ModelCheckpoint`` a ``Trainer`` adds by itself (``enable_checkpointing=True``
    and no checkpoint callback given): exactly that class, every option at its default. Any other checkpoint
    callback was chosen by the user (or the ``faircl`` command) and is kept as it is."""
    if type(callback) is not ModelCheckpoint:
        return False
    options = ("monitor", "dirpath", "filename", "save_last", "save_top_k", "mode", "every_n_epochs",
               "_every_n_train_steps", "_train_time_interval", "save_weights_only", "_save_on_train_epoch_end")
    return all(getattr(callback, k, None) == getattr(_DEFAULT_CHECKPOINT, k, None) for k in options)


class EpochSeed(L.Callback):
    """Seed ``random``, NumPy and torch (CPU and CUDA) from ``(seed, epoch, batch, rank)`` before every training step.

    With it, a step's dropout masks and other random draws inside the step depend only on the seed and the step's
    place, not on what ran before, so the epoch Lightning re-runs after resuming from an epoch-end checkpoint draws
    the same numbers as the uninterrupted run (shuffling is per ``(seed, epoch)`` in faircl's loaders). Lightning
    creates the first loader iterator of a resumed run before any hook, so random views drawn in the main process
    for the first batches of that epoch are not covered: use augmentations that are seeded per row, or resume at a
    stage where they are unused, when those must match too.
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)

    def _reseed(self, trainer: L.Trainer, *place: int) -> None:
        seq = np.random.SeedSequence([self.seed, int(trainer.global_rank), int(trainer.current_epoch), *place])
        value = int(seq.generate_state(1, dtype=np.uint32)[0])
        random.seed(value)
        np.random.seed(value)
        torch.manual_seed(value)

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._reseed(trainer)

    def on_train_batch_start(self, trainer: L.Trainer, pl_module: L.LightningModule, batch: Any,
                             batch_idx: int) -> None:
        self._reseed(trainer, 1, int(batch_idx))


def check_finite_terms(terms: dict[str, torch.Tensor], batch: dict[str, Any],
                       context: str | Callable[[], str], stacked: torch.Tensor | None = None) -> None:
    """Raise ``FloatingPointError`` naming ``context`` (the step; a callable is called only when raising), the first
    non-finite term and the batch's ``idx``.

    One device sync: every term is checked in a single ``isfinite`` over their concatenation (``stacked``, one value
    per scalar term, when the caller already has it).
    """
    if stacked is not None and bool(torch.isfinite(stacked).all()):
        return
    values = [v.detach().float().reshape(-1) for v in terms.values()]
    if not values:
        return
    finite = torch.isfinite(torch.cat(values))
    if bool(finite.all()):
        return
    k = 0
    for name, v in zip(terms, values):
        if not bool(finite[k:k + v.numel()].all()):
            break
        k += v.numel()
    idx = batch.get("idx") if isinstance(batch, dict) else None
    rows = idx.reshape(-1).tolist() if isinstance(idx, torch.Tensor) else idx
    shown = f"{list(rows)[:20]}{' ...' if rows is not None and len(rows) > 20 else ''}"
    value = float(v[0]) if v.numel() == 1 else "non-finite"
    if callable(context):
        context = context()
    raise FloatingPointError(f"{context}: loss term {name!r} is {value}; batch rows idx={shown}. Check those rows "
                             "of the data, the learning rate and the loss temperature.")
