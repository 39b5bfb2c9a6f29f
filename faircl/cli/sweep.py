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

Storage: ``<out>/study.db`` (SQLite, nothing to start), ``--storage <database URL>`` (``postgresql://...``), or
``--storage journal:PATH`` (Optuna's journal file, also any path ending in ``.journal`` or ``.log``: nothing to start,
safe on a filesystem several nodes share). A second ``faircl sweep --out DIR --resume`` (on this machine or any
sharing the storage and the folder) adds a worker; ``--trials N`` is the study's budget: a worker starts a trial
only while the finished (complete or pruned) and running trials number fewer than N (two workers asking at the very
same moment may overshoot it by one). On a database a killed worker stops sending heartbeats: after
``2 × --heartbeat`` seconds its running trial is marked failed and queued again with the same arguments, and the
next worker runs it first. A journal has no heartbeat: each worker records itself (host, process, SLURM job) in its
trial, and the others fail and queue again a trial whose worker is gone (its SLURM job ended, or its process on the
same host), at once (:mod:`faircl.cli.study`). The heartbeat is part of the study (``sweep.json`` and the study's
attributes): every worker, a resumed one included, beats and judges others at that interval. A worker whose budget
is spent while other trials still run waits for them, before its first trial and after its last, and runs any of
them whose worker is found dead, so a killed worker's trial is never lost (on a journal it stops waiting, saying so,
when only trials of workers it cannot check are left: another host's, outside SLURM). ``--resume`` continues a sweep
that exists (its ``sweep.json`` or its study in ``--storage``) and refuses a folder that holds none.

Launchers (``--launcher``): ``local`` (default): this command is the worker, each seed forked from its pre-imported
server (a multi-process trial: a fresh process); ``fresh``: each seed a fresh Python process; ``slurm``: the command
checks its input (a cluster that answers, the pre-flight probe), creates the study, then submits ``--workers N``
workers as one SLURM job array (:func:`faircl.cli.sweep_workers.worker_task`; each task asks for ``--slurm.*``, its
seeds run in the task's process) and waits for them, reporting each task's end (job id, log; a failed task's SLURM
log), then prints the summary. Its study is a journal file ``<out>/study.journal`` unless ``--storage`` names a
database (SQLite is refused: unsafe where nodes share a filesystem); ``<out>`` must be on a filesystem the nodes
share. Ctrl-C (or SIGTERM) cancels the array, the tasks' running trials are queued again, and the same command with
``--resume`` submits workers again for what is left of the budget. Every seed's ``run.json`` records its launcher
and SLURM job id. In ``faircl sweep`` a ``--config`` file is the trials' (``faircl fit``'s): give SLURM settings as
``--slurm.*`` options or ``--slurm FILE.yaml``.

One jsonargparse parser reads the sweep's options and its trials' ``faircl fit`` options (:func:`parse_sweep`), so a
mistyped trial option is refused before anything starts. The trials are given what the command line gives them as
one inline ``--config`` mapping, its config files' values included (``fit_args`` in ``sweep.json``): a config file
edited while a sweep runs changes none of its trials.

    faircl sweep --config confair/synthbios --search model.lambda_fair=log:0.01:10 --trials 40 \
        --launcher slurm --workers 8 --slurm.partition gpu --slurm.gpus_per_task 1 --slurm.time_min 240

Exit status: 0, 2 for bad input (reported before any training or submission), 1 when trials keep failing (or a
SLURM task failed), 130 when interrupted.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import lightning as L
import optuna
import sqlalchemy.exc
from jsonargparse import ArgumentError, Namespace
from optuna.trial import TrialState

from faircl.runs.config_files import shipped_name
from faircl.runs.given_options import GivenOptions, without_files
from faircl.runs.lightning_cli import run_cli
from faircl.runs.parse_only import option_keys, parse_beside_run, parse_command
from faircl.runs.user_error import UserError
from faircl.cli.launchers import add_launcher_arguments, executor_from, unknown_setting
from faircl.cli.study import build_pruner, check_storage, journal_path, open_storage, safe_url
from faircl.cli.search import Param, check_paths, override, parse_objectives, parse_search
from faircl.cli.sweep_workers import (DEFINITION, MAX_FAILURES_IN_A_ROW, SAMPLERS, TrialFailed, Worker,
                                      budget_left, make_sampler, run_array, serve, work)
from faircl.runs.executors import FreshProcesses
from faircl.data.base import FairDataModule
from faircl.methods.base import FairModule

__all__ = ["TrialFailed", "Worker", "budget_left", "parse_sweep", "preflight", "sweep", "work"]

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
HELP = dict(
    prog="faircl sweep",
    description="Hyper-parameter search with Optuna; every trial is a faircl fit + test. The run's options "
                "(--config, --model.*, --data.*, --trainer.*) are each trial's `faircl fit` options.",
    epilog="--launcher slurm submits --workers N workers as one SLURM job array and waits for them (Ctrl-C cancels "
           "it; the same command with --resume continues); the study is then a journal file, <out>/study.journal, "
           "unless --storage names a database. --config is the trials' config here: give the SLURM settings as "
           "--slurm.* options or --slurm FILE.yaml.")


def add_sweep_arguments(p: Any) -> None:
    """The options of ``faircl sweep``, beside its trials' ``faircl fit`` options in one jsonargparse parser."""
    p.add_argument("--search", action="append", default=[], metavar="PATH=RANGE",
                   help="a searched argument, repeatable: LOW:HIGH[:STEP] | log:LOW:HIGH | int:[log:]LOW:HIGH | "
                        "choice:A,B")
    p.add_argument("--objectives", type=str, metavar="METRIC:max|min[,...]",
                   help="validation metrics to optimise; unset: val/accuracy:max")
    p.add_argument("--trials", type=int, help="the study's budget of trials, finished or running; unset: 20 (a "
                                              "resumed sweep keeps its own)")
    p.add_argument("--seeds", type=str, help="seeds per trial: a count N (seeds 0..N-1) or a list 0,5,7; unset: 1")
    p.add_argument("--out", type=str, help="the sweep folder; unset: sweeps/<config name>")
    p.add_argument("--storage", type=str, help="where the workers share the study: journal:PATH (Optuna's "
                   "journal file, or a path ending in .journal or .log) or a database URL (sqlite:///PATH, "
                   "postgresql://...); unset: sqlite:///<out>/study.db, with --launcher slurm journal:<out>/study.journal")
    p.add_argument("--study", type=str, help="the study's name; unset: the sweep folder's name")
    p.add_argument("--resume", action="store_true", help="continue the sweep in --out, or join it as a worker")
    p.add_argument("--sampler", choices=sorted(SAMPLERS),
                   help="Optuna sampler; unset: TPE for one objective, NSGA-II for several")
    p.add_argument("--sampler_seed", type=int, help="seed of the sampler")
    p.add_argument("--pruner", choices=("median", "none"),
                   help="prune unpromising trials (one objective only); unset: median for one objective")
    p.add_argument("--heartbeat", type=int, help="seconds between a worker's heartbeats (a database) or its "
                   "checks of the other workers (a journal), stored with the study (a resumed sweep keeps its own); "
                   "unset: 30")
    add_launcher_arguments(p, "the sweep's workers")
    p.add_argument("--workers", type=int, default=1, help="workers to submit as one SLURM job array (--launcher "
                                                           "slurm); each runs trials until the budget is spent")


def parse_sweep(argv: list[str]) -> tuple[Namespace, GivenOptions]:
    """``faircl sweep ARGS`` parsed by jsonargparse with its trials' ``faircl fit`` options: the sweep's options and
    the trials' config (:func:`~faircl.runs.parse_only.parse_beside_run`), and what the trials are given. Errors are
    raised (one line, exit status 2)."""
    try:
        opts, given = parse_beside_run(argv, add_sweep_arguments, **HELP)
    except ArgumentError as err:
        raise unknown_setting(err) or err from None
    in_files = sorted({k.split(".")[0] for k in given.in_files()} & option_keys(add_sweep_arguments))
    if in_files:
        raise UserError(f"--config {', '.join(map(str, given.files))}: {', '.join(in_files)} "
                        f"{'is a sweep option' if len(in_files) == 1 else 'are sweep options'}; a sweep's --config "
                        "is its trials' (faircl fit's) config: give the sweep's options on the command line")
    return opts, given


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


def _default_out(given: GivenOptions) -> Path:
    """``sweeps/<config name>`` (``sweeps/ce-biased_features``) for the trials' first config, else ``sweeps/sweep``."""
    if not given.files:
        return Path("sweeps") / "sweep"
    name = Path(shipped_name(given.files[0])).with_suffix("").as_posix()
    return Path("sweeps") / name.replace("configs/", "").replace("/", "-")


def _definition(opts: Namespace, fit_args: list[str], given: GivenOptions) -> dict[str, Any]:
    chosen = given.command_line()
    for bad in ("ckpt_path", "seed_everything", "trainer.default_root_dir"):
        if bad in chosen:
            raise UserError(f"--{bad} is set by the sweep for every trial (use --seeds for seeds, --out for the "
                            "folder)")
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


def _same(key: str, given: Any, saved: Any) -> bool:
    """Whether a definition's ``key`` is the saved sweep's: the trials' options by what they parse to (a sweep saved
    by an earlier version kept the command line's words)."""
    if given == saved:
        return True
    if key != "fit_args":
        return False
    try:
        ours, theirs = (without_files(parse_command(["fit", *args])[0].as_dict()) for args in (given, saved))
    except (UserError, ArgumentError):  # the saved options no longer parse (a config file since changed)
        return False
    return ours == theirs


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


def _stored_sweep(storage_url: str, study_name: str) -> dict[str, Any] | None:
    """The sweep record stored with study ``study_name`` in a database, or ``None`` when there is no such study."""
    path = journal_path(storage_url)
    if path is not None and not path.is_file():  # opening a journal would create it
        return None
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
def _storage(given: str | None, saved: dict[str, Any] | None, out: Path, launcher: str) -> str:
    """The study's storage: ``--storage``, else the sweep's own, else SQLite in ``out`` (a journal file with
    ``--launcher slurm``: SQLite's locks are unsafe on a filesystem several nodes share)."""
    url = check_storage(given) if given else (saved or {}).get("storage")
    if url is None and launcher == "slurm":
        url = f"journal:{(out / 'study.journal').resolve()}"
        print(f"faircl sweep: --launcher slurm: the study is kept in {url[len('journal:'):]} (Optuna's journal file: "
              "SQLite is unsafe where several nodes share a filesystem; --storage postgresql://... for a database)",
              file=sys.stderr)
    url = url or f"sqlite:///{(out / 'study.db').resolve()}"
    if launcher == "slurm" and url.startswith("sqlite"):
        raise UserError(f"--launcher slurm: the study is in SQLite ({url}), which is unsafe where several nodes share "
                        "a filesystem; give --storage journal:PATH or postgresql://... to a new sweep, or resume this "
                        "one with --launcher local")
    return url


def sweep(argv: list[str]) -> int:
    """``faircl sweep ...``; returns the exit status."""
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", message=r".*args parameter is intended to run from within Python.*")
    opts, given = parse_sweep(argv)
    fit_args = given.arguments()  # each trial's `faircl fit` options: what this command line gives them
    if opts.trials is not None and opts.trials < 1:
        raise UserError(f"--trials must be >= 1, got {opts.trials}")
    if opts.heartbeat is not None and opts.heartbeat < 1:
        raise UserError(f"--heartbeat must be >= 1 second, got {opts.heartbeat}")
    if opts.workers < 1 or (opts.workers > 1 and opts.launcher != "slurm"):
        raise UserError(f"--workers {opts.workers}: expected 1, or with --launcher slurm a count >= 1 (on this "
                        "machine, add a worker with `faircl sweep --out DIR --resume`)")
    out = Path(opts.out) if opts.out else _default_out(given)
    # the cluster is asked before anything is made or trained
    array = executor_from("slurm", opts.slurm, out.resolve()) if opts.launcher == "slurm" else None
    saved_file = out / "sweep.json"
    saved = json.loads(saved_file.read_text()) if saved_file.is_file() else None
    if saved is not None and not opts.resume:
        raise UserError(f"{str(out)!r} already holds a sweep; pass --resume to continue it or to add a worker, or "
                       "choose another --out")
    storage_url = _storage(opts.storage, saved, out, opts.launcher)
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
        definition = _definition(opts, fit_args, given)
        definition["objectives"] = [list(o) for o in definition["objectives"]]
        differ = [k for k in DEFINITION if saved is not None and not _same(k, definition[k], saved[k])]
        if differ:
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
    study = _create_study(out, study_name=study_name, storage_url=storage_url, heartbeat=heartbeat,
                          sampler=make_sampler(definition["sampler"], len(directions), opts.sampler_seed),
                          pruner=build_pruner(definition["pruner"]), directions=directions)
    study.set_user_attr("faircl_sweep", record)
    start = time.perf_counter()
    if array is not None:  # the workers are the array's tasks; this command waits for them
        code = run_array(array, study, out, opts.workers, opts.sampler_seed, heartbeat,
                         argv if opts.resume else [*argv, "--resume"])
        if code == 130:
            return code
        print(f"faircl sweep: the workers ran for {time.perf_counter() - start:.0f} s", file=sys.stderr)
        _summary(study, definition, out)
        return code
    worker = Worker(study, definition, out, storage_url, trials, heartbeat,
                    executor=FreshProcesses() if opts.launcher == "fresh" else None)
    if not serve(study, worker, trials, heartbeat, f"faircl sweep --out {out} --resume"):
        return 130
    print(f"faircl sweep: this worker ran for {time.perf_counter() - start:.0f} s", file=sys.stderr)
    _summary(study, definition, out)
    if worker.failures >= MAX_FAILURES_IN_A_ROW:
        print(f"faircl sweep: error: {worker.failures} trials failed in a row; see the seed_*.log files under "
              f"{out / 'trials'}", file=sys.stderr)
        return 1
    return 0
