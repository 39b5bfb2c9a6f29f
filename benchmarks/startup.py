"""Per-run start-up: the same short ``faircl fit`` (+ ``faircl test``) as a fresh process, and as a child forked from
a worker that imported torch, Lightning and faircl once (:class:`faircl.cli.workers.RunPool`), side by side.

Three contenders per round (the timing harness rotates their order, :mod:`_timing`):

- **fresh**: ``faircl fit …`` then ``faircl test …`` as new processes (what a sweep trial paid before);
- **pool**: the same two commands in one child of the pre-imported fork server, as ``faircl sweep`` runs a trial's
  seed and ``faircl bench`` a run (:func:`faircl.cli.dispatch.main_sequence`); the server warmed up as the product
  warms it (:mod:`faircl.cli.warm`): with a tiny run of the sweep's config, or of the bench's frequent kinds of run
  (:func:`faircl.bench.runner.warm_runs`);
- **in-process**: the same two commands called in this process (``faircl.cli.main``), after a warm-up: no start-up
  at all, the floor.

The quick bench protocols are timed as a bench run is made: ``faircl.bench.runner.run_one`` on a prepared run
folder (fit, the selection rule's pick, test), in a fresh process (``faircl bench --fresh-processes``), forked from
the pool, and in this process.

The per-run overhead of a contender is its time minus the in-process time of the same round; it is reported as a
fraction of the in-process time (the run's own work: data, model, training, test). Target (the bench issue): the
pool's overhead ≤ 10% of the run on the quick protocols. ``--render`` re-renders from the saved JSON.

Each protocol is measured in a process of its own (the fork server is one per process, warmed for that protocol);
that process is started with ``python -c``, as the ``faircl`` command's children see a main module with nothing to
re-run.

    python benchmarks/startup.py --rounds 5 --out benchmarks/results/startup.md
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _timing import busy_note, fmt_s, machine, machine_line, measure  # noqa: E402

from faircl.cli import main  # noqa: E402
from faircl.cli.dispatch import main_sequence  # noqa: E402
from faircl.bench.runner import BENCH_PRELOAD, warm_runs  # noqa: E402
from faircl.cli.workers import RunPool  # noqa: E402

PROTOCOLS = {  # name: fit arguments (test adds --ckpt_path best); 1 epoch: the short runs of a sweep or a suite
    "ce/biased_features, 1 epoch": ["--config", "ce/biased_features", "--trainer.max_epochs", "1"],
    "confair/biased_features, 1 epoch": ["--config", "confair/biased_features", "--trainer.max_epochs", "1"],
    "ce/biased_features, 5 epochs": ["--config", "ce/biased_features", "--trainer.max_epochs", "5"],
}
QUIET = ["--trainer.enable_progress_bar", "false"]
#: quick protocols of ``faircl bench`` (suite, protocol): their generated run config, as a bench run gets it
BENCH = (("text", "synthbios"), ("vision", "stereo_digits"))


def bench_protocols() -> dict[str, object]:
    """Name → the resolved quick protocol of each :data:`BENCH` entry."""
    from faircl.bench.spec import load_suite

    return {f"bench {suite}/{name} (quick), CE": next(p for p in load_suite(suite, quick=True) if p.name == name)
            for suite, name in BENCH}


def bench_task(protocol, folder: Path):
    """The bench's run of CE on ``protocol``, seed 0, in ``folder``."""
    from faircl.bench.runner import MethodSpec, plan
    from faircl.methods import CE

    return plan(protocol, MethodSpec("CE", "faircl.methods.CE", {}, CE), [0], folder, folder)[0]


def bench_contenders(protocol, work: Path, pool: RunPool) -> dict:
    """A bench run of CE on ``protocol`` (seed 0: fit, the selection rule's pick, test), three ways: as a fresh
    process (``faircl bench --fresh-processes``), forked from the pool (``faircl bench``), and in this process."""
    from faircl.bench.runner import run_one

    counter = {"n": 0}

    def task() -> str:
        counter["n"] += 1
        t = bench_task(protocol, work / f"run{counter['n']}")
        t.prepare()
        return str(t.folder)

    def fresh() -> None:
        folder = task()
        code = subprocess.run([sys.executable, "-c", f"import sys; from faircl.bench.runner import run_one; "
                               f"sys.exit(run_one({folder!r}))"], capture_output=True, text=True).returncode
        if code:
            raise SystemExit(f"fresh bench run exited {code}; see {folder}")

    def pooled() -> tuple[float, float]:
        def one_run() -> None:
            folder = task()
            code = pool.run("faircl.bench.runner:run_one", (folder,), log=Path(folder) / "run.log")
            if code:
                raise SystemExit(f"pool bench run exited {code}; see {folder}")

        return steady(pool, one_run)

    def in_process() -> None:
        folder = task()
        code = _quiet(run_one, folder)
        if code:
            raise SystemExit(f"in-process bench run exited {code}; see {folder}")

    return {"fresh processes": fresh, "pool (forked)": pooled, "in-process (floor)": in_process}


