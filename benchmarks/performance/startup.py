"""What a run pays for being forked from the pre-imported worker (:mod:`faircl.runs.pool`) instead of running in
this process, on a protocol's full run and on a quick run; a fresh process for reference.

Each round runs ``faircl fit`` then ``faircl test --ckpt_path best`` of ``ce/biased_features`` as a sweep runs a
seed (:func:`main_sequence`: the two commands in one process), twice, in alternating order: forked from the worker and in this
process (the floor: no start-up at all). The full run has the config's epochs (15), the quick run one. The worker's
overhead is, per round, (forked − in-process) / in-process; the table gives its median and a distribution-free 95%
interval for the median (order statistics). A fresh process (the same two commands in a new Python process) runs in
fewer rounds, for reference. Targets: the overhead ≤ 10% of the full run and ≤ 20% of the quick run.

    python benchmarks/performance/startup.py --rounds 10 --fresh-rounds 2

``--epochs 1,5,15`` measures instead what each run costs whatever its length (section "Fixed cost of a run"): forked
runs of ``ce/biased_features`` at each epoch count, fitted by least squares as time = intercept + slope · epochs, in
four variants whose differences split the intercept (report.png drawn as a plain ``faircl test`` does, and as the
bench's runs did; no picture, as a bench run now; no picture and no leakage probe; the fit alone), with bootstrap
intervals over rounds; and the set-up of the bench protocols' data in a forked run (the fit's datamodule and its first
training batch, then the test's), with the generated-data cache off (every run rebuilt it) and on::

    OMP_NUM_THREADS=1 nice python benchmarks/performance/startup.py --epochs 1,5,15 --rounds 10 --data-rounds 4
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from math import comb
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from faircl.bench.runner import RunTask
from faircl.bench.spec import load_suite
from faircl.cli import main
from faircl.runs.pool import RunPool

REPO = Path(__file__).resolve().parents[2]


def main_sequence(commands: list[list[str]]) -> int:
    """Run several ``faircl`` commands in this process, in order; stops at the first that fails and returns its
    status, else 0."""
    for args in commands:
        code = main(list(args))
        if code:
            return code
    return 0

OUT = REPO / "benchmarks" / "performance" / "results" / "startup.md"
TARGETS = {"full": 0.10, "quick": 0.20}
#: the fit arguments of each kind of run: the config as shipped, and cut to one epoch
RUNS = {"full": ["--config", "ce/biased_features"],
        "quick": ["--config", "ce/biased_features", "--trainer.max_epochs=1"]}
#: the run machinery before (the commit that renamed the modules last) and after
BEFORE = ("f30b7a7", ["faircl/cli/workers.py", "faircl/cli/warm.py", "faircl/cli/prefault.py", "faircl/cli/spare.py",
                      "faircl/cli/preload.py"])
AFTER = ["faircl/runs/pool.py"]
#: the fixed-cost variants: (name in the table, arguments added to fit and test, fit alone)
VARIANTS = {"plain": ("a plain `faircl test`: report.png drawn (a bench run before)", [], False),
            "bench": ("`--report_plot false`: no picture (a bench run now)", ["--report_plot=false"], False),
            "no_probe": ("no picture, no leakage probe (`--model.init_args.leakage=false`)",
                         ["--report_plot=false", "--model.init_args.leakage=false"], False),
            "fit": ("`faircl fit` alone", [], True)}
#: the protocols whose data set-up is timed: (suite, name, quick)
DATA = [("text", "synthbios_minilm", False), ("text", "synthbios_minilm", True), ("text", "synthbios", False),
        ("text", "synthbios", True), ("vision", "stereo_digits", False)]
SECTION = "## Fixed cost of a run"


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median: the order statistics ``v[k]`` and ``v[n - 1 - k]`` with the
    largest ``k`` whose coverage 1 − 2·P(Binomial(n, ½) ≤ k) is at least ``level``; the range when none is."""
    v, n = sorted(values), len(values)
    best = 0
    for k in range((n + 1) // 2):
        if 1 - 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n >= level:
            best = k
    return v[best], v[n - 1 - best]


def lines_of(paths: list[str], commit: str | None = None) -> int:
    texts = [subprocess.run(["git", "show", f"{commit}:{p}"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout if commit else (REPO / p).read_text() for p in paths]
    return sum(t.count("\n") for t in texts)


def timed(fn) -> float:
    start = time.perf_counter()
    if fn():
        raise SystemExit(f"a run failed: {fn}")
    return time.perf_counter() - start


def measure(args: list[str], work: Path, pool: RunPool, rounds: int, fresh_rounds: int) -> dict:
    counter = iter(range(10 ** 6))

    def commands() -> list[list[str]]:
        root = work / str(next(counter))
        root.mkdir(parents=True)
        common = [*args, "--trainer.enable_progress_bar=false", f"--trainer.default_root_dir={root}"]
        return [["fit", *common], ["test", *common, "--ckpt_path=best"]]

    def forked() -> int:
        cmds = commands()
        return pool.run(main_sequence, (cmds,), log=Path(cmds[0][-1].split("=", 1)[1]) / "run.log")

    def in_process() -> int:
        with open(os.devnull, "w") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            return main_sequence(commands())

    def fresh() -> int:
        code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); from startup import main_sequence; "
                f"sys.exit(main_sequence({commands()!r}))")
        return subprocess.run([sys.executable, "-c", code], capture_output=True, check=False).returncode

    timed(forked), timed(in_process)  # untimed: the worker's start, this process's first run
    rows, load = [], []
    for r in range(rounds):
        load.append(os.getloadavg()[0])
        pair = {"forked": forked, "in_process": in_process}
        order = list(pair) if r % 2 == 0 else list(pair)[::-1]
        rows.append({name: timed(pair[name]) for name in order})
    over = [(t["forked"] - t["in_process"]) / t["in_process"] for t in rows]
    return {"rounds": rows, "fresh": [timed(fresh) for _ in range(fresh_rounds)], "load_1min": load,
            "overhead": over, "overhead_median": statistics.median(over), "overhead_95": median_interval(over)}


def render(raw: dict) -> str:
    def s(values: list[float]) -> str:
        lo, hi = median_interval(values)
        return f"{statistics.median(values):.2f} [{lo:.2f}, {hi:.2f}]"

    lines = [
        "# Run start-up: the pre-imported worker against an in-process run", "",
        f"`python benchmarks/performance/startup.py --rounds {raw['rounds']} --fresh-rounds {raw['fresh_rounds']}` "
        f"({raw['seconds']:.0f} s, {raw['when']}). Each round runs `faircl fit` then `faircl test --ckpt_path best` as "
        "a sweep runs a seed (`main_sequence`), forked from the worker "
        "(`faircl.runs.pool.RunPool`: a `forkserver` that imported torch, Lightning and faircl once) and in this "
        "process, in alternating order; the overhead is (forked − in-process) / in-process per round. A fresh "
        "process (the same two commands in a new Python process) is timed in fewer rounds, for reference. Figures: "
        "median [distribution-free 95% interval of the median].", "",
        f"{raw['machine']}", "",
        "| run | in-process (s) | forked (s) | worker overhead | target | met | fresh process (s) |",
        "|---|---|---|---|---|---|---|"]
    for kind, r in raw["protocols"].items():
        lo, hi = r["overhead_95"]
        lines.append(f"| {r['name']} | {s([t['in_process'] for t in r['rounds']])} | "
                     f"{s([t['forked'] for t in r['rounds']])} | {100 * r['overhead_median']:+.1f}% "
                     f"[{100 * lo:+.1f}, {100 * hi:+.1f}] | ≤ {100 * TARGETS[kind]:.0f}% | "
                     f"{'yes' if r['overhead_median'] <= TARGETS[kind] else 'no'} | "
                     f"{statistics.median(r['fresh']):.1f} ({len(r['fresh'])} run{'s' * (len(r['fresh']) > 1)}) |")
    lines += ["", f"Run machinery: {raw['lines_before']} lines before (`{'`, `'.join(BEFORE[1])}` at "
              f"{BEFORE[0]}: a warm-up fit at import, `gc.freeze`, page pre-faulting, spare children forked ahead), "
              f"{raw['lines_after']} after (`{AFTER[0]}`, standard library only)."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------ the fixed cost of a run
def line_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares intercept and slope of y over x."""
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return my - slope * mx, slope


def measure_epochs(work: Path, pool: RunPool, epochs: list[int], rounds: int) -> dict:
    """Forked runs of every variant at every epoch count, in a rotating order each round (every cell meets every
    moment of the round); seconds by variant, epoch count and round."""
    counter = iter(range(10 ** 6))

    def run(variant: str, n: int):
        _, extra, fit_only = VARIANTS[variant]
        root = work / str(next(counter))
        root.mkdir(parents=True)
        common = [*RUNS["full"], f"--trainer.max_epochs={n}", "--trainer.enable_progress_bar=false",
                  f"--trainer.default_root_dir={root}", *extra]
        cmds = [["fit", *common]] + ([] if fit_only else [["test", *common, "--ckpt_path=best"]])
        return lambda: pool.run(main_sequence, (cmds,), log=root / "run.log")

    cells = [(v, n) for v in VARIANTS for n in epochs]
    for v in VARIANTS:  # untimed: the worker's start and each variant's first run
        timed(run(v, epochs[0]))
    times: dict[str, dict[str, list[float]]] = {v: {str(n): [] for n in epochs} for v in VARIANTS}
    load = []
    for r in range(rounds):
        load.append(os.getloadavg()[0])
        k = (r * 5) % len(cells)
        order = cells[k:] + cells[:k]
        for v, n in order[::-1] if r % 2 else order:
            times[v][str(n)].append(timed(run(v, n)))
        print(f"  round {r + 1}/{rounds}: " + ", ".join(f"{v} {times[v][str(epochs[-1])][-1]:.2f} s"
                                                      for v in VARIANTS) + f" at {epochs[-1]} epochs", flush=True)
    return {"epochs": epochs, "rounds": rounds, "times": times, "load_1min": load}


def fixed_cost(raw: dict, draws: int = 2000) -> dict:
    """Each variant's intercept and slope, and the parts of the plain run's intercept, with percentile intervals
    from a bootstrap over rounds (a round's runs are resampled together, so the parts stay paired)."""
    times, epochs, n = raw["times"], raw["epochs"], raw["rounds"]

    def estimates(rows: list[int]) -> dict[str, float]:
        out = {}
        for v in VARIANTS:
            out[f"{v}.intercept"], out[f"{v}.slope"] = line_fit([(e, times[v][str(e)][i]) for i in rows
                                                                 for e in epochs])
        i = {v: out[f"{v}.intercept"] for v in VARIANTS}
        out.update({"part.fit": i["fit"], "part.test": i["no_probe"] - i["fit"], "part.probe": i["bench"] - i["no_probe"],
                    "part.picture": i["plain"] - i["bench"]})
        return out

    point = estimates(list(range(n)))
    rng = random.Random(0)
    boot = [estimates([rng.randrange(n) for _ in range(n)]) for _ in range(draws)]
    interval = {}
    for key in point:
        values = sorted(b[key] for b in boot)
        interval[key] = (values[int(0.025 * draws)], values[int(0.975 * draws) - 1])
    return {"point": point, "interval": interval, "draws": draws}


def data_setup(data: dict, out: str) -> int:
    """A forked run's data set-up: the fit's datamodule set up and its first training batch drawn, then the
    test's datamodule set up; the seconds of each into ``out``."""
    from faircl.runs.cli_names import datamodules

    cls = datamodules()[data["class_path"].rsplit(".", 1)[-1]]
    start = time.perf_counter()
    fit = cls(**data.get("init_args", {}))
    fit.setup("fit")
    next(iter(fit.train_dataloader()))
    mid = time.perf_counter()
    cls(**data.get("init_args", {})).setup("test")
    Path(out).write_text(json.dumps([mid - start, time.perf_counter() - mid]))
    return 0


def measure_data(work: Path, pool: RunPool, rounds: int) -> list[dict]:
    """The data set-up of each protocol of :data:`DATA` (its plain runs, and its runs on two views), with the
    generated-data cache off and on, alternating; an untimed first run of each fills the caches."""
    rows = []
    for suite, name, quick in DATA:
        protocol = next(p for p in load_suite(suite, quick=quick) if p.name == name)
        for views in (False, True) if protocol.views else (False,):
            data = RunTask(protocol, "CE", "faircl.methods.CE", {}, 0, work, True, views).config()["data"]
            seconds: dict[str, list[list[float]]] = {"off": [], "on": []}
            for r in range(rounds + 1):
                for mode in ("off", "on") if r % 2 == 0 else ("on", "off"):
                    out = work / "setup.json"
                    code = pool.run(data_setup, (data, str(out)), log=work / "setup.log",
                                    env={"FAIRCL_GENERATED_CACHE": mode})
                    if code:
                        raise SystemExit(f"the data set-up of {name} failed: {(work / 'setup.log').read_text()[-2000:]}")
                    if r:
                        seconds[mode].append(json.loads(out.read_text()))
            rows.append({"protocol": f"{suite}/{name}" + (" --quick" if quick else ""), "views": views, **seconds})
            print(f"  {rows[-1]['protocol']}{' (views)' if views else ''}: " + ", ".join(
                f"{m} {statistics.median(sum(t) for t in seconds[m]):.2f} s" for m in seconds), flush=True)
    return rows


def render_fixed(raw: dict) -> str:
    est, ep = raw["estimates"], raw["epochs"]
    p, ci = est["point"], est["interval"]

    def f(key: str, digits: int = 2) -> str:
        lo, hi = ci[key]
        return f"{p[key]:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"

    eps = " / ".join(str(e) for e in ep["epochs"])
    lines = [
        SECTION, "",
        f"`OMP_NUM_THREADS=1 nice python benchmarks/performance/startup.py --epochs {','.join(map(str, ep['epochs']))} "
        f"--rounds {ep['rounds']} --data-rounds {raw['data_rounds']}` ({raw['seconds']:.0f} s, {raw['when']}). "
        f"Each run is `faircl fit` then `faircl test --ckpt_path best` of `ce/biased_features` forked from the worker "
        f"(`main_sequence`, as a sweep or a bench runs a seed), at {eps} epochs, every variant in each of "
        f"{ep['rounds']} rounds in a rotating order; time = intercept + slope · epochs by least squares over all runs "
        f"of a variant; [95% percentile interval of a bootstrap over rounds, {est['draws']} draws].", "",
        raw["machine"], "",
        f"| run | intercept (s) | slope (s / epoch) | median run at {eps} epochs (s) |", "|---|---|---|---|"]
    for v, (label, _, _) in VARIANTS.items():
        medians = " / ".join(f"{statistics.median(ep['times'][v][str(e)]):.2f}" for e in ep["epochs"])
        lines.append(f"| {label} | {f(v + '.intercept')} | {f(v + '.slope', 3)} | {medians} |")
    lines += ["", "What the intercept of a plain run holds (differences of the intercepts above, paired by round):", "",
              "| part | seconds a run |", "|---|---|",
              f"| the fit's set-up: parsing the config (LightningCLI builds the parsers of its four subcommands), "
              f"building the model, data and trainer, saving the config and the last checkpoint | {f('part.fit')} |",
              f"| the test without probe or picture: the same set-up again, loading the checkpoint, one pass over "
              f"the test split, report.json / report.md / rows.npz | {f('part.test')} |",
              f"| the leakage probes (two linear SVMs fit on the train split's representations) | {f('part.probe')} |",
              f"| report.png (cut from bench runs) | {f('part.picture')} |",
              f"| total: a plain run's intercept | {f('plain.intercept')} |", "",
              "The data's set-up in a forked run (the fit's datamodule set up and its first training batch drawn, then "
              "the test's datamodule set up), seconds a run, median [min, max] of "
              f"{raw['data_rounds']} runs each: with the generated-data cache off (as every run did before: the bios "
              "drawn anew, and WordNet parsed wherever EDA looks up synonyms) and on (read back; filled by an "
              "untimed first run).", "",
              "| protocol | runs | cache off (s) | cache on (s) |", "|---|---|---|---|"]

    def m(values: list[list[float]]) -> str:
        totals = [sum(t) for t in values]
        return f"{statistics.median(totals):.2f} [{min(totals):.2f}, {max(totals):.2f}]"

    for row in raw["data"]:
        runs = ("on two views (EDA)" if row["protocol"].startswith("text") else "on two views") if row["views"] \
            else "plain"
        lines.append(f"| {row['protocol']} | {runs} | {m(row['off'])} | {m(row['on'])} |")
    rounds = [sum(ep["times"][v][str(e)][r] for v in VARIANTS for e in ep["epochs"]) for r in range(ep["rounds"])]
    lines += ["", f"A bench run's fixed cost: {p['plain.intercept']:.2f} s before (report.png drawn), "
              f"{p['bench.intercept']:.2f} s now, against {p['bench.slope']:.3f} s an epoch; the rest of the intercept "
              "is the set-up of the fit and of the test by LightningCLI and the leakage probes that the bench's leakage "
              "claims read. On the text protocols the data's set-up adds to it, per run, what the table above gives "
              "(before: the cache off). The machine was shared: the first round's runs took "
              f"{rounds[0]:.1f} s in all, the last's {rounds[-1]:.1f} s; the rotating order spreads that drift over the "
              "variants, and the intervals include it."]
    return "\n".join(lines) + "\n"


def write_fixed(path: Path, raw: dict) -> None:
    """The section replaces its earlier text in ``path`` (before the History), the rest stays; the line count
    of the run machinery is brought up to date; ``startup.json`` keeps the raw figures under ``fixed_cost``."""
    old = path.read_text() if path.is_file() else ""
    history = old.find("\n## History")
    head, tail = (old[:history], old[history:]) if history >= 0 else (old, "")
    if SECTION in head:
        head = head[:head.index(SECTION)]
    head = re.sub(r"\d+ after \(`faircl/(cli/run_pool|runs/pool)\.py`", f"{lines_of(AFTER)} after (`faircl/runs/pool.py`",
                  head)
    path.write_text(head.rstrip("\n") + "\n\n" + render_fixed(raw) + tail)
    js = path.with_suffix(".json")
    stored = json.loads(js.read_text()) if js.is_file() else {}
    if "lines_after" in stored:
        stored["lines_after"] = lines_of(AFTER)
    stored["fixed_cost"] = raw
    js.write_text(json.dumps(stored, indent=1) + "\n")


def machine(load0: tuple[float, ...], load1: tuple[float, ...], loads: list[float]) -> str:
    import torch

    return (f"{os.cpu_count()} cores, {torch.get_num_threads()} torch threads, torch {torch.__version__}, "
            f"Python {sys.version.split()[0]}. How busy: 1-minute load average {load0[0]:.2f} at the start, "
            f"{load1[0]:.2f} at the end, {min(loads):.2f}–{max(loads):.2f} at the rounds' starts (other "
            "work shared the machine's cores whenever it was above 1).")


def main_fixed(a: argparse.Namespace) -> None:
    start, load0 = time.perf_counter(), os.getloadavg()
    pool = RunPool()
    epochs = sorted({int(e) for e in a.epochs.split(",")})
    with tempfile.TemporaryDirectory(prefix="faircl-fixed-") as tmp:
        print(f"fixed cost: ce/biased_features at {epochs} epochs, {a.rounds} rounds", flush=True)
        ep = measure_epochs(Path(tmp) / "runs", pool, epochs, a.rounds)
        print(f"data set-up: {a.data_rounds} rounds", flush=True)
        (Path(tmp) / "data").mkdir()
        data = measure_data(Path(tmp) / "data", pool, a.data_rounds) if a.data_rounds else []
    raw = {"epochs": ep, "estimates": fixed_cost(ep), "data": data, "data_rounds": a.data_rounds,
           "seconds": time.perf_counter() - start, "when": time.strftime("%Y-%m-%d", time.gmtime()),
           "machine": machine(load0, os.getloadavg(), ep["load_1min"])}
    write_fixed(a.out, raw)
    print(render_fixed(raw))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--fresh-rounds", type=int, default=2)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--epochs", help="the fixed cost of a run instead: these epoch counts, e.g. 1,5,15")
    p.add_argument("--data-rounds", type=int, default=4, help="with --epochs: runs of each data set-up and cache mode")
    a = p.parse_args()
    if a.epochs:
        return main_fixed(a)
    start, load0 = time.perf_counter(), os.getloadavg()
    pool = RunPool()
    protocols = {}
    with tempfile.TemporaryDirectory(prefix="faircl-startup-") as tmp:
        for kind, args in RUNS.items():
            print(f"{kind}: {' '.join(args)}, {a.rounds} rounds", flush=True)
            epochs = "1 epoch" if kind == "quick" else "15 epochs (its config)"
            protocols[kind] = {"name": f"ce/biased_features, {epochs}",
                               **measure(args, Path(tmp) / kind, pool, a.rounds, a.fresh_rounds)}
    loads = [x for r in protocols.values() for x in r["load_1min"]]
    raw = {"rounds": a.rounds, "fresh_rounds": a.fresh_rounds, "seconds": time.perf_counter() - start,
           "when": time.strftime("%Y-%m-%d", time.gmtime()), "protocols": protocols,
           "lines_before": lines_of(BEFORE[1], BEFORE[0]), "lines_after": lines_of(AFTER),
           "machine": machine(load0, os.getloadavg(), loads)}
    text = render(raw)
    old = a.out.read_text() if a.out.is_file() else ""
    # the fixed-cost section (--epochs) and the History stay
    keep = old[old.index(SECTION):] if SECTION in old else old[old.find("\n## History"):] if "\n## History" in old else ""
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(text + ("\n" + keep.lstrip("\n") if keep else ""))
    js = a.out.with_suffix(".json")
    if js.is_file() and "fixed_cost" in (stored := json.loads(js.read_text())):
        raw["fixed_cost"] = stored["fixed_cost"]
    js.write_text(json.dumps(raw, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
