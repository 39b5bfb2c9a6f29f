"""The workers of a ``faircl sweep`` (:mod:`faircl.cli.sweep`): :class:`Worker` runs trials (each seed through an
executor of :mod:`faircl.runs.executors`), :func:`work` runs them while the study's budget allows and waits for the
others', :func:`serve` is one worker process's run of it (SIGTERM and Ctrl-C requeue its trial).

With ``--launcher slurm`` the sweep's command submits its workers as one SLURM job array (:func:`run_array`); each
task is :func:`worker_task`, which opens the study that ``<out>/sweep.json`` names and runs :func:`work` with its
seeds in its own process (forked from a pre-imported server, or fresh processes for a multi-process trial).
"""

from __future__ import annotations

import json
import logging
import shlex
import signal
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from faircl.cli.search import Param, override
from faircl.cli.study import OWNER, PRUNED_EXIT, build_pruner, describe_owner, fail_dead_trials, journal_path, \
    open_storage, this_worker
from faircl.runs.executors import LAUNCHER_ENV, Executor, FreshProcesses, Job, LocalPool
from faircl.runs.folders import read_record
from faircl.runs.parse_only import parse_command
from faircl.runs.pool import PRELOAD, needs_fresh_process

__all__ = ["DEFINITION", "MAX_FAILURES_IN_A_ROW", "SAMPLERS", "TrialFailed", "Worker", "budget_left", "make_sampler",
           "run_array", "serve", "work", "worker_task"]

SAMPLERS = {"tpe": optuna.samplers.TPESampler, "random": optuna.samplers.RandomSampler,
            "nsga2": optuna.samplers.NSGAIISampler, "qmc": optuna.samplers.QMCSampler,
            "gp": optuna.samplers.GPSampler}
#: a worker gives up after this many failed trials in a row (a broken setting, not bad luck)
MAX_FAILURES_IN_A_ROW = 3
DEFINITION = ("fit_args", "search", "objectives", "seeds", "sampler", "pruner")
#: the target of a SLURM array task
WORKER_TASK = "faircl.cli.sweep_workers:worker_task"


class TrialFailed(Exception):
    """A trial's child process failed (its log is named in the message)."""


def make_sampler(name: str | None, objectives: int, seed: int | None) -> optuna.samplers.BaseSampler:
    """The sampler ``name``; unset, Optuna's defaults: TPE for one objective, NSGA-II for several."""
    return SAMPLERS[name or ("tpe" if objectives == 1 else "nsga2")](seed=seed)


class _NoInterruptTraceback(logging.Filter):
    """Optuna logs a trial ended by Ctrl-C / SIGTERM as a failure, with its traceback and a second "failed with value
    None" line; the worker says it in one line instead."""

    interrupted = False

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt):
            self.interrupted = True
            return False
        return not (self.interrupted and "failed with value None" in record.getMessage())


