"""Run folders of the ``faircl`` command: shipped configs by name, checkpoints of earlier runs, no overwriting.

A run writes into ``<default_root_dir>/lightning_logs/version_<n>/`` (``config.yaml``, ``metrics.csv``,
``checkpoints/last.ckpt``, ``checkpoints/best-epoch=<e>-step=<s>.ckpt``; ``report.json`` / ``report.md`` after
``test``; ``predictions.pt`` / ``predictions.csv`` after ``predict``). ``--ckpt_path best|last`` finds the newest run
under the same ``default_root_dir``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.utilities import rank_zero_info

from faircl.checkpoints import CheckpointError, check_checkpoint

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
UNTRAINED = ("none", "null", "untrained")


class CLIError(Exception):
    """A usage or configuration error of the ``faircl`` command: printed as one line, exit status 2."""


# ----------------------------------------------------------------------------------------------------- configs
def shipped_configs() -> list[str]:
    """Names of the configs shipped with the package (``confair/biased_features``, ...)."""
    return sorted(p.relative_to(CONFIG_DIR).with_suffix("").as_posix() for p in CONFIG_DIR.rglob("*.yaml"))


def resolve_config(value: str) -> str:
    """A ``--config`` value as a file path: an existing file, or a shipped config by name (``confair/biased_features``,
    ``confair/biased_features.yaml`` or ``configs/confair/biased_features.yaml`` from any working directory)."""
    if Path(value).expanduser().is_file():
        return value
    name = value[len("configs/"):] if value.startswith("configs/") else value
    for cand in (CONFIG_DIR / name, CONFIG_DIR / f"{name}.yaml"):
        if cand.is_file():
            return str(cand)
    near = [n for n in shipped_configs() if name.split("/")[0] in n][:8]
    raise CLIError(f"config {value!r} not found: it is neither a file nor a shipped config name "
                   f"(<method>/<dataset>, e.g. {', '.join(near or shipped_configs()[:4])}; list them all with "
                   "`faircl configs`)")


def expand_configs(argv: list[str]) -> list[str]:
    """``argv`` with every ``--config`` value replaced by a file path (see :func:`resolve_config`)."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--config" and i + 1 < len(out):
            out[i + 1] = resolve_config(out[i + 1])
        elif arg.startswith("--config="):
            out[i] = "--config=" + resolve_config(arg.split("=", 1)[1])
    return out


def option_value(argv: list[str], name: str) -> str | None:
    """The last value of ``--name V`` / ``--name=V`` in ``argv`` (``None`` when absent)."""
    value = None
    for i, arg in enumerate(argv):
        if arg == f"--{name}" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
    return value


def config_files(argv: list[str]) -> list[Path]:
    """The config files named by ``--config`` in ``argv`` (already resolved by :func:`expand_configs`)."""
    files = []
    for i, arg in enumerate(argv):
        if arg == "--config" and i + 1 < len(argv):
            files.append(Path(argv[i + 1]))
        elif arg.startswith("--config="):
            files.append(Path(arg.split("=", 1)[1]))
    return [f for f in files if f.is_file()]


def sets_optimizer_lr(argv: list[str], configs: list[dict[str, Any]]) -> bool:
    """Whether the command line or a config sets the learning rate of an injected ``--optimizer``."""
    if any(re.match(r"--optimizer(\.init_args)?\.lr(=|$)", a) for a in argv):
        return True
    for cfg in configs:
        node = cfg.get("optimizer") if isinstance(cfg, dict) else None
        if isinstance(node, dict) and ("lr" in node or "lr" in (node.get("init_args") or {})):
            return True
    return False


# ----------------------------------------------------------------------------------------------------- checkpoints
class FairCheckpoint(ModelCheckpoint):
    """``last.ckpt`` (rewritten at every validation) plus the best checkpoint by the model's monitored metric.

    When the monitored metric is not logged (no validation split, or a method that does not log it) the run keeps
    ``last.ckpt`` and says once that no best checkpoint is kept, instead of failing.

    For a method trained in stages (TwoStageCL, INLP, the ConFair pipeline, FairSamplingSimCLR, ...) the best
    checkpoint is chosen among the epochs of its final stage whenever the run reaches that stage: an earlier epoch
    is an unfinished model (e.g. INLP before its projection is fitted, a classifier head not yet trained).
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


def _newest(paths: list[Path]) -> Path | None:
    return max(paths, key=lambda p: p.stat().st_mtime, default=None)


def find_checkpoint(root: str | Path, which: str) -> Path:
    """``last.ckpt`` or the best checkpoint of the newest run under ``root`` (the trainer's ``default_root_dir``)."""
    root = Path(root)
    lasts = [p for p in root.rglob("last*.ckpt") if p.parent.name == "checkpoints"] if root.is_dir() else []
    newest_last = _newest(lasts)
    if which == "last":
        if newest_last is None:
            raise CLIError(f"--ckpt_path last: no checkpoints/last.ckpt under {str(root)!r} (the trainer's "
                           "default_root_dir); run `faircl fit` with the same config and default_root_dir first, or "
                           "pass --ckpt_path <file.ckpt>")
        return newest_last
    bests = [p for p in root.rglob("best*.ckpt") if p.parent.name == "checkpoints"] if root.is_dir() else []
    if newest_last is not None:
        same_run = [p for p in bests if p.parent == newest_last.parent]
        if same_run:
            return _newest(same_run)
    if bests:
        return _newest(bests)
    hint = " (the newest run kept only last.ckpt: use --ckpt_path last)" if newest_last is not None else ""
    raise CLIError(f"--ckpt_path best: no checkpoints/best-*.ckpt under {str(root)!r} (the trainer's "
                   f"default_root_dir){hint}; run `faircl fit` with the same config and default_root_dir first, or "
                   "pass --ckpt_path <file.ckpt>")


def resolve_ckpt_path(value: str | None, root: str | Path, explicit_untrained: bool) -> str | None:
    """The checkpoint file a ``fit`` / ``test`` / ``predict`` loads (``None`` = the current weights)."""
    if explicit_untrained:
        return None
    if value is None:
        value = "best"
    if value in ("best", "last"):
        return str(find_checkpoint(root, value))
    path = Path(value).expanduser()
    if not path.is_file():
        raise CLIError(f"--ckpt_path {value!r}: no such checkpoint file (or use best | last | none)")
    return str(path)


def checkpoint_epoch(path: str | Path) -> int | None:
    """The epoch (counted from 0) during or after which a Lightning checkpoint was saved; checks the file first."""
    try:
        ckpt = check_checkpoint(path)  # no code runs from the file; a corrupt one is a one-line CheckpointError
    except CheckpointError as err:
        raise CLIError(str(err)) from err
    epoch = ckpt.get("epoch")
    return None if epoch is None else int(epoch)


def guard_outputs(directory: str | Path | None, names: tuple[str, ...], overwrite: bool) -> None:
    """Refuse to write over the outputs of an earlier run in ``directory`` unless ``overwrite``."""
    if directory is None:  # no log folder (fast_dev_run): nothing is written
        return
    directory = Path(directory)
    existing = [n for n in names if (directory / n).exists() and (not (directory / n).is_dir()
                                                                  or any((directory / n).iterdir()))]
    if existing and not overwrite:
        raise CLIError(f"{str(directory)!r} already holds {', '.join(existing)} of an earlier run; pass --overwrite "
                       "to replace them, or choose another --trainer.default_root_dir (with a logger, every run gets "
                       "its own version folder)")