def steady(pool: RunPool, one_run) -> tuple[float, float]:
    """The wall (and this process's CPU) seconds of one pool run in a sweep's steady state: it starts right after an
    untimed run of the same kind, so it runs while that run's child tears down and the spare child for the run after
    it is forked (:class:`~faircl.cli.workers.RunPool` does both beside the runs); then the pool settles, untimed, so
    nothing of it runs beside the next contender."""
    import time

    one_run()
    t0, c0 = time.perf_counter(), time.process_time()
    one_run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    pool.settle()
    return wall, cpu


def _quiet(fn, *args) -> int:
    """``fn(*args)`` in this process with its standard output discarded (the in-process contender)."""
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        return fn(*args)


def _faircl() -> str:
    found = shutil.which("faircl", path=str(Path(sys.executable).parent)) or shutil.which("faircl")
    if found is None:
        raise SystemExit("the faircl console command is not installed (pip install -e .)")
    return found


def _commands(args: list[str], root: Path) -> list[list[str]]:
    common = [*args, *QUIET, "--trainer.default_root_dir", str(root)]
    return [["fit", *common], ["test", *common]]


def contenders(args: list[str], work: Path, pool: RunPool) -> dict:
    counter = {"n": 0}

    def fresh() -> None:
        counter["n"] += 1
        for cmd in _commands(args, work / f"fresh{counter['n']}"):
            proc = subprocess.run([_faircl(), *cmd], capture_output=True, text=True)
            if proc.returncode:
                raise SystemExit(f"fresh {cmd[0]} failed: {proc.stderr[-1500:]}")

    def pooled() -> tuple[float, float]:  # one forked child runs the fit and its test, as a sweep's seed does
        def one_run() -> None:
            counter["n"] += 1
            cmds = _commands(args, work / f"pool{counter['n']}")
            code = pool.run(main_sequence, (cmds,), log=work / f"pool{counter['n']}.log")
            if code:
                raise SystemExit(f"pool run exited {code}; see {work}")

        return steady(pool, one_run)

    def in_process() -> None:
        counter["n"] += 1
        for cmd in _commands(args, work / f"inproc{counter['n']}"):
            code = _quiet(main, cmd)
            if code:
                raise SystemExit(f"in-process {cmd[0]} exited {code}")

    return {"fresh processes": fresh, "pool (forked)": pooled, "in-process (floor)": in_process}


