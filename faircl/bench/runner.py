"""Runs of a benchmark: every (protocol, setting, seed) is one ``faircl fit`` and one ``faircl test --ckpt_path best``
of a generated config, forked from a worker that imported torch, Lightning and faircl once
(:class:`faircl.runs.pool.RunPool`), so a crash ends that run only and start-up is paid once.

Where runs live:

- the method's: ``<out>/runs/<protocol>/<label>-<hash of the method key and the protocol key>/seed_<s>/``;
- the baselines': ``<cache>/<protocol>-<protocol key>/<baseline>/seed_<s>/`` (``--cache``, default
  ``$FAIRCL_CACHE/bench`` or ``~/.cache/faircl/bench``), shared by every bench that runs the same protocol: a
  baseline is trained once per protocol version and seed, then reused.

Each run folder holds ``config.yaml`` (what was run), ``run.log`` (its output) and, once both commands succeeded,
``run.json`` (the test report's path, the wall and CPU time and, under a selection, the epoch it picked and why; the
selection and the metrics of every epoch are in ``selection.yaml`` and ``epochs.json``:
:mod:`faircl.bench.checkpoint_selection`). A folder without ``run.json`` is an interrupted run: it is cleared and run again,
so a killed bench resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from faircl.bench.checkpoint_selection import check_selection, pick_epoch, selection_callbacks
from faircl.bench.spec import Protocol, deep_merge
from faircl.runs.user_error import UserError
from faircl.runs.executors import Executor, Job, LocalPool
from faircl.runs.pool import PRELOAD

__all__ = ["BENCH_PRELOAD", "MethodSpec", "RunTask", "default_cache", "plan", "resolve_method", "run_one", "run_tasks"]

#: what a bench worker imports before its first fork: a sweep's worker's, the runs' target and the epoch-history
#: callback that every run's config names by class path
BENCH_PRELOAD = (*PRELOAD, "faircl.bench.runner")


def default_cache() -> Path:
    """``$FAIRCL_CACHE/bench`` when the variable is set, else ``~/.cache/faircl/bench``."""
    root = os.environ.get("FAIRCL_CACHE")
    return (Path(root).expanduser() if root else Path.home() / ".cache" / "faircl") / "bench"


def resolve_method(name: str) -> tuple[str, type]:
    """The class path and the class of ``--method``: a registered method name (``ConFair``) or a dotted path to a
    :class:`~faircl.methods.base.FairModule` subclass (``my_method.MyLoss``, importable from the current folder)."""
    import faircl.methods as methods  # deferred: torch and Lightning (seconds), not needed by --list
    from faircl.methods.base import FairModule  # deferred: torch and Lightning

    if "." not in name:
        cls = getattr(methods, name, None)
        if not (inspect.isclass(cls) and issubclass(cls, FairModule)):
            known = sorted(n for n in dir(methods) if inspect.isclass(getattr(methods, n))
                           and issubclass(getattr(methods, n), FairModule) and n != "FairModule")
            raise UserError(f"bench: --method {name!r} is not a faircl method ({', '.join(known)}); a class of your "
                           "own is given by its dotted path, e.g. --method my_method.MyLoss for class MyLoss in "
                           "my_method.py of the current folder")
        return f"{cls.__module__}.{cls.__name__}", cls
    module, _, attr = name.rpartition(".")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        mod = importlib.import_module(module)
    except ImportError as err:
        raise UserError(f"bench: --method {name!r}: cannot import {module!r} ({err}); run faircl bench from the folder "
                       f"that holds {module.replace('.', '/')}.py, or put it on PYTHONPATH") from None
    cls = getattr(mod, attr, None)
    if not (inspect.isclass(cls) and issubclass(cls, FairModule)):
        raise UserError(f"bench: --method {name!r}: {module} has no FairModule subclass named {attr!r}")
    return f"{cls.__module__}.{cls.__name__}", cls


@dataclass
class MethodSpec:
    """A setting run on every protocol: its class path, its ``init_args`` and the name in the tables."""

    label: str
    class_path: str
    init_args: dict[str, Any] = field(default_factory=dict)
    cls: type | None = field(default=None, repr=False, compare=False)

    def key(self) -> str:
        """Hash of the class path, the arguments and the source file of the class (an edited method runs again)."""
        source = ""
        if self.cls is not None:
            try:
                source = hashlib.sha256(Path(inspect.getfile(self.cls)).read_bytes()).hexdigest()
            except (OSError, TypeError):
                source = ""
        body = json.dumps([self.class_path, self.init_args, source], sort_keys=True, default=str)
        return hashlib.sha256(body.encode()).hexdigest()[:8]


@dataclass
class RunTask:
    """One run: a setting of a protocol on one seed, in ``folder``."""

    protocol: Protocol
    setting: str  # the name in the tables
    class_path: str
    init_args: dict[str, Any]
    seed: int
    folder: Path
    baseline: bool
    two_views: bool = False

    def config(self) -> dict[str, Any]:
        """The full config of the run's ``faircl fit`` and ``faircl test`` (the protocol's data, budget and encoder;
        the setting's class and arguments over the protocol's model arguments). The test draws no ``report.png``
        (``report_plot: false``): the bench draws its own figures from every run's report."""
        p = self.protocol
        trainer = deep_merge(p.trainer, {"default_root_dir": str(self.folder), "enable_progress_bar": False,
                                         "enable_model_summary": False})
        trainer.setdefault("accelerator", "cpu")
        trainer.setdefault("devices", 1)
        callbacks = selection_callbacks(p.selection)
        if callbacks:
            trainer["callbacks"] = callbacks
        data = deep_merge(p.data, {"init_args": {"two_views": True}} if self.two_views else {})
        return {"seed_everything": int(self.seed), "trainer": trainer, "data": data,
                "model": {"class_path": self.class_path, "init_args": deep_merge(p.model, self.init_args)},
                "report_plot": False}

    def prepare(self) -> None:
        """An empty run folder (an interrupted run's is cleared) with ``config.yaml`` and, under a selection,
        ``selection.yaml``: what :func:`run_one` runs."""
        if self.folder.exists():
            shutil.rmtree(self.folder)
        self.folder.mkdir(parents=True)
        (self.folder / "config.yaml").write_text(yaml.safe_dump(self.config(), sort_keys=False))
        if self.protocol.selection:
            (self.folder / "selection.yaml").write_text(yaml.safe_dump(self.protocol.selection, sort_keys=False))
        if self.protocol.evaluate:
            (self.folder / "evaluate.yaml").write_text(yaml.safe_dump(self.protocol.evaluate, sort_keys=False))

    @property
    def done(self) -> bool:
        return (self.folder / "run.json").is_file()

    def record(self) -> dict[str, Any]:
        return json.loads((self.folder / "run.json").read_text())


