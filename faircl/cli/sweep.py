"""``faircl sweep``: a hyper-parameter search with Optuna in which every trial is an ordinary faircl fit and test.

    faircl sweep --config confair/synthbios --search model.lambda_fair=log:0.01:10 \\
        --search model.temperature=0.05:1 --trials 20 --objectives val/accuracy:max,val/tpr_gap_rms:min --seeds 3

Each trial samples the searched arguments with Optuna's sampler (``--sampler``, default Optuna's: TPE for one
objective, NSGA-II for several) and runs, for every seed, ``faircl fit`` then ``faircl test --ckpt_path best`` in a
child process (:func:`faircl.cli.trial.run_seed`) whose run folder ``<out>/trials/trial_<nnnn>/seed_<s>/lightning_logs/...``
(``trial_0000/seed_0``: the trial number in four digits) holds exactly what those commands write (config, checkpoints,
metrics, report). The objective values are the validation metrics of the selected (best) checkpoint, averaged over the
seeds; their per-seed values and standard deviation are kept as trial attributes and in ``trial.json``. One
objective: a single-objective study, pruned by Optuna's Lightning pruning callback on that validation metric (first
seed; ``--pruner none`` turns it off). Several: a multi-objective study whose Pareto front is Optuna's
(``study.best_trials``).

Storage: ``<out>/study.db`` (SQLite, nothing to start) or ``--storage <database URL>``. A second ``faircl sweep
--out DIR --resume`` (on this machine or any sharing the storage and the folder) adds a worker; ``--trials N`` is the
study's budget: a worker starts a trial only while the finished (complete or pruned) and running trials number fewer
than N (two workers asking at the very same moment may overshoot it by one). A killed worker stops sending
heartbeats: after ``2 × --heartbeat`` seconds its running trial is marked failed and queued again with the same
arguments, and the next worker runs it first. The heartbeat is part of the study (``sweep.json`` and the study's
attributes): every worker, a resumed one included, beats and judges others at that interval. A worker whose budget
is spent while other trials still run waits for them, before its first trial and after its last, and runs any of
them whose worker is found dead, so a killed worker's trial is never lost. ``--resume`` continues a sweep that
exists (its ``sweep.json`` or its study in ``--storage``) and refuses a folder that holds none.
Exit status: 0, 2 for bad input (reported before any training), 1 when trials keep failing, 130 when interrupted.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import optuna
import sqlalchemy.exc
from jsonargparse import ArgumentParser, Namespace
from optuna.trial import TrialState

from faircl.runs.lightning_cli import run_cli
from faircl.runs.user_error import UserError
from faircl.cli.study import PRUNED_EXIT, build_pruner, open_storage, safe_url
from faircl.cli.search import Param, check_paths, override, parse_objectives, parse_search
from faircl.runs.executors import FreshProcesses, Job, LocalPool
from faircl.runs.folders import read_record
from faircl.runs.pool import PRELOAD, needs_fresh_process
from faircl.data.base import FairDataModule
from faircl.methods.base import FairModule

SAMPLERS = {"tpe": optuna.samplers.TPESampler, "random": optuna.samplers.RandomSampler,
            "nsga2": optuna.samplers.NSGAIISampler, "qmc": optuna.samplers.QMCSampler,
            "gp": optuna.samplers.GPSampler}
#: a worker gives up after this many failed trials in a row (a broken setting, not bad luck)
MAX_FAILURES_IN_A_ROW = 3
DEFINITION = ("fit_args", "search", "objectives", "seeds", "sampler", "pruner")


class TrialFailed(Exception):
    """A trial's child process failed (its log is named in the message)."""