def render(raw: dict, out: Path) -> None:
    per_protocol = all("warm_up" in res for res in raw["protocols"].values())  # each protocol its own warmed worker
    steady_note = ("" if not raw.get("steady") else
                   " The pool's run is timed in a sweep's steady state: right after an untimed run of the same kind, "
                   "so that run's child tears down and the spare child for the next run is forked beside it (the "
                   "pool forks each run's child ahead and takes a run's status before its child's exit); the pool "
                   "then settles, untimed, before the next contender.")
    if per_protocol:
        worker = ("Each protocol is measured in a process of its own, whose pool's server imports torch, Lightning "
                  "and faircl and warms up as the product warms it before its first fork (`faircl.cli.warm`): a "
                  "tiny fit + test (two batches) of the sweep's config for the `ce`/`confair` rows, of the bench's "
                  "kind of run (`warm_runs`) for the bench rows. That warm-up is paid once per worker; its time is "
                  "the last column. The figures before any warm-up: [startup_before.md](startup_before.md).")
    else:
        worker = ("The pool's server imports torch, Lightning and faircl and runs one warm-up fit + test before its "
                  "first fork (`faircl.cli.warm`); the figures before that warm-up: "
                  "[startup_before.md](startup_before.md).")
    lines = ["# Per-run start-up: fresh processes against a pre-imported worker", "",
             f"`python benchmarks/startup.py --rounds {raw['rounds']}{fresh_flag(raw)}` ({raw['wall_s']:.0f} s). "
             "Each contender runs "
             "`faircl fit` then `faircl test` of the same protocol (fresh: two new processes; pool: one forked "
             "child, as a sweep's seed does; in-process: this process); the bench rows run a bench run as `faircl "
             "bench` makes it (`run_one`: fit, the selection rule's pick, test; fresh: one new process, as "
             "`--fresh-processes`). Per round the three run in rotated order. "
             "Overhead = the contender's time − the in-process time of the same round, as a share of the "
             "in-process time (the run's own work). Target: the pool's overhead ≤ 10%. " + worker + steady_note, "",
             machine_line(raw["machine_start"], raw["machine_end"]), "",
             "| protocol | fresh processes (s) | pool (s) | in-process (s) | fresh overhead | pool overhead | "
             "target met |" + (" worker warm-up, once (s) |" if per_protocol else ""),
             "|---|---|---|---|---|---|---|" + ("---|" if per_protocol else "")]
    notes = []
    for name, res in raw["protocols"].items():
        t = res["timings"]
        fresh, pool, floor = (t[k]["wall"] for k in ("fresh processes", "pool (forked)", "in-process (floor)"))
        over_f = statistics.median([(a - c) / c for a, c in zip(fresh, floor)])
        over_p = statistics.median([(b - c) / c for b, c in zip(pool, floor)])
        ratios = [(b - c) / c for b, c in zip(pool, floor)]
        lo_p, hi_p = median_interval(ratios) if per_protocol else (min(ratios), max(ratios))
        met = "yes" if over_p <= 0.10 else "no"
        lines.append(f"| {name} | {res['fmt']['fresh processes']} | {res['fmt']['pool (forked)']} | "
                     f"{res['fmt']['in-process (floor)']} | {100 * over_f:+.0f}% | {100 * over_p:+.0f}% "
                     f"[{100 * lo_p:+.0f}, {100 * hi_p:+.0f}] | {met} |" + (f" {warm_cell(res['warm_up'])} |"
                                                                              if per_protocol else ""))
        notes.append((name, res["busy"], max(x["load_max"] for x in t.values())))
    if per_protocol:
        fresh_n = raw.get("fresh_rounds", raw["rounds"])
        lines += ["", "Times: median [min–max] over rounds of fit + test wall seconds; the pool's overhead: the median "
                  "of the per-round ratios [its 95% interval, distribution-free: order statistics of the binomial]; "
                  "target met when that median is ≤ 10%. The fresh processes ran in the first "
                  f"{fresh_n} of the {raw['rounds']} rounds (their overhead is the median over those rounds).", "",
                  *load_notes(notes)]
    else:
        lines += ["", "Times: median [min–max] over rounds of fit + test wall seconds; overheads: median [min, max] of "
                  "the per-round ratios.", "", *load_notes(notes)]
    if raw.get("empty_beside_s"):
        empty, beside = raw["empty_child_s"], raw["empty_beside_s"]
        lines += ["", "A run that does nothing (`time.sleep(0)`) takes "
                  f"{1e3 * statistics.median(empty):.1f} ms on the run's path (median of {len(empty)}, min "
                  f"{1e3 * min(empty):.1f}, max {1e3 * max(empty):.1f}): handing it to the spare child, forked "
                  "ahead, and taking back its status. Beside the next run the pool then works "
                  f"{1e3 * statistics.median(beside):.0f} ms (median; min {1e3 * min(beside):.0f}, max "
                  f"{1e3 * max(beside):.0f}): the child's exit and the fork of the next spare, which the steady-state "
                  "timing above includes as it falls."]
        if raw.get("empty_rerun"):
            again = raw["empty_rerun"]
            lines[-1] += (" In this run `settle()` did not yet wait for the spare to copy its pages ahead (~50 MiB), so "
                          "an empty run dispatched right after it waited for that copy. Measured again with "
                          f"`--empty-only` ({again['when']}), once `settle()` waited for it: "
                          f"{1e3 * statistics.median(again['path']):.1f} ms on the run's path (median of "
                          f"{len(again['path'])}, max {1e3 * max(again['path']):.1f}), "
                          f"{1e3 * statistics.median(again['beside']):.0f} ms beside the next run (the child's exit, "
                          "the fork of the next spare and its copy-ahead).")
    elif raw.get("empty_child_s"):
        empty = raw["empty_child_s"]
        lines += ["", "A forked child that runs nothing (`time.sleep(0)`) takes "
                  f"{1e3 * statistics.median(empty):.0f} ms "
                  f"(median of {len(empty)}, min {1e3 * min(empty):.0f}, max {1e3 * max(empty):.0f}): the fork of "
                  "the warmed server, the child's start and its exit. That much of each pool overhead above is the "
                  "fork itself; the rest is spent inside the run."]
    out.write_text("\n".join(lines) + "\n")


