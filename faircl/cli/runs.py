"""Run folders of the ``faircl`` command: shipped configs by name, checkpoints of earlier runs, no overwriting.

A run writes into ``<default_root_dir>/lightning_logs/version_<n>/`` (``config.yaml``, ``metrics.csv``,
``checkpoints/last.ckpt``, ``checkpoints/best-epoch=<e>-step=<s>.ckpt``; ``report.json`` / ``report.md`` after
``test``; ``predictions.pt`` / ``predictions.csv`` after ``predict``). ``--ckpt_path best|last`` finds the newest run
under the same ``default_root_dir``.
"""

from __future__ import annotations

import copy
import math
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.utilities.rank_zero import rank_zero_only

from faircl.checkpoints import CheckpointError, check_checkpoint, load_checkpoint
from faircl.checkpoints import FairCheckpoint, final_stage_or_unreachable  # noqa: F401  # re-exported (moved there)
from faircl.cli.config_files import (CONFIG_DIR, CLIError, config_files, expand_configs, option_value,  # noqa: F401
                               read_config, resolve_config, shipped_configs)

UNTRAINED = ("none", "null", "untrained")


# ----------------------------------------------------------------------------------------------------- configs
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
        except CLIError:
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
        raise CLIError(f"--ckpt_path {which}: no run of {what} with checkpoints under {str(root)!r} (the trainer's "
                       f"default_root_dir){seen}; run `faircl fit` with the same config first, or pass "
                       "--ckpt_path <file.ckpt>")
    run = match[0]
    pattern = "last*.ckpt" if which == "last" else "best*.ckpt"
    found = _newest([p for p in (run / "checkpoints").glob(pattern) if p.is_file()])
    if found is None:
        hint = ("it kept only last.ckpt (its monitored metric was never logged?): use --ckpt_path last"
                if which == "best" else "it has no last.ckpt")
        raise CLIError(f"--ckpt_path {which}: the newest run of {what} under {str(root)!r} ({str(run)!r}) has no "
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
        raise CLIError(f"--ckpt_path {value!r}: no such checkpoint file (or use best | last | none)")
    return str(path)


def checkpoint_dict(path: str | Path) -> dict[str, Any]:
    """The checkpoint at ``path``, checked (:func:`~faircl.checkpoints.check_checkpoint`: no code runs from the file);
    a missing, corrupt or unsafe file is a one-line :class:`CLIError`."""
    try:
        return check_checkpoint(path)
    except CheckpointError as err:
        raise CLIError(str(err)) from err


def checkpoint_epoch(path: str | Path) -> int | None:
    """The epoch (counted from 0) during or after which a Lightning checkpoint was saved; checks the file first."""
    epoch = checkpoint_dict(path).get("epoch")
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


def config_filename(subcommand: str, has_logger: bool) -> str:
    """The config file a command writes: ``config.yaml`` in its own version folder when a logger makes one;
    without a logger every command shares ``default_root_dir``, so each keeps its own file (``config.yaml`` for
    ``fit``, ``config.<command>.yaml`` otherwise) and a ``test`` never touches the ``fit`` config."""
    return "config.yaml" if has_logger or subcommand == "fit" else f"config.{subcommand}.yaml"


LINKED = ("num_classes", "num_groups", "input_dim")


def linked_values_given(argv: list[str], configs: list[tuple[Path, dict[str, Any]]]) -> dict[str, tuple[Any, str]]:
    """The values the user gave for the arguments the CLI links from the data into the model (``num_classes``,
    ``num_groups``, ``input_dim``): ``{name: (value, where)}``, the command line winning over configs."""
    given: dict[str, tuple[Any, str]] = {}
    for path, cfg in configs:
        node = cfg.get("model") if isinstance(cfg, dict) else None
        if isinstance(node, dict):
            init = node.get("init_args") if isinstance(node.get("init_args"), dict) else node
            for name in LINKED:
                if name in init and init[name] is not None:
                    given[name] = (init[name], f"model.init_args.{name}: {init[name]} in {str(path)!r}")
    for name in LINKED:
        for key in (f"model.init_args.{name}", f"model.{name}"):
            value = option_value(argv, key)
            if value is not None:
                given[name] = (value, f"--{key} {value}")
    return given


def check_linked(given: dict[str, tuple[Any, str]], data: Any, origin: str = "") -> None:
    """Refuse a linked argument whose given value differs from the datamodule's (``CLIError`` naming both)."""
    for name, (value, where) in given.items():
        have = getattr(data, name, None)
        try:
            same = have is None or int(value) == int(have)
        except (TypeError, ValueError):
            same = False
        if not same:
            raise CLIError(f"{where}{origin} disagrees with the data: {type(data).__name__} has {name}={have}, and the "
                           f"model takes {name} from the data; leave it out, or change the data")


def checkpoint_class(ckpt: dict[str, Any]) -> str | None:
    """The import path of the method class stored in a checkpoint written by ``faircl fit`` (``None`` if unknown)."""
    hp = ckpt.get("hyper_parameters") or {}
    value = hp.get("_class_path") if isinstance(hp, dict) else None
    return value if isinstance(value, str) else None


class CarryBest(Callback):
    """On ``fit --ckpt_path``, keep the best checkpoint of the *whole* run, not only of the resumed epochs.

    A resumed run writes into a new folder, where Lightning forgets the best score of the checkpoint's run
    ("best_model_score won't be reloaded"). This callback copies that run's best file into the new folder and restores
    its score into the checkpoint callback, so a later epoch replaces it only when it is better.
    """

    def __init__(self, resumed_from: str | Path) -> None:
        self.resumed_from = Path(resumed_from)

    def on_train_start(self, trainer, pl_module) -> None:
        cb = trainer.checkpoint_callback
        if not isinstance(cb, ModelCheckpoint) or not cb.dirpath or cb.save_top_k != 1 or cb.monitor is None:
            return
        state = _stored_best(self.resumed_from, cb)
        if state is None:
            return
        old, score = state
        target = Path(cb.dirpath) / old.name
        if Path(old).resolve() != target.resolve():
            if trainer.is_global_zero:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(old, target)
            trainer.strategy.barrier()
        score_t = torch.tensor(float(score))
        cb.best_k_models = {str(target): score_t}
        cb.kth_best_model_path = cb.best_model_path = str(target)
        cb.best_model_score = cb.kth_value = score_t


def _stored_best(resumed_from: Path, cb: ModelCheckpoint) -> tuple[Path, float] | None:
    """(file, score) of the best checkpoint recorded in ``resumed_from`` for a callback like ``cb``, if it exists."""
    try:
        callbacks = load_checkpoint(resumed_from).get("callbacks") or {}
    except CheckpointError:
        return None
    for key, st in callbacks.items():
        if not (isinstance(st, dict) and str(key).startswith(type(cb).__name__) and st.get("monitor") == cb.monitor):
            continue
        path, score = st.get("best_model_path"), st.get("best_model_score")
        if path and score is not None and Path(path).is_file():
            return Path(path), float(score)
    return None


# ----------------------------------------------------------------------------------------------------- resumed runs
def epochs_trained(ckpt: dict[str, Any]) -> int | None:
    """How many epochs a checkpoint has trained: its epoch (counted from 0) plus one when it was saved after the
    epoch's last training batch (a resume starts with the next epoch), else its epoch (a resume finishes it)."""
    epoch = ckpt.get("epoch")
    if epoch is None:
        return None
    progress = ((ckpt.get("loops") or {}).get("fit_loop") or {}).get("epoch_loop.batch_progress") or {}
    return int(epoch) + (1 if progress.get("is_last_batch", True) else 0)


class ConfiguredOptimizer(Callback):
    """On ``fit --ckpt_path``: the optimiser trains with this run's learning rates and weight decays.

    Lightning restores the optimiser's state from the checkpoint, its options included, so a resume with
    ``--model.lr 0.1`` would go on at the stored learning rate. This callback notes the options of the optimiser the
    method built (``on_fit_start``, before the restore) and puts them back after the restore (``on_train_start``),
    keeping the rest of the state (moments, steps); a schedule keeps its place (the learning rate is scaled by the new
    base over the old, the scheduler's ``base_lrs`` replaced). It says which values it changed.
    """

    def __init__(self) -> None:
        self.built: list[list[dict[str, float]]] = []

    @staticmethod
    def _options(group: dict[str, Any]) -> dict[str, float]:
        out = {"lr": float(group.get("initial_lr", group["lr"]))}
        if "weight_decay" in group:
            out["weight_decay"] = float(group["weight_decay"])
        return out

    def on_fit_start(self, trainer, pl_module) -> None:
        self.built = [[self._options(g) for g in opt.param_groups] for opt in trainer.optimizers]

    def on_train_start(self, trainer, pl_module) -> None:
        said = []
        for opt, built in zip(trainer.optimizers, self.built):
            if len(built) != len(opt.param_groups):
                continue
            schedulers = [c.scheduler for c in trainer.lr_scheduler_configs if c.scheduler.optimizer is opt]
            for i, (group, want) in enumerate(zip(opt.param_groups, built)):
                have = self._options(group)
                if not math.isclose(have["lr"], want["lr"], rel_tol=1e-9, abs_tol=0.0):
                    group["lr"] = group["lr"] * want["lr"] / have["lr"] if have["lr"] > 0 else want["lr"]
                    if "initial_lr" in group:
                        group["initial_lr"] = want["lr"]
                    for sched in schedulers:
                        if i < len(getattr(sched, "base_lrs", [])):
                            sched.base_lrs[i] = want["lr"]
                    said.append(f"lr {want['lr']:g} (stored {have['lr']:g})")
                if "weight_decay" in want and not math.isclose(have.get("weight_decay", 0.0), want["weight_decay"],
                                                               rel_tol=1e-9, abs_tol=1e-15):
                    group["weight_decay"] = want["weight_decay"]
                    said.append(f"weight_decay {want['weight_decay']:g} (stored {have.get('weight_decay')})")
        if said and trainer.is_global_zero:
            groups = "" if len(said) == 1 else f" ({len(said)} values over its parameter groups)"
            print(f"faircl: the resumed optimizer trains with {said[0]}{groups}; the rest of its state is the "
                  "checkpoint's", file=sys.stderr)


def say(line: str, trainer: Any = None) -> None:
    """Print a faircl note on stderr, once: from the global rank 0 of a multi-process run."""
    if trainer.is_global_zero if trainer is not None else getattr(rank_zero_only, "rank", 0) == 0:
        print(line, file=sys.stderr)


def argument_leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    """``{"encoder_kwargs.hidden_dim": 64, "lr": 0.001, ...}``: the leaves of a method's arguments (a Namespace),
    descending into dictionaries."""
    items = node.as_dict().items() if hasattr(node, "as_dict") else (node or {}).items()
    out: dict[str, Any] = {}
    for key, value in items:
        if isinstance(value, dict) and value:
            out.update(argument_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def set_argument_leaf(init: Any, leaf: str, value: Any) -> None:
    top, *rest = leaf.split(".")
    if not rest:
        init[top] = value
        return
    tree = copy.deepcopy(dict(init[top] or {}))
    node = tree
    for key in rest[:-1]:
        node = node.setdefault(key, {})
    node[rest[-1]] = value
    init[top] = tree


def given_model_options(argv: list[str]) -> list[str]:
    """The method's arguments set on the command line, as dotted paths: ``--model.init_args.encoder_kwargs.hidden_dim
    32`` → ``encoder_kwargs.hidden_dim``; ``--model.lr=0.1`` → ``lr``."""
    keys = []
    for arg in argv:
        if not arg.startswith("--model."):
            continue
        key = arg[len("--model."):].split("=", 1)[0]
        key = key[len("init_args."):] if key.startswith("init_args.") else key
        if key and key not in ("help", "class_path", "dict_kwargs") and not key.startswith("dict_kwargs."):
            keys.append(key)
    return keys


_INTERRUPTIONS: list[str] = []


class ResumeHint(Callback):
    """Remembers a Ctrl-C during ``fit`` (Lightning shuts down and exits 1) and how to resume the run."""

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        if not isinstance(exception, KeyboardInterrupt):
            return
        cb = trainer.checkpoint_callback
        last = Path(cb.dirpath) / "last.ckpt" if getattr(cb, "dirpath", None) else None
        _INTERRUPTIONS.append(f"resume the run with the same command and --ckpt_path last (its last checkpoint: {last})"
                            if last is not None and last.is_file() else
                            "no checkpoint was saved yet (no validation ended): run the same command again")


def interruption() -> str | None:
    """How to resume after a Ctrl-C during ``fit`` in this process, or ``None`` when there was none."""
    return _INTERRUPTIONS[-1] if _INTERRUPTIONS else None