# ---------------------------------------------------------------------------------------------------- storage
def _create_study(out: Path, storage_url: str, heartbeat: int, **kwargs: Any) -> optuna.Study:
    """Create or load the study. Workers starting together on a new database would race to create its tables: on
    this machine they take turns (a lock file in the sweep folder); across machines a failed attempt is retried."""
    with (out / ".study.lock").open("w") as lock:
        try:
            import fcntl  # deferred: POSIX only

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - Windows: the retries below
            pass
        for attempt in range(5):
            try:
                return optuna.create_study(storage=open_storage(storage_url, heartbeat), load_if_exists=True,
                                           **kwargs)
            except sqlalchemy.exc.SQLAlchemyError:
                if attempt == 4:
                    raise
                time.sleep(1 + attempt)
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------------------------------- arguments
class SweepParser(ArgumentParser):
    """The parser of ``faircl sweep`` (jsonargparse): the sweep's own options; every argument it does not know
    (``--config``, ``--model.*``, ``--data.*``, ``--trainer.*``, ...) is kept, in order, in :attr:`fit_args` for each
    trial's ``faircl fit`` (which parses and checks them)."""

    fit_args: list[str] = []

    # Private jsonargparse method: the one place that receives the arguments no option took, before they would be
    # refused as unrecognized (jsonargparse 4.39, the lowest faircl allows, to 4.53)
    def _positional_optionals(self, cfg: Namespace, unknown: list[str]) -> tuple[Namespace, list[str]]:
        self.fit_args = list(unknown)
        return cfg, []


def sweep_parser() -> SweepParser:
    """The options of ``faircl sweep``; its errors are raised (one line, exit status 2)."""
    p = SweepParser(
        prog="faircl sweep", exit_on_error=False, allow_abbrev=False, default_env=False,
        description="Hyper-parameter search with Optuna; every trial is a faircl fit + test. Arguments not listed "
                    "here (--config, --model.*, --data.*, --trainer.*) go to each trial's `faircl fit`.")
    p.add_argument("--search", action="append", default=[], metavar="PATH=RANGE",
                   help="a searched argument, repeatable: LOW:HIGH[:STEP] | log:LOW:HIGH | int:[log:]LOW:HIGH | "
                        "choice:A,B")
    p.add_argument("--objectives", type=str, metavar="METRIC:max|min[,...]",
                   help="validation metrics to optimise; unset: val/accuracy:max")
    p.add_argument("--trials", type=int, help="the study's budget of trials, finished or running; unset: 20 (a "
                                              "resumed sweep keeps its own)")
    p.add_argument("--seeds", type=str, help="seeds per trial: a count N (seeds 0..N-1) or a list 0,5,7; unset: 1")
    p.add_argument("--out", type=str, help="the sweep folder; unset: sweeps/<config name>")
    p.add_argument("--storage", type=str, help="a database URL shared by the workers; unset: sqlite:///<out>/study.db")
    p.add_argument("--study", type=str, help="the study's name; unset: the sweep folder's name")
    p.add_argument("--resume", action="store_true", help="continue the sweep in --out, or join it as a worker")
    p.add_argument("--sampler", choices=sorted(SAMPLERS),
                   help="Optuna sampler; unset: TPE for one objective, NSGA-II for several")
    p.add_argument("--sampler_seed", type=int, help="seed of the sampler")
    p.add_argument("--pruner", choices=("median", "none"), help="prune unpromising trials (one objective only); "
                                                                 "unset: median for one objective")
    p.add_argument("--heartbeat", type=int, help="seconds between a worker's heartbeats, stored with the study (a "
                                                 "resumed sweep keeps its own); unset: 30")
    return p


def _seeds(text: str | None) -> list[int]:
    if text is None:
        return [0]
    try:
        values = [int(t) for t in text.split(",")]
    except ValueError:
        raise UserError(f"--seeds {text}: expected a count (3) or a list of seeds (0,5,7)") from None
    seeds = list(range(values[0])) if len(values) == 1 else values
    if not seeds or values[0] < 0 or len(set(seeds)) != len(seeds):
        raise UserError(f"--seeds {text}: expected a count >= 1 or distinct seeds")
    return seeds


def _default_out(fit_args: list[str]) -> Path:
    for i, a in enumerate(fit_args):
        value = a.split("=", 1)[1] if a.startswith("--config=") else (
            fit_args[i + 1] if a == "--config" and i + 1 < len(fit_args) else None)
        if value:
            return Path("sweeps") / Path(value).with_suffix("").as_posix().replace("configs/", "").replace("/", "-")
    return Path("sweeps") / "sweep"