def fresh_flag(raw: dict) -> str:
    """`` --fresh-rounds K`` when the fresh processes ran in fewer rounds than the others."""
    k = raw.get("fresh_rounds", raw["rounds"])
    return f" --fresh-rounds {k}" if k != raw["rounds"] else ""


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median of ``values``: the order statistics ``v[k]`` and ``v[n - 1 - k]``
    (sorted, from 0) with the largest ``k`` whose coverage, 1 − 2·P(Binomial(n, ½) ≤ k), is at least ``level``; the
    sample's range when even that of ``k = 0`` falls short."""
    from math import comb

    v, n = sorted(values), len(values)
    best = 0
    for k in range((n + 1) // 2):
        if 1 - 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n >= level:
            best = k
    return v[best], v[n - 1 - best]


def warm_cell(warmed: list[dict]) -> str:
    """The worker's warm-up: its seconds, and which of its runs failed (the runs are then merely slower); then the
    probe that learned the pages a run writes (:mod:`faircl.cli.prefault`), when the record has it."""
    runs = [w for w in warmed if "prefault_bytes" not in w]
    failed = sum(not w["ok"] for w in runs)
    cell = f"{sum(w['seconds'] for w in runs):.1f}" + (f" ({failed} of {len(runs)} failed)" if failed else "")
    for probe in (w for w in warmed if "prefault_bytes" in w):
        cell += f" + {probe['seconds']:.1f} (probe: {probe['prefault_bytes'] / 2 ** 20:.0f} MiB to copy ahead)"
    return cell


def load_notes(notes: list[tuple[str, str, float]]) -> list[str]:
    """The machine's load per protocol from ``(protocol, its busy note, its highest load)``: each busy protocol's
    note names it; the quiet ones share the note of the highest load, which says "every figure" only when no
    protocol was busy."""
    busy = [f"{name}: {note}" for name, note, _ in notes if note and not note.startswith("The machine was quiet")]
    quiet = [(load, note) for _, note, load in notes if note.startswith("The machine was quiet")]
    if not quiet:
        return busy
    top = max(quiet)[1]
    return [*busy, top.replace("for every figure", "for every figure of the other protocols") if busy else top]


def one(name: str, rounds: int, out: str, fresh_rounds: int | None = None) -> None:
    """Measure protocol ``name`` in this process, its pool's server warmed up as the product warms it (a sweep: its
    config; a bench: :func:`~faircl.bench.runner.warm_runs` of its runs); the figures as JSON into ``out``. The
    fresh processes run in the first ``fresh_rounds`` rounds only (all when ``None``): the pool and the in-process
    floor, a few percent apart, need more rounds than the fresh processes, several times slower."""
    protocol = {**PROTOCOLS, **bench_protocols()}[name]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if isinstance(protocol, list):  # a sweep's seed: the sweep's worker warms up with the sweep's fit arguments
            pool = RunPool(warm=[protocol])
            racers = contenders(protocol, work, pool)
        else:  # a bench run: the bench's worker warms up with its runs' frequent kinds
            pool = RunPool(BENCH_PRELOAD, warm=warm_runs([bench_task(protocol, work / "planned")], work / "warm"))
            racers = bench_contenders(protocol, work, pool)
        warmed = warm_up_record(pool, work / "warmed.json")
        first = rounds if fresh_rounds is None else max(1, min(fresh_rounds, rounds))
        timings = measure(racers, rounds=first, warmup=1)
        if rounds > first:  # more rounds of the pool against the floor, in the same rotation
            racers.pop("fresh processes")
            for k, t in measure(racers, rounds=rounds - first, warmup=0).items():
                for series in ("wall", "cpu", "load", "runnable"):
                    getattr(timings[k], series).extend(getattr(t, series))
        empty, beside = empty_child(pool)
    res = {"timings": {k: t.as_dict() | {"wall": t.wall} for k, t in timings.items()},
           "fmt": {k: fmt_s(t) for k, t in timings.items()}, "busy": busy_note(list(timings.values())),
           "warm_up": warmed, "empty_child_s": empty, "empty_beside_s": beside}
    Path(out).write_text(json.dumps(res, default=str))
    print(name, res["fmt"], f"warm-up {sum(w['seconds'] for w in warmed):.1f} s", flush=True)


def dump_warmed(path: str) -> int:
    """(In a forked run) the server's warm-up record (:data:`faircl.cli.warm.WARMED`) as JSON into ``path``."""
    import faircl.cli.warm as warm

    probe = getattr(warm, "PREFAULT_COST", None)
    extra = [] if probe is None else [{"args": ["(prefault probe)"], "ok": probe["bytes"] > 0,
                                       "seconds": probe["seconds"], "prefault_bytes": probe["bytes"]}]
    Path(path).write_text(json.dumps([*warm.WARMED, *extra]))
    return 0


def warm_up_record(pool: RunPool, path: Path) -> list[dict]:
    """Start ``pool``'s server (its warm-up runs then) and read back what the warm-up ran, for how long."""
    code = pool.run("startup:dump_warmed", (str(path),))
    if code:
        raise SystemExit(f"reading the worker's warm-up record failed (exit {code})")
    return json.loads(path.read_text())


def run(rounds: int, fresh_rounds: int | None = None) -> dict:
    import time

    start, t0 = machine(), time.perf_counter()
    raw: dict = {"rounds": rounds, "fresh_rounds": fresh_rounds or rounds, "machine_start": start, "protocols": {},
                 "steady": True}
    names = [*PROTOCOLS, *bench_protocols()]
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(names):
            out = Path(tmp) / f"{i}.json"
            code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import startup; "
                    f"startup.one({name!r}, {rounds}, {str(out)!r}, {fresh_rounds!r})")
            subprocess.run([sys.executable, "-c", code], check=True)
            raw["protocols"][name] = json.loads(out.read_text())
    empty = [x for res in raw["protocols"].values() for x in res["empty_child_s"]]
    raw["empty_child_s"] = empty
    raw["empty_beside_s"] = [x for res in raw["protocols"].values() for x in res.get("empty_beside_s", [])]
    print(f"an empty forked child: {1e3 * statistics.median(empty):.1f} ms", flush=True)
    raw["machine_end"], raw["wall_s"] = machine(), time.perf_counter() - t0
    return raw


