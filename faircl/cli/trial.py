"""One seed of one ``faircl sweep`` trial, in its own process: ``python -m faircl.cli.trial TRIAL_DIR SEED_INDEX``.

Runs ``faircl fit`` and then ``faircl test --ckpt_path <best>`` (the same ``faircl.cli.app.run_cli`` as the
``faircl`` command, so the run folder under ``TRIAL_DIR/seed_<s>/`` holds exactly what those commands write) with two
callbacks that do not enter the run's ``config.yaml``: one records the validation metrics at every validation, and,
for the first seed of a single-objective study, Optuna's Lightning pruning callback reports the objective metric to
the study after every validation epoch and stops an unpromising trial.

Under several processes (``--trainer.devices 2 --trainer.strategy ddp``) Lightning starts the other ranks by running
this same command again; every rank trains, the pruning callback reports from rank 0 only, and only rank 0 runs the
test (on one device) and writes ``result.json`` for the worker.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

import lightning as L
import optuna
import torch
from optuna_integration import PyTorchLightningPruningCallback

from faircl.cli.app import run_cli
from faircl.cli.dispatch import is_usage_error, user_message
from faircl.cli.sweep import PRUNED_EXIT, WORKER_ENV, build_pruner, open_storage

#: trainer arguments of the test run: one process reads the whole test split
SINGLE_PROCESS = ("--trainer.devices=1", "--trainer.num_nodes=1", "--trainer.strategy=auto")


class ValidationRecorder(L.Callback):
    """Keeps the logged ``val/*`` metrics of every validation (outside sanity checks), by global step."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        values = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
        self.records.append({"epoch": trainer.current_epoch, "step": trainer.global_step, "val": values})


def _at_checkpoint(records: list[dict[str, Any]], ckpt: str) -> dict[str, Any]:
    """The validation record of the checkpoint file ``ckpt`` (its ``step=`` in the name), else the last one."""
    match = re.search(r"step=(\d+)", Path(ckpt).name)
    if match:
        for rec in reversed(records):
            if rec["step"] == int(match.group(1)):
                return rec
    return records[-1] if records else {"epoch": None, "step": None, "val": {}}


def run_seed(trial_dir: Path, index: int) -> int:
    """Fit and test seed number ``index`` of the trial in ``trial_dir``; returns the exit status."""
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    # under DDP, check_pruned() re-reads the values rank 0 already reported
    warnings.filterwarnings("ignore", message=r".*reported value is ignored because this `step=.*")
    # sys.argv is this trial's command (Lightning's DDP launcher re-runs it); the CLI reads its arguments from `args`
    warnings.filterwarnings("ignore", message=r".*args parameter is intended to run from within Python.*")
    spec = json.loads((trial_dir / "trial_spec.json").read_text())
    seed = spec["seeds"][index]
    root = trial_dir / f"seed_{seed}"
    common = [*spec["fit_args"], f"--seed_everything={seed}", f"--trainer.default_root_dir={root}"]
    recorder = ValidationRecorder()
    callbacks: list[L.Callback] = [recorder]
    pruning = None
    if spec.get("prune") and index == 0:
        study = optuna.load_study(study_name=spec["study"], storage=open_storage(spec["storage"]),
                                  pruner=build_pruner(spec["pruner"]))
        pruning = PyTorchLightningPruningCallback(optuna.trial.Trial(study, spec["trial_id"]), monitor=spec["prune"])
        callbacks.append(pruning)
    result: dict[str, Any] = {"seed": seed, "trial": spec["trial"]}
    try:
        cli = run_cli(["fit", *common], callbacks=callbacks)
        if pruning is not None:
            pruning.check_pruned()  # under DDP the callback stops the run and leaves the verdict in the storage
    except optuna.TrialPruned as err:
        root.mkdir(parents=True, exist_ok=True)
        (root / "result.json").write_text(json.dumps({**result, "state": "pruned", "reason": str(err)}, indent=2))
        print(f"faircl sweep: {err}", file=sys.stderr)
        return PRUNED_EXIT
    trainer = cli.trainer
    fit_dir = trainer.log_dir  # a collective under DDP (a broadcast from rank 0): every rank reads it
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()  # the test runs in rank 0 alone: its metrics must not sync
    if not trainer.is_global_zero:
        return 0
    ckpt_cb = trainer.checkpoint_callback
    best = getattr(ckpt_cb, "best_model_path", "") or getattr(ckpt_cb, "last_model_path", "")
    rec = _at_checkpoint(recorder.records, best)
    if not recorder.records:  # trained in spawned processes (ddp_spawn): the last validation's metrics
        rec["val"] = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
    test = run_cli(["test", *common, *SINGLE_PROCESS, f"--ckpt_path={best}" if best else "--ckpt_path=none"])
    test_dir = Path(test.trainer.log_dir or root)
    result.update(state="complete", checkpoint=best, epoch=rec["epoch"], step=rec["step"], val=rec["val"],
                  monitor=getattr(ckpt_cb, "monitor", None), fit_dir=str(fit_dir), test_dir=str(test_dir),
                  report=str(test_dir / "report.json"))
    tmp = root / "result.json.tmp"
    tmp.write_text(json.dumps(result, indent=2))
    tmp.replace(root / "result.json")
    return 0


def follow_worker() -> None:
    """End this process when the process that started it ends (Linux ``PR_SET_PDEATHSIG``), so that a killed sweep
    worker leaves no trial writing into its folder; the other ranks of a multi-process trial follow rank 0."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError, TypeError):  # not Linux
        return
    worker = os.environ.get(WORKER_ENV)
    if worker and "LOCAL_RANK" not in os.environ and os.getppid() != int(worker):
        os._exit(1)  # the worker ended before this process could follow it


def pooled_seed(trial_dir: str, index: int) -> int:
    """:func:`run_seed` in a child of the sweep worker's fork server (:class:`faircl.cli.run_pool.RunPool`): it ends
    with the server, which ends with the worker."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError, TypeError):  # not Linux
        pass
    return _reasoned(Path(trial_dir), index)


def _reasoned(trial_dir: Path, index: int) -> int:
    """:func:`run_seed`; a user error (a searched value the method refuses) ends the seed's log with its one-line
    reason after the traceback, which is the line the sweep quotes, and exit status 2."""
    try:
        return run_seed(trial_dir, index)
    except Exception as err:
        if not is_usage_error(err):
            raise
        traceback.print_exc()
        print(f"faircl: error: {user_message(err)}", file=sys.stderr, flush=True)
        return 2


def main(argv: list[str] | None = None) -> int:
    follow_worker()
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m faircl.cli.trial TRIAL_DIR SEED_INDEX (started by `faircl sweep`)", file=sys.stderr)
        return 2
    return _reasoned(Path(args[0]), int(args[1]))


if __name__ == "__main__":
    sys.exit(main())
