"""One run: ``faircl fit``, then ``faircl test`` of the checkpoint it chose, in this process, and the record it leaves.

Every run of ``faircl bench`` and every seed of a ``faircl sweep`` trial is :func:`fit_then_test`: the same
:func:`faircl.runs.lightning_cli.run_cli` as the ``faircl`` command, so the run folder holds exactly what those two
commands write, plus ``epochs.json`` (:class:`~faircl.runs.history.EpochHistory`) and, once both succeeded, the
record ``run.json`` (:func:`faircl.runs.folders.write_record`): the checkpoint, its epoch and validation metrics, the
test report, the wall and CPU time, and how the run was launched (:func:`faircl.runs.executors.launch_info`).

Under several processes (``--trainer.devices 2 --trainer.strategy ddp``, or ``srun`` with two tasks) every rank
trains, and only rank 0 tests (on one device, the whole test split) and writes the record.

:func:`run_folder` runs the folder's ``config.yaml``: the target a launcher starts (``faircl.runs.engine:run_folder``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from faircl.runs.executors import launch_info
from faircl.runs.folders import write_record
from faircl.runs.history import EpochHistory
from faircl.runs.lightning_cli import run_cli
from faircl.runs.user_error import is_usage_error, user_message

__all__ = ["SINGLE_PROCESS", "fit_then_test", "run_folder"]

#: trainer arguments of the test: one process reads the whole test split
SINGLE_PROCESS = ("--trainer.devices=1", "--trainer.num_nodes=1", "--trainer.strategy=auto")

#: ``choose(folder, history, checkpoint_dir) -> (checkpoint, why)``: a selection rule's pick among the fit's checkpoints
Choose = Callable[[Path, EpochHistory, Path], tuple[str, dict[str, Any]]]
#: ``after(folder, test_cli) -> extra record entries``: more scoring of the tested model (a bench suite's items)
After = Callable[[Path, Any], dict[str, Any]]


def fit_then_test(folder: str | Path, fit_args: Sequence[str], callbacks: Sequence[Any] = (),
                  choose: Choose | None = None, after: After | None = None, after_fit: Callable[[], Any] | None = None,
                  extra: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Fit with ``fit_args`` (which write into ``folder``: its ``--trainer.default_root_dir``), test the chosen
    checkpoint (the fit's best, else its last, else ``choose``'s pick), write and return the record (``None`` on a
    rank other than 0). ``callbacks`` join the fit's trainer without entering its ``config.yaml`` (a sweep's pruning
    callback), ``after_fit`` is called on every rank once the fit ended (it may raise: a pruned trial); ``extra``
    entries join the record. Errors are raised."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    start, cpu = time.perf_counter(), time.process_time()  # a forked run's CPU clock starts at its fork
    history = EpochHistory(str(root / "epochs.json"))
    cli = run_cli(["fit", *fit_args], callbacks=[history, *callbacks])
    trainer = cli.trainer
    if after_fit is not None:
        after_fit()
    fit_dir = trainer.log_dir  # a collective under DDP (a broadcast from rank 0): every rank reads it
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()  # the test runs in rank 0 alone: its metrics must not sync
    if not trainer.is_global_zero:
        return None
    ckpt_cb = trainer.checkpoint_callback
    best = getattr(ckpt_cb, "best_model_path", "") or getattr(ckpt_cb, "last_model_path", "")
    chosen = None
    if choose is not None:
        best, chosen = choose(root, history, Path(ckpt_cb.dirpath))
    if not best:
        raise RuntimeError("the fit saved no checkpoint")
    at = history.at_checkpoint(best)
    val = at["metrics"] or {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
    fit_s = time.perf_counter() - start
    test = run_cli(["test", *fit_args, *SINGLE_PROCESS, f"--ckpt_path={best}"])
    test_dir = Path(test.trainer.log_dir or root)
    report = test_dir / "report.json"
    if not report.is_file():
        raise RuntimeError(f"the test wrote no {report}")
    record: dict[str, Any] = {
        "state": "complete", **(extra or {}), "report": _within(report, root), "checkpoint": _within(Path(best), root),
        "epoch": at["epoch"], "step": at["step"], "val": val, "monitor": getattr(ckpt_cb, "monitor", None),
        "fit_dir": _within(Path(fit_dir or root), root), "test_dir": _within(test_dir, root)}
    if chosen is not None:
        record["selected"] = chosen
    if after is not None:
        record.update(after(root, test))
    record.update(fit_s=round(fit_s, 3), wall_s=round(time.perf_counter() - start, 3),
                  cpu_s=round(time.process_time() - cpu, 3), **launch_info())
    write_record(root, record)
    return record


def _within(path: Path, root: Path) -> str:
    """``path`` relative to the run folder where it lies inside it (a folder that moves keeps its record true)."""
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def run_folder(folder: str, choose: Choose | None = None, after: After | None = None) -> int:
    """Fit and test the run whose ``config.yaml`` is in ``folder`` (:func:`fit_then_test`); returns the exit status
    (2 for the user's error, in one line at the end of the log)."""
    root = Path(folder)
    try:
        fit_then_test(root, ["--config", str(root / "config.yaml")], choose=choose, after=after)
    except Exception as err:
        if not is_usage_error(err):
            raise
        print(f"faircl: error: {user_message(err)}", file=sys.stderr, flush=True)
        return 2
    return 0


def user_path(folder: str | None = None) -> None:
    """Put ``folder`` (default ``$FAIRCL_RUN_PATH``), the folder a user's class is imported from, on ``sys.path``."""
    extra = folder or os.environ.get("FAIRCL_RUN_PATH")
    if extra and extra not in sys.path:
        sys.path.insert(0, extra)
