"""One seed of one ``faircl sweep`` trial: :func:`run_seed`, the target a sweep's launcher starts
(``faircl.cli.trial:run_seed TRIAL_DIR SEED_INDEX``).

It is the run of :func:`faircl.runs.engine.fit_then_test` (so ``TRIAL_DIR/seed_<s>/`` holds exactly what ``faircl fit``
and ``faircl test`` write, and its record ``run.json``) with, for the first seed of a single-objective study,
Optuna's Lightning pruning callback: it reports the objective metric to the study after every validation epoch and
stops an unpromising trial (exit status :data:`faircl.cli.study.PRUNED_EXIT`, the record's state ``pruned``).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import optuna
from optuna_integration import PyTorchLightningPruningCallback

from faircl.cli.study import PRUNED_EXIT, build_pruner, open_storage
from faircl.runs.engine import fit_then_test
from faircl.runs.folders import write_record
from faircl.runs.user_error import is_usage_error, user_message

__all__ = ["run_seed"]


def _seed(trial_dir: Path, index: int) -> int:
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    # under DDP, check_pruned() re-reads the values rank 0 already reported
    warnings.filterwarnings("ignore", message=r".*reported value is ignored because this `step=.*")
    spec = json.loads((trial_dir / "trial_spec.json").read_text())
    seed = spec["seeds"][index]
    root = trial_dir / f"seed_{seed}"
    fit_args = [*spec["fit_args"], f"--seed_everything={seed}", f"--trainer.default_root_dir={root}"]
    pruning = None
    if spec.get("prune") and index == 0:
        study = optuna.load_study(study_name=spec["study"], storage=open_storage(spec["storage"]),
                                  pruner=build_pruner(spec["pruner"]))
        pruning = PyTorchLightningPruningCallback(optuna.trial.Trial(study, spec["trial_id"]), monitor=spec["prune"])

    # under DDP the callback stops the run and leaves its verdict in the storage: check_pruned() reads it
    extra = {"seed": seed, "trial": spec["trial"]}
    try:
        fit_then_test(root, fit_args, callbacks=[pruning] if pruning is not None else [], extra=extra,
                      after_fit=pruning.check_pruned if pruning is not None else None)
    except optuna.TrialPruned as err:
        root.mkdir(parents=True, exist_ok=True)
        write_record(root, {**extra, "state": "pruned", "reason": str(err)})
        print(f"faircl sweep: {err}", file=sys.stderr)
        return PRUNED_EXIT
    return 0


def run_seed(trial_dir: str, index: str | int) -> int:
    """Fit and test seed number ``index`` of the trial in ``trial_dir``; returns the exit status. A user error (a
    searched value the method refuses) ends the seed's log with its one-line reason after the traceback, which is the
    line the sweep quotes, and exit status 2."""
    try:
        return _seed(Path(trial_dir), int(index))
    except Exception as err:
        if not is_usage_error(err):
            raise
        import traceback  # deferred: only on a failure

        traceback.print_exc()
        print(f"faircl: error: {user_message(err)}", file=sys.stderr, flush=True)
        return 2