def _definition(opts: Namespace, fit_args: list[str]) -> dict[str, Any]:
    for bad in ("--ckpt_path", "--seed_everything", "--trainer.default_root_dir"):
        if any(a == bad or a.startswith(bad + "=") for a in fit_args):
            raise UserError(f"{bad} is set by the sweep for every trial (use --seeds for seeds, --out for the folder)")
    if not opts.search:
        raise UserError("faircl sweep needs at least one --search PATH=RANGE (e.g. model.lambda_fair=log:0.01:10)")
    params = [parse_search(s) for s in opts.search]
    if len({p.path for p in params}) != len(params):
        raise UserError("--search: a path is given twice")
    objectives = parse_objectives(opts.objectives or "val/accuracy:max")
    if opts.pruner == "median" and len(objectives) > 1:
        raise UserError("--pruner median: Optuna prunes single-objective studies only")
    return {"fit_args": fit_args, "search": [p.to_dict() for p in params], "objectives": objectives,
            "seeds": _seeds(opts.seeds), "sampler": opts.sampler,
            "pruner": opts.pruner or ("median" if len(objectives) == 1 else "none")}


def _given(opts: Namespace, fit_args: list[str]) -> bool:
    return bool(fit_args or opts.search or opts.objectives or opts.seeds or opts.sampler or opts.pruner)


# ---------------------------------------------------------------------------------------------------- checks
class _DropMessages(logging.Filter):
    """Drops log records whose message contains one of ``parts``."""

    def __init__(self, *parts: str) -> None:
        super().__init__()
        self.parts = parts

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(p in record.getMessage() for p in self.parts)


class _quiet_probe:
    """Lightning's note on the probe's own ``limit_val_batches=1`` is not the user's business: drop it."""

    def __enter__(self) -> None:
        self.logger, self.filter = logging.getLogger("lightning.pytorch.utilities.rank_zero"), _DropMessages(
            "limit_val_batches=1")
        self.logger.addFilter(self.filter)

    def __exit__(self, *exc: Any) -> None:
        self.logger.removeFilter(self.filter)


class _NoInterruptTraceback(logging.Filter):
    """Optuna logs a trial ended by Ctrl-C / SIGTERM as a failure, with its traceback and a second "failed with value
    None" line; the worker says it in one line instead."""

    interrupted = False

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt):
            self.interrupted = True
            return False
        return not (self.interrupted and "failed with value None" in record.getMessage())


def preflight(definition: dict[str, Any], out: Path) -> None:
    """Instantiate the method, datamodule and trainer once with every searched argument set, check the searched
    paths, and run one validation batch on the untrained weights to check that every objective is logged."""
    params = [Param.from_dict(d) for d in definition["search"]]
    with tempfile.TemporaryDirectory(prefix="faircl-sweep-probe-") as scratch, _quiet_probe():
        quiet = ["--trainer.logger=false", "--trainer.enable_checkpointing=false", "--trainer.limit_val_batches=1",
                 "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
                 "--trainer.devices=1", "--trainer.num_nodes=1", "--trainer.strategy=auto",
                 f"--trainer.default_root_dir={scratch}"]
        cli = run_cli([*definition["fit_args"], *quiet], run=False)  # the configuration as given
        check_paths(params, cli.model, cli.datamodule, L.Trainer, FairModule, FairDataModule)
        # every searched argument set to a value of its range: the parser checks its type
        cli = run_cli([*definition["fit_args"], *[override(p, p.example()) for p in params], *quiet], run=False)
        cli.trainer.validate(cli.model, datamodule=cli.datamodule, verbose=False)
    logged = sorted(k for k in cli.trainer.callback_metrics if k.startswith("val/"))
    for name, _ in definition["objectives"]:
        if name not in logged:
            raise UserError(f"--objectives: {type(cli.model).__name__} on {type(cli.datamodule).__name__} never logs "
                           f"{name!r}; its validation metrics: {', '.join(logged) or 'none'}")