def plan(protocol: Protocol, method: MethodSpec, seeds: list[int], out: Path, cache: Path) -> list[RunTask]:
    """The runs of one protocol: every baseline (in the cache) and the method (under ``out``) on every seed."""
    tasks = []
    base_root = cache / f"{protocol.name}-{protocol.key()}"
    views = bool(method.cls is not None and getattr(method.cls, "requires_views", False))
    base_views = {name: bool(getattr(resolve_method(spec["class_path"])[1], "requires_views", False))
                  for name, spec in protocol.baselines.items()}  # a baseline that trains on two views gets them
    for seed in seeds:
        for name, spec in protocol.baselines.items():
            cls_path = spec["class_path"]
            tasks.append(RunTask(protocol, name, cls_path, dict(spec.get("init_args") or {}), seed,
                                 base_root / _safe(name) / f"seed_{seed}", True, base_views[name]))
        # the method's runs follow the protocol's content too: an edited protocol is not answered by old runs
        key = hashlib.sha256(f"{method.key()}:{protocol.key()}".encode()).hexdigest()[:8]
        folder = out / "runs" / protocol.name / f"{_safe(method.label)}-{key}" / f"seed_{seed}"
        tasks.append(RunTask(protocol, method.label, method.class_path, method.init_args, seed, folder, False, views))
    return tasks


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def run_one(folder: str) -> int:
    """Fit and test the run in ``folder`` (its ``config.yaml``, and its ``selection.yaml`` / ``evaluate.yaml``) in this
    process with :func:`faircl.runs.engine.fit_then_test`, which writes ``run.json`` when both succeeded. The target
    each launcher starts; returns the exit status (2 for the user's error, in one line at the end of the log)."""
    from faircl.runs.engine import run_folder, user_path  # deferred: Lightning, imported once by the worker

    root = Path(folder)
    user_path()  # the folder a user's method is imported from
    choose = _pick_checkpoint if (root / "selection.yaml").is_file() else None
    after = _score_embeddings if (root / "evaluate.yaml").is_file() else None
    return run_folder(folder, choose=choose, after=after)


