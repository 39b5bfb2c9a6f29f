"""Runs of a benchmark: every (protocol, setting, seed) is one ``faircl fit`` and one ``faircl test --ckpt_path best``
of a generated config, forked from a worker that imported torch, Lightning and faircl once
(:class:`faircl.cli.run_pool.RunPool`), so a crash ends that run only and start-up is paid once.

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
from faircl.cli.config_files import CLIError
from faircl.cli.run_pool import PRELOAD, RunPool

__all__ = ["BENCH_PRELOAD", "MethodSpec", "RunTask", "default_cache", "plan", "resolve_method", "run_one", "run_tasks"]

#: what a bench worker imports before its first fork: a sweep's worker's, the runs' target and the epoch-history
#: callback that every run's config names by class path
BENCH_PRELOAD = (*PRELOAD, "faircl.bench.runner", "faircl.bench.history")


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
            raise CLIError(f"bench: --method {name!r} is not a faircl method ({', '.join(known)}); a class of your "
                           "own is given by its dotted path, e.g. --method my_method.MyLoss for class MyLoss in "
                           "my_method.py of the current folder")
        return f"{cls.__module__}.{cls.__name__}", cls
    module, _, attr = name.rpartition(".")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        mod = importlib.import_module(module)
    except ImportError as err:
        raise CLIError(f"bench: --method {name!r}: cannot import {module!r} ({err}); run faircl bench from the folder "
                       f"that holds {module.replace('.', '/')}.py, or put it on PYTHONPATH") from None
    cls = getattr(mod, attr, None)
    if not (inspect.isclass(cls) and issubclass(cls, FairModule)):
        raise CLIError(f"bench: --method {name!r}: {module} has no FairModule subclass named {attr!r}")
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
        callbacks = selection_callbacks(p.selection, self.folder)
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
    """Fit and test the run in ``folder`` (its ``config.yaml``) in this process; writes ``run.json`` when both
    succeeded. The target of :meth:`faircl.cli.run_pool.RunPool.run`; returns the exit status."""
    from faircl.cli.app import run_cli  # deferred: Lightning, imported once by the worker that forks the runs
    from faircl.cli.dispatch import is_usage_error, user_message  # deferred: with faircl.cli.app

    root = Path(folder)
    extra = os.environ.get("FAIRCL_BENCH_PATH")
    if extra and extra not in sys.path:
        sys.path.insert(0, extra)  # the folder a user's method is imported from
    start, cpu = time.perf_counter(), time.process_time()  # a forked run's CPU clock starts at its fork
    try:
        cli = run_cli(["fit", "--config", str(root / "config.yaml")])
        ckpt_cb = cli.trainer.checkpoint_callback
        best = getattr(ckpt_cb, "best_model_path", "") or getattr(ckpt_cb, "last_model_path", "")
        chosen = None
        if (root / "selection.yaml").is_file():  # a selection: choose among the checkpoints of every epoch
            best, chosen = _pick_checkpoint(root, Path(ckpt_cb.dirpath))
        if not best:
            print("faircl bench: the fit saved no checkpoint", file=sys.stderr)
            return 1
        fit_s = time.perf_counter() - start
        test = run_cli(["test", "--config", str(root / "config.yaml"), "--trainer.devices=1",
                        f"--ckpt_path={best}"])
    except Exception as err:
        if not is_usage_error(err):
            raise
        print(f"faircl: error: {user_message(err)}", file=sys.stderr, flush=True)
        return 2
    report = Path(test.trainer.log_dir or root) / "report.json"
    if not report.is_file():
        print(f"faircl bench: the test wrote no {report}", file=sys.stderr)
        return 1
    if (root / "evaluate.yaml").is_file():  # the embeddings suite: score the tested encoder item by item
        _score_embeddings(root, test)
    record = {"report": str(report.relative_to(root)), "checkpoint": str(Path(best).relative_to(root)),
              "fit_s": round(fit_s, 3), "wall_s": round(time.perf_counter() - start, 3),
              "cpu_s": round(time.process_time() - cpu, 3)}
    if chosen is not None:
        record["selected"] = chosen
    tmp = root / "run.json.tmp"
    tmp.write_text(json.dumps(record, indent=2))
    tmp.replace(root / "run.json")
    return 0


def _score_embeddings(root: Path, test: Any) -> None:
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


def _pick_checkpoint(root: Path, ckpt_dir: Path) -> tuple[str, dict[str, Any]]:
    """The checkpoint the protocol's selection rule (``selection.yaml``) picks from the validation metrics of every
    epoch (``epochs.json``); the other epochs' checkpoints are deleted. Returns its path and ``{"rule", "epoch",
    "why"}`` (the reason is printed too)."""
    selection = check_selection(yaml.safe_load((root / "selection.yaml").read_text()), str(root / "selection.yaml"))
    history = root / "epochs.json"
    epoch, why = pick_epoch(json.loads(history.read_text()) if history.is_file() else [], selection)
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


def run_tasks(tasks: list[RunTask], say=print, fresh: bool = False) -> list[str]:
    """Run every task not done yet (a killed run's folder is cleared first); returns the failures' one-line
    reasons. ``fresh``: each run in a new Python process instead of a fork of the pre-imported worker."""
    todo = [t for t in tasks if not t.done]
    cached = len(tasks) - len(todo)
    if cached:
        base = sum(t.baseline for t in tasks if t.done)
        say(f"faircl bench: {cached} of {len(tasks)} runs already done ({base} cached baseline runs), reused")
    if not todo:
        return []
    if fresh:
        return _run_all(todo, None, say)
    return _run_all(todo, RunPool(BENCH_PRELOAD), say)


def _run_all(todo: list[RunTask], pool: RunPool | None, say) -> list[str]:
    failures, times, t0 = [], [], time.perf_counter()
    env = {"FAIRCL_BENCH_PATH": os.getcwd()}
    for i, task in enumerate(todo, 1):
        task.prepare()
        start = time.perf_counter()
        log = task.folder / "run.log"
        if pool is not None:
            code = pool.run("faircl.bench.runner:run_one", (str(task.folder),), log=log, env=env)
        else:
            import subprocess
            with open(log, "w") as fh:
                code = subprocess.run([sys.executable, "-c", f"import sys; from faircl.bench.runner import run_one; "
                                       f"sys.exit(run_one({str(task.folder)!r}))"], stdout=fh, stderr=fh,
                                      env={**os.environ, **env}).returncode
        took = time.perf_counter() - start
        times.append(took)
        left = (len(todo) - i) * sum(times) / len(times)
        where = "baseline, cached for reuse" if task.baseline else "method"
        status = "ok" if code == 0 and task.done else f"FAILED (exit {code}): {_tail(log)}; log {log}"
        say(f"faircl bench: [{i}/{len(todo)}] {task.protocol.name} · {task.setting} · seed {task.seed} ({where}): "
            f"{status} in {took:.1f} s; about {left / 60:.1f} min left")
        if status != "ok":
            failures.append(f"{task.protocol.name} · {task.setting} · seed {task.seed}: {status}")
    say(f"faircl bench: {len(todo)} runs in {time.perf_counter() - t0:.1f} s")
    return failures