# ---------------------------------------------------------------------------------------------------- trials
class Worker:
    """One worker process of a sweep: Optuna's ``study.optimize`` over ``objective``."""

    def __init__(self, study: optuna.Study, definition: dict[str, Any], out: Path, storage_url: str,
                 trials: int) -> None:
        self.study, self.definition, self.out, self.storage_url = study, definition, out, storage_url
        self.params = [Param.from_dict(d) for d in definition["search"]]
        self.failures, self.trials = 0, trials
        # a multi-process trial is a fresh process (Lightning's launcher re-runs its command line); else each seed is
        # forked from the worker's pre-imported server: start-up is paid once per worker
        self.executor = (FreshProcesses() if needs_fresh_process(definition["fit_args"])
                         else LocalPool((*PRELOAD, "faircl.cli.trial")))

    def objective(self, trial: optuna.Trial) -> float | tuple[float, ...]:
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
                      folder, log)
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
        if self.failures >= MAX_FAILURES_IN_A_ROW or budget_left(study, self.trials) <= 0:
            study.stop()


def budget_left(study: optuna.Study, trials: int) -> int:
    """Trials a worker may still start: ``trials`` minus the finished (complete or pruned) and the running ones
    (after failing those whose worker stopped beating). Queued retries are always run."""
    optuna.storages.fail_stale_trials(study)
    states = [t.state for t in study.get_trials(deepcopy=False)]
    if TrialState.WAITING in states:
        return max(1, states.count(TrialState.WAITING))
    return trials - sum(s in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING) for s in states)


def work(study: optuna.Study, worker: Worker, trials: int, heartbeat: int) -> None:
    """Run trials while the budget allows. While other trials fill the budget (before this worker's first trial and
    after its last) wait for them: one whose worker stops beating is failed and queued again after ``2 × heartbeat``
    seconds, and this worker runs it."""
    while worker.failures < MAX_FAILURES_IN_A_ROW:
        if budget_left(study, trials) > 0:
            study.optimize(worker.objective, catch=(TrialFailed,), gc_after_trial=True, callbacks=[worker.after_trial])
            continue
        if not study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            return
        time.sleep(heartbeat)


def _stored_sweep(storage_url: str, study_name: str) -> dict[str, Any] | None:
    """The sweep record stored with study ``study_name`` in a database, or ``None`` when there is no such study."""
    try:
        study = optuna.load_study(study_name=study_name, storage=open_storage(storage_url))
    except KeyError:
        return None
    return study.user_attrs.get("faircl_sweep")


def _summary(study: optuna.Study, definition: dict[str, Any], out: Path) -> None:
    trials = study.get_trials(deepcopy=False)
    counts = {s.name.lower(): sum(t.state == s for t in trials) for s in TrialState}
    print(f"faircl sweep: study {study.study_name!r}: " + ", ".join(f"{n} {c}" for n, c in counts.items() if c),
          file=sys.stderr)
    names = [n for n, _ in definition["objectives"]]
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    if not done:
        return
    best = study.best_trials if len(names) > 1 else [study.best_trial]
    label = "Pareto front (Optuna)" if len(names) > 1 else "best trial"
    spread = len(definition["seeds"]) > 1  # one seed has no spread to print
    for t in best:
        mean, std = t.user_attrs.get("mean", {}), t.user_attrs.get("std", {})
        scores = ", ".join(f"{n} {mean.get(n, float('nan')):.4f}" + (f" ± {std.get(n, 0.0):.4f}" if spread else "")
                           for n in names)
        print(f"{label}: trial {t.number} {t.params}: {scores}")
    study.trials_dataframe().to_csv(out / "trials.csv", index=False)
    print(f"trials written to {out / 'trials.csv'}; compare them with `faircl compare {out} --out <DIR>`")


