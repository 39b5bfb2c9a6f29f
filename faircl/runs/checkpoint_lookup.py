"""Checkpoints of earlier runs: ``--ckpt_path best | last | FILE | none`` resolved to a file, and what a checkpoint
holds (its method class, its epoch), read without running code from the file.

A run writes into ``<default_root_dir>/lightning_logs/version_<n>/`` (``config.yaml``, ``metrics.csv``,
``checkpoints/last.ckpt``, ``checkpoints/best-epoch=<e>-step=<s>.ckpt``; ``report.json`` / ``report.md`` after
``test``; ``predictions.pt`` / ``predictions.csv`` after ``predict``). ``--ckpt_path best|last`` finds the newest run
under the same ``default_root_dir``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from faircl.checkpoints import CheckpointError, check_checkpoint
from faircl.runs.config_files import read_config
from faircl.runs.user_error import UserError

UNTRAINED = ("none", "null", "untrained")


# ----------------------------------------------------------------------------------------------------- checkpoints
# The checkpoint policy (FairCheckpoint, the final-stage rule) is in faircl.checkpoints: FairModule.configure_callbacks
# returns it, so a plain Trainer keeps the same best checkpoint as the CLI.
def _newest(paths: list[Path]) -> Path | None:
    return max(paths, key=lambda p: p.stat().st_mtime, default=None)


def short_name(class_path: Any) -> str | None:
    """``ConFair`` for ``faircl.methods.ConFair`` / ``ConFair`` / ``{class_path: ...}``; None when not a name."""
    if isinstance(class_path, dict):
        class_path = class_path.get("class_path")
    return class_path.rsplit(".", 1)[-1] if isinstance(class_path, str) and class_path else None


def run_classes(run_dir: Path) -> tuple[str | None, str | None]:
    """(method, datamodule) class names of the ``fit`` run whose folder is ``run_dir``, read from its
    ``config.yaml`` (the method alone from ``last.ckpt``'s hyper-parameters when the config is absent)."""
    model = data = None
    cfg_path = run_dir / "config.yaml"
    if cfg_path.is_file():
        try:
            cfg = read_config(cfg_path)
        except UserError:
            cfg = {}
        model, data = short_name(cfg.get("model")), short_name(cfg.get("data"))
    if model is None:
        lasts = sorted((run_dir / "checkpoints").glob("last*.ckpt"))
        if lasts:
            try:
                hp = check_checkpoint(lasts[-1]).get("hyper_parameters") or {}
                model = short_name(hp.get("_class_path"))
            except CheckpointError:
                pass
    return model, data


def _runs(root: Path) -> list[Path]:
    """Run folders under ``root``: the folders that hold a ``checkpoints/`` folder with a checkpoint, newest first
    (by their newest checkpoint)."""
    if not root.is_dir():
        return []
    runs = {}
    for ck in root.rglob("checkpoints"):
        files = [p for p in ck.glob("*.ckpt") if p.is_file()] if ck.is_dir() else []
        if files:
            runs[ck.parent] = max(p.stat().st_mtime for p in files)
    return sorted(runs, key=runs.get, reverse=True)


def _describe(model: str | None, data: str | None) -> str:
    return f"{model or 'any method'} on {data or 'any data'}"


def find_checkpoint(root: str | Path, which: str, model: str | None = None, data: str | None = None) -> Path:
    """``last.ckpt`` or the best checkpoint of the newest ``fit`` run of ``model`` on ``data`` under ``root`` (the
    trainer's ``default_root_dir``; ``None`` matches any class).

    A run is a folder holding ``checkpoints/``; its classes come from its ``config.yaml``. Only the newest matching
    run is searched: a run that kept no best checkpoint is refused, never replaced by an older run's file.
    """
    root = Path(root)
    what = _describe(model, data)
    runs = _runs(root)
    match = [r for r in runs if all(want is None or got is None or want == got
                                    for want, got in zip((model, data), run_classes(r)))]
    if not match:
        others = sorted({_describe(*run_classes(r)) for r in runs})
        seen = f" (the runs there: {'; '.join(others[:4])})" if others else ""
        raise UserError(f"--ckpt_path {which}: no run of {what} with checkpoints under {str(root)!r} (the trainer's "
                       f"default_root_dir){seen}; run `faircl fit` with the same config first, or pass "
                       "--ckpt_path <file.ckpt>")
    run = match[0]
    pattern = "last*.ckpt" if which == "last" else "best*.ckpt"
    found = _newest([p for p in (run / "checkpoints").glob(pattern) if p.is_file()])
    if found is None:
        hint = ("it kept only last.ckpt (its monitored metric was never logged?): use --ckpt_path last"
                if which == "best" else "it has no last.ckpt")
        raise UserError(f"--ckpt_path {which}: the newest run of {what} under {str(root)!r} ({str(run)!r}) has no "
                       f"{which} checkpoint; {hint}, or pass --ckpt_path <file.ckpt>")
    return found


def resolve_ckpt_path(value: str | None, root: str | Path, explicit_untrained: bool, model: str | None = None,
                      data: str | None = None) -> str | None:
    """The checkpoint file a ``fit`` / ``test`` / ``predict`` loads (``None`` = the current weights); ``best`` /
    ``last`` come from the newest run of ``model`` on ``data`` (:func:`find_checkpoint`)."""
    if explicit_untrained:
        return None
    if value is None:
        value = "best"
    if value in ("best", "last"):
        return str(find_checkpoint(root, value, model, data))
    path = Path(value).expanduser()
    if not path.is_file():
        raise UserError(f"--ckpt_path {value!r}: no such checkpoint file (or use best | last | none)")
    return str(path)


def checkpoint_dict(path: str | Path) -> dict[str, Any]:
    """The checkpoint at ``path``, checked (:func:`~faircl.checkpoints.check_checkpoint`: no code runs from the file);
    a missing, corrupt or unsafe file is a one-line :class:`UserError`."""
    try:
        return check_checkpoint(path)
    except CheckpointError as err:
        raise UserError(str(err)) from err


def checkpoint_epoch(path: str | Path) -> int | None:
    """The epoch (counted from 0) during or after which a Lightning checkpoint was saved; checks the file first."""
    epoch = checkpoint_dict(path).get("epoch")
    return None if epoch is None else int(epoch)


def checkpoint_class(ckpt: dict[str, Any]) -> str | None:
    """The import path of the method class stored in a checkpoint written by ``faircl fit`` (``None`` if unknown)."""
    hp = ckpt.get("hyper_parameters") or {}
    value = hp.get("_class_path") if isinstance(hp, dict) else None
    return value if isinstance(value, str) else None


def epochs_trained(ckpt: dict[str, Any]) -> int | None:
    """How many epochs a checkpoint has trained: its epoch (counted from 0) plus one when it was saved after the
    epoch's last training batch (a resume starts with the next epoch), else its epoch (a resume finishes it)."""
    epoch = ckpt.get("epoch")
    if epoch is None:
        return None
    progress = ((ckpt.get("loops") or {}).get("fit_loop") or {}).get("epoch_loop.batch_progress") or {}
    return int(epoch) + (1 if progress.get("is_last_batch", True) else 0)