def _score_embeddings(root: Path, test: Any) -> dict[str, Any]:
    """``items.json``: the tested model's CCED per test tuple and its embedding bias sets, item by item."""
    from faircl.bench.embeddings import score_items  # deferred: torch and the embedding bias sets
    from faircl.data.locations import DATA_ENV  # deferred: with faircl.bench.embeddings

    settings = yaml.safe_load((root / "evaluate.yaml").read_text())
    dm = test.datamodule
    data_dir = getattr(dm, "data_dir", None) or os.environ.get(DATA_ENV)
    if not data_dir:
        raise FileNotFoundError(f"faircl bench: the embedding bias sets are read from the data folder: set {DATA_ENV}")
    start = time.perf_counter()
    items = score_items(test.model, dm, data_dir, settings)
    tmp = root / "items.json.tmp"
    tmp.write_text(json.dumps(items, allow_nan=True))
    tmp.replace(root / "items.json")
    print(f"faircl bench: embeddings scored ({items['sentences_encoded']} sentences, CCED in "
          f"{100 * items['cced_in']:.2f} / held out {100 * items['cced_heldout']:.2f} ×100) in "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    return {}


def _pick_checkpoint(root: Path, history: Any, ckpt_dir: Path) -> tuple[str, dict[str, Any]]:
    """The checkpoint the protocol's selection rule (``selection.yaml``) picks from the validation metrics of every
    epoch of the final stage (``history``: :class:`~faircl.runs.history.EpochHistory`); the other epochs' checkpoints
    are deleted. Returns its path and ``{"rule", "epoch", "why"}`` (the reason is printed too)."""
    selection = check_selection(yaml.safe_load((root / "selection.yaml").read_text()), str(root / "selection.yaml"))
    epoch, why = pick_epoch(history.final_epochs(), selection)
    files = {p: p.stem.removeprefix("epoch=") for p in ckpt_dir.glob("epoch=*.ckpt")}
    chosen = [p for p, e in files.items() if e == str(epoch)]
    if not chosen:
        raise FileNotFoundError(f"faircl bench: the selection rule picked epoch {epoch}, but {ckpt_dir} holds no "
                                f"epoch={epoch}.ckpt (found: {sorted(p.name for p in files)})")
    for p in files:
        if p != chosen[0]:
            p.unlink()
    name = selection.get("rule") or f"best {selection['monitor']}"
    print(f"faircl bench: selection ({name}): {why}", flush=True)
    return str(chosen[0]), {"rule": name, "epoch": epoch, "why": why}


def _tail(path: Path, lines: int = 1) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    said = [t for t in text if t.startswith("faircl: error:")]
    return (said[-1] if said else " | ".join(text[-lines:]))[:400]


def run_tasks(tasks: list[RunTask], say=print, executor: Executor | None = None) -> list[str]:
    """Run every task not done yet (a killed run's folder is cleared first) on ``executor`` (default: forked from
    the pre-imported worker, :class:`~faircl.runs.executors.LocalPool`); returns the failures' one-line reasons."""
    todo = [t for t in tasks if not t.done]
    cached = len(tasks) - len(todo)
    if cached:
        base = sum(t.baseline for t in tasks if t.done)
        say(f"faircl bench: {cached} of {len(tasks)} runs already done ({base} cached baseline runs), reused")
    if not todo:
        return []
    executor = executor or LocalPool(BENCH_PRELOAD)
    failures: list[str] = []
    times: list[float] = []
    t0 = last = time.perf_counter()
    env = {"FAIRCL_RUN_PATH": os.getcwd()}
    jobs = {}
    for task in todo:
        task.prepare()
        job = Job(f"{task.protocol.name} · {task.setting} · seed {task.seed}", "faircl.bench.runner:run_one",
                  (str(task.folder),), task.folder, task.folder / "run.log", env)
        jobs[id(job)] = (job, task)

    def done(job: Job, code: int, info: dict[str, Any]) -> None:
        nonlocal last
        task = jobs[id(job)][1]
        now = time.perf_counter()
        times.append(now - last)
        last = now
        left = (len(todo) - len(times)) * sum(times) / len(times)
        where = "baseline, cached for reuse" if task.baseline else "method"
        log = info.get("slurm_log") if code and info.get("slurm_log") else job.log
        status = "ok" if code == 0 and task.done else f"FAILED (exit {code}): {_tail(job.log)}; log {log}"
        job_id = f", job {info['job_id']}" if info.get("job_id") else ""
        say(f"faircl bench: [{len(times)}/{len(todo)}] {job.name} ({where}{job_id}): {status} in {times[-1]:.1f} s; "
            f"about {left / 60:.1f} min left")
        if status != "ok":
            failures.append(f"{job.name}: {status}")

    executor.run([job for job, _ in jobs.values()], done)
    say(f"faircl bench: {len(todo)} runs in {time.perf_counter() - t0:.1f} s")
    return failures
