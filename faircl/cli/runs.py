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

from faircl.checkpoints import CheckpointError, check_checkpoint
from faircl.checkpoints import FairCheckpoint, final_stage_or_unreachable  # noqa: F401  # re-exported (moved there)

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
# The checkpoint policy (FairCheckpoint, the final-stage rule) is in faircl.checkpoints: FairModule.configure_callbacks
# returns it, so a plain Trainer keeps the same best checkpoint as the CLI.
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