# ---------------------------------------------------------------------------------------------------- trials
class Worker:
    """One worker process of a sweep: Optuna's ``study.optimize`` over ``objective``. Each seed runs through
    ``executor`` (unset: forked from a pre-imported server, or a fresh process for a multi-process trial) with
    ``seed_env`` added to its environment."""

    def __init__(self, study: optuna.Study, definition: dict[str, Any], out: Path, storage_url: str,
                 trials: int, heartbeat: int = 30, executor: Executor | None = None,
                 seed_env: dict[str, str] | None = None) -> None:
        self.study, self.definition, self.out, self.storage_url = study, definition, out, storage_url
        self.params = [Param.from_dict(d) for d in definition["search"]]
        self.failures, self.trials, self.heartbeat, self.seed_env = 0, trials, heartbeat, dict(seed_env or {})
        self.journal = journal_path(storage_url) is not None
        # a multi-process trial is a fresh process (Lightning's launcher re-runs its command line); else each seed is
        # forked from the worker's pre-imported server: start-up is paid once per worker
        if executor is None:
            trainer = parse_command(["fit", *definition["fit_args"]])[0].trainer
            executor = FreshProcesses() if needs_fresh_process(trainer) else LocalPool((*PRELOAD, "faircl.cli.trial"))
        self.executor = executor

    def objective(self, trial: optuna.Trial) -> float | tuple[float, ...]:
        if self.journal:  # no heartbeat there: other workers check this owner (faircl.cli.study)
            trial.set_user_attr(OWNER, this_worker())
        values = {p.path: p.suggest(trial) for p in self.params}
        trial_dir = self.out / "trials" / f"trial_{trial.number:04d}"
        trial_dir.mkdir(parents=True, exist_ok=True)
        objectives = self.definition["objectives"]
        prune = objectives[0][0] if self.definition["pruner"] != "none" and len(objectives) == 1 else None
        spec = {"fit_args": [*self.definition["fit_args"], *[override(p, values[p.path]) for p in self.params]],
                "seeds": self.definition["seeds"], "storage": self.storage_url, "study": self.study.study_name,
                "trial_id": trial._trial_id, "trial": trial.number, "prune": prune,
                "pruner": self.definition["pruner"]}
        (trial_dir / "trial_spec.json").write_text(json.dumps(spec, indent=2))
        frozen = next(t for t in self.study.get_trials(deepcopy=False) if t.number == trial.number)
        retry_of = frozen.user_attrs.get("retry_of", frozen.system_attrs.get("failed_trial"))
        print(f"faircl sweep: trial {trial.number} {values}" + (f" (retry of trial {retry_of})" if retry_of is not None
                                                                  else ""), file=sys.stderr, flush=True)
        results = []
        for index, seed in enumerate(spec["seeds"]):
            log, folder = trial_dir / f"seed_{seed}.log", trial_dir / f"seed_{seed}"
            job = Job(f"trial {trial.number} · seed {seed}", "faircl.cli.trial:run_seed", (str(trial_dir), str(index)),
                      folder, log, dict(self.seed_env))
            codes: list[int] = []
            try:
                self.executor.run([job], lambda _job, code, _info: codes.append(code))
            except KeyboardInterrupt:
                self.study.enqueue_trial(values, user_attrs={"retry_of": trial.number}, skip_if_exists=False)
                raise
            code, record = codes[0], read_record(folder)
            if code == PRUNED_EXIT:
                raise optuna.TrialPruned(f"trial {trial.number} pruned (seed {seed}); log: {log}")
            if code != 0 or record is None or record.get("state") != "complete":
                tail = " | ".join(log.read_text().strip().splitlines()[-3:]) if log.is_file() else ""
                raise TrialFailed(f"trial {trial.number}, seed {seed}: exit status {code}; see {log}: {tail}")
            results.append(record)
        return self._finish(trial, values, results, retry_of)

    def _finish(self, trial: optuna.Trial, values: dict[str, Any], results: list[dict[str, Any]],
                retry_of: int | None) -> float | tuple[float, ...]:
        names = [n for n, _ in self.definition["objectives"]]
        per_seed = {n: [float(r["val"].get(n, float("nan"))) for r in results] for n in names}
        mean = {n: float(np.mean(v)) for n, v in per_seed.items()}
        std = {n: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for n, v in per_seed.items()}
        summary = {"trial": trial.number, "params": values, "seeds": [r["seed"] for r in results],
                   "objectives": self.definition["objectives"], "mean": mean, "std": std, "per_seed": per_seed,
                   "runs": results, "retry_of": retry_of, "state": "complete"}
        trial_dir = self.out / "trials" / f"trial_{trial.number:04d}"
        tmp = trial_dir / "trial.json.tmp"
        tmp.write_text(json.dumps(summary, indent=2))
        tmp.replace(trial_dir / "trial.json")
        for key in ("mean", "std", "per_seed"):
            trial.set_user_attr(key, summary[key])
        trial.set_user_attr("dir", str(trial_dir))
        self.failures = 0
        out = tuple(mean[n] for n in names)
        return out[0] if len(out) == 1 else out

    def after_trial(self, study: optuna.Study, frozen: optuna.trial.FrozenTrial) -> None:
        if frozen.state == TrialState.FAIL:
            self.failures += 1
        if self.failures >= MAX_FAILURES_IN_A_ROW or budget_left(study, self.trials, self.heartbeat) <= 0:
            study.stop()


def budget_left(study: optuna.Study, trials: int, heartbeat: int = 30) -> int:
    """Trials a worker may still start: ``trials`` minus the finished (complete or pruned) and the running ones
    (after failing those whose worker is dead: :func:`faircl.cli.study.fail_dead_trials`). Queued retries are always
    run."""
    fail_dead_trials(study, heartbeat)
    states = [t.state for t in study.get_trials(deepcopy=False)]
    if TrialState.WAITING in states:
        return max(1, states.count(TrialState.WAITING))
    return trials - sum(s in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING) for s in states)


def work(study: optuna.Study, worker: Worker, trials: int, heartbeat: int) -> None:
    """Run trials while the budget allows. While other trials fill the budget (before this worker's first trial and
    after its last) wait for them, checking every ``heartbeat`` seconds: one whose worker is found dead is failed and
    queued again, and this worker runs it. It stops waiting when the only running trials left have workers it cannot
    check (on a journal: another host's, see :mod:`faircl.cli.study`), saying so."""
    while worker.failures < MAX_FAILURES_IN_A_ROW:
        if budget_left(study, trials, heartbeat) > 0:
            study.optimize(worker.objective, catch=(TrialFailed,), gc_after_trial=True, callbacks=[worker.after_trial])
            continue
        unknown = fail_dead_trials(study, heartbeat)
        running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        if not running:
            return
        if unknown and len(unknown) == len(running):
            for t in unknown:
                print(f"faircl sweep: trial {t.number} runs in a worker this machine cannot check "
                      f"({describe_owner(t.user_attrs.get(OWNER))}); this worker stops waiting for it. Should that "
                      f"worker have died, `faircl sweep --out {worker.out} --resume` where it ran queues the trial "
                      "again", file=sys.stderr)
            return
        time.sleep(heartbeat)