# ---------------------------------------------------------------------------------------------------- entry point
def sweep(argv: list[str]) -> int:
    """``faircl sweep ...``; returns the exit status."""
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", message=r".*args parameter is intended to run from within Python.*")
    parser = sweep_parser()
    opts = parser.parse_args(argv)
    fit_args = parser.fit_args
    if opts.trials is not None and opts.trials < 1:
        raise UserError(f"--trials must be >= 1, got {opts.trials}")
    if opts.heartbeat is not None and opts.heartbeat < 1:
        raise UserError(f"--heartbeat must be >= 1 second, got {opts.heartbeat}")
    out = Path(opts.out) if opts.out else _default_out(fit_args)
    saved_file = out / "sweep.json"
    saved = json.loads(saved_file.read_text()) if saved_file.is_file() else None
    if saved is not None and not opts.resume:
        raise UserError(f"{str(out)!r} already holds a sweep; pass --resume to continue it or to add a worker, or "
                       "choose another --out")
    storage_url = opts.storage or (saved or {}).get("storage") or f"sqlite:///{(out / 'study.db').resolve()}"
    study_name = opts.study or (saved or {}).get("study") or out.resolve().name
    if saved is None and opts.resume:
        # a worker on another machine: the definition is stored with the study
        saved = _stored_sweep(storage_url, study_name) if opts.storage else None
        if saved is None and not (opts.storage and _given(opts, fit_args)):
            where = f"study {study_name!r} in {safe_url(storage_url)}" if opts.storage else "sweep.json"
            raise UserError(f"--resume: {str(out)!r} holds no sweep (no {where}); check --out, or start the sweep "
                           "without --resume")
    trials = opts.trials or (saved or {}).get("trials") or 20  # a worker on another machine: the study's budget
    heartbeat = int((saved or {}).get("heartbeat") or opts.heartbeat or 30)
    if saved is not None and opts.heartbeat is not None and opts.heartbeat != heartbeat:
        raise UserError(f"--heartbeat {opts.heartbeat}: the sweep in {str(out)!r} beats every {heartbeat} s (stored "
                       "with the study, so that workers judge each other alike); resume without --heartbeat")
    if saved is not None and not _given(opts, fit_args):
        definition = {k: saved[k] for k in DEFINITION}
    else:
        definition = _definition(opts, fit_args)
        definition["objectives"] = [list(o) for o in definition["objectives"]]
        if saved is not None and any(definition[k] != saved[k] for k in DEFINITION):
            differ = [k for k in DEFINITION if definition[k] != saved[k]]
            raise UserError(f"--resume: the given {', '.join(differ)} differ from the sweep in {str(out)!r}; resume "
                           "with `faircl sweep --out DIR --resume` alone (its stored definition) or use another --out")
    if saved is None:  # a stored definition passed these checks when its sweep began
        preflight(definition, out)
    out.mkdir(parents=True, exist_ok=True)
    record = {**definition, "storage": storage_url, "study": study_name, "trials": trials, "heartbeat": heartbeat}
    tmp = out / f"sweep.json.{os.getpid()}"
    tmp.write_text(json.dumps(record, indent=2))
    tmp.replace(saved_file)
    directions = [d for _, d in definition["objectives"]]
    # Optuna's defaults: TPE for one objective, NSGA-II for several (seeded by --sampler_seed)
    name = definition["sampler"] or ("tpe" if len(directions) == 1 else "nsga2")
    sampler = SAMPLERS[name](seed=opts.sampler_seed)
    study = _create_study(out, study_name=study_name, storage_url=storage_url, heartbeat=heartbeat,
                          sampler=sampler, pruner=build_pruner(definition["pruner"]), directions=directions)
    study.set_user_attr("faircl_sweep", record)
    worker = Worker(study, definition, out, storage_url, trials)
    start = time.perf_counter()
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # a terminated worker re-queues its trial
    quiet = _NoInterruptTraceback()
    optuna_log = logging.getLogger("optuna.study._optimize")
    optuna_log.addFilter(quiet)
    try:
        work(study, worker, trials, heartbeat)
    except KeyboardInterrupt:
        print(f"faircl sweep: interrupted; the running trial is queued again. Continue with `faircl sweep --out "
              f"{out} --resume`", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        optuna_log.removeFilter(quiet)
    print(f"faircl sweep: this worker ran for {time.perf_counter() - start:.0f} s", file=sys.stderr)
    _summary(study, definition, out)
    if worker.failures >= MAX_FAILURES_IN_A_ROW:
        print(f"faircl sweep: error: {worker.failures} trials failed in a row; see the seed_*.log files under "
              f"{out / 'trials'}", file=sys.stderr)
        return 1
    return 0
