"""The callbacks the ``faircl`` command adds to a run's trainer: on a resumed ``fit`` (:class:`CarryBest`,
:class:`ConfiguredOptimizer`) and on Ctrl-C (:class:`ResumeHint`), and :func:`say`, its notes on stderr."""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.utilities.rank_zero import rank_zero_only

from faircl.checkpoints import CheckpointError, load_checkpoint


def say(line: str, trainer: Any = None) -> None:
    """Print a faircl note on stderr, once: from the global rank 0 of a multi-process run."""
    if trainer.is_global_zero if trainer is not None else getattr(rank_zero_only, "rank", 0) == 0:
        print(line, file=sys.stderr)


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