def serve(study: optuna.Study, worker: Worker, trials: int, heartbeat: int, resume: str) -> bool:
    """This process's run of :func:`work`: SIGTERM is a Ctrl-C, and either requeues the running trial and says, in
    one line, how to continue (``resume``). Returns False when interrupted."""
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # a terminated worker re-queues its trial
    quiet = _NoInterruptTraceback()
    optuna_log = logging.getLogger("optuna.study._optimize")
    optuna_log.addFilter(quiet)
    try:
        work(study, worker, trials, heartbeat)
    except KeyboardInterrupt:
        print(f"faircl sweep: interrupted; the running trial is queued again. Continue with `{resume}`",
              file=sys.stderr)
        return False
    finally:
        signal.signal(signal.SIGTERM, previous)
        optuna_log.removeFilter(quiet)
    return True


# ---------------------------------------------------------------------------------------------------- SLURM
def worker_task(out: str, index: str, sampler_seed: str) -> int:
    """One SLURM array task of ``faircl sweep --launcher slurm``: a worker of the sweep in ``out`` (its
    ``sweep.json``: the definition, the storage, the budget), its sampler seeded with ``sampler_seed + index``
    (``none``: unseeded). Returns 0, 1 when trials kept failing, 130 when cancelled (its trial queued again)."""
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    folder = Path(out)
    record = json.loads((folder / "sweep.json").read_text())
    definition = {k: record[k] for k in DEFINITION}
    seed = None if sampler_seed == "none" else int(sampler_seed) + int(index)
    study = optuna.load_study(study_name=record["study"], storage=open_storage(record["storage"], record["heartbeat"]),
                              sampler=make_sampler(definition["sampler"], len(definition["objectives"]), seed),
                              pruner=build_pruner(definition["pruner"]))
    heartbeat, trials = int(record["heartbeat"]), int(record["trials"])
    # the seeds' records name the launcher that placed their worker (their job id is the task's)
    worker = Worker(study, definition, folder, record["storage"], trials, heartbeat,
                    seed_env={LAUNCHER_ENV: "slurm"})
    start = time.perf_counter()
    if not serve(study, worker, trials, heartbeat, f"faircl sweep --out {out} --resume"):
        return 130
    print(f"faircl sweep: this worker ran for {time.perf_counter() - start:.0f} s", file=sys.stderr)
    if worker.failures >= MAX_FAILURES_IN_A_ROW:
        print(f"faircl sweep: error: {worker.failures} trials failed in a row; see the seed_*.log files under "
              f"{folder / 'trials'}", file=sys.stderr)
        return 1
    return 0


def run_array(executor: Executor, study: optuna.Study, out: Path, workers: int, sampler_seed: int | None,
              heartbeat: int, resume_args: list[str]) -> int:
    """Submit ``workers`` :func:`worker_task` s as one job array through ``executor`` (a SLURM executor), report each
    task's end, and return 0 when every task ended well, 1 when one failed, 130 when interrupted (the array is
    cancelled; ``faircl sweep RESUME_ARGS`` continues)."""
    logs = out / "workers"
    logs.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    seed = "none" if sampler_seed is None else str(sampler_seed)
    jobs = [Job(f"worker {i}", WORKER_TASK, (str(out.resolve()), str(i), seed), logs, logs / f"{stamp}-{i}.log")
            for i in range(workers)]
    resume = shlex.join(["faircl", "sweep", *resume_args])
    print(f"faircl sweep: submitting {workers} worker{'s' * (workers > 1)} as one SLURM job array; worker logs in "
          f"{logs}", file=sys.stderr, flush=True)
    failed: list[str] = []

    def done(job: Job, code: int, info: dict[str, Any]) -> None:
        what = {0: "done", 130: "cancelled"}.get(code, f"failed (exit status {code}, SLURM state "
                                                      f"{info.get('state', 'unknown')})")
        where = f"log {job.log}" + (f"; SLURM log {info.get('slurm_log')}" if code else "")
        print(f"faircl sweep: {job.name} (SLURM job {info.get('job_id')}) {what}; {where}", file=sys.stderr,
              flush=True)
        if code:
            failed.append(job.name)

    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        executor.run(jobs, done)
    except KeyboardInterrupt as err:
        fail_dead_trials(study, heartbeat)  # the cancelled tasks' trials, if they could not requeue them
        print(f"faircl sweep: interrupted; {err or 'the SLURM job array is cancelled'}; the running trials are "
              f"queued again. Continue with `{resume}`", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    fail_dead_trials(study, heartbeat)  # a task that died in a trial: its trial is queued for the next run
    waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    if waiting:
        print(f"faircl sweep: {len(waiting)} trial{'s' * (len(waiting) > 1)} queued again; run them with "
              f"`{resume}`", file=sys.stderr)
    return 1 if failed else 0