def empty_child(pool: RunPool, runs: int = 20) -> tuple[list[float], list[float]]:
    """Per empty run (``time.sleep(0)``), ``runs`` of them: the wall seconds on the run's path (the pool's fixed cost
    per run: handing the run to the spare child, its report), and the seconds the pool then works beside the next run
    (the child's exit, the fork of the next spare, its copy-ahead), waited for with
    :meth:`~faircl.cli.workers.RunPool.settle`."""
    import time

    path, beside = [], []
    for _ in range(runs):
        start = time.perf_counter()
        pool.run("time:sleep", (0,))
        middle = time.perf_counter()
        pool.settle()
        path.append(middle - start)
        beside.append(time.perf_counter() - middle)
    return path, beside


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--fresh-rounds", type=int, default=None,
                   help="run the fresh processes in this many of the rounds only (default: all)")
    p.add_argument("--out", default=str(HERE / "results" / "startup.md"))
    p.add_argument("--render", action="store_true", help="re-render --out from its saved JSON")
    p.add_argument("--empty-only", action="store_true",
                   help="measure the empty runs again (first protocol's worker) into --out's saved JSON, re-render")
    opts = p.parse_args()
    out = Path(opts.out)
    saved = out.with_suffix(".json")
    if opts.empty_only:
        import datetime

        raw = json.loads(saved.read_text())
        pool = RunPool(warm=[next(iter(PROTOCOLS.values()))])
        pool.run("time:sleep", (0,))  # the server's start and warm-up, untimed
        pool.settle()
        path, beside = empty_child(pool, 100)
        raw["empty_rerun"] = {"when": datetime.date.today().isoformat(), "path": path, "beside": beside}
        saved.write_text(json.dumps(raw, indent=1, default=str))
        render(raw, out)
    elif opts.render:
        render(json.loads(saved.read_text()), out)
    else:
        raw = run(opts.rounds, opts.fresh_rounds)
        saved.write_text(json.dumps(raw, indent=1, default=str))
        render(raw, out)
    print(f"written to {out}")
