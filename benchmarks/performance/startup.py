"""What a run pays for being forked from the pre-imported worker (:mod:`faircl.cli.run_pool`) instead of running in
this process, on a protocol's full run and on a quick run; a fresh process for reference.

Each round runs ``faircl fit`` then ``faircl test --ckpt_path best`` of ``ce/biased_features`` as a sweep runs a
seed (:func:`faircl.cli.dispatch.main_sequence`), twice, in alternating order: forked from the worker and in this
process (the floor: no start-up at all). The full run has the config's epochs (15), the quick run one. The worker's
overhead is, per round, (forked − in-process) / in-process; the table gives its median and a distribution-free 95%
interval for the median (order statistics). A fresh process (the same two commands in a new Python process) runs in
fewer rounds, for reference. Targets: the overhead ≤ 10% of the full run and ≤ 20% of the quick run.

    python benchmarks/performance/startup.py --rounds 10 --fresh-rounds 2
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from math import comb
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from faircl.cli.dispatch import main_sequence
from faircl.cli.run_pool import RunPool

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "benchmarks" / "performance" / "results" / "startup.md"
TARGETS = {"full": 0.10, "quick": 0.20}
#: the fit arguments of each kind of run: the config as shipped, and cut to one epoch
RUNS = {"full": ["--config", "ce/biased_features"],
        "quick": ["--config", "ce/biased_features", "--trainer.max_epochs=1"]}
#: the run machinery before (the commit that renamed the modules last) and after
BEFORE = ("f30b7a7", ["faircl/cli/workers.py", "faircl/cli/warm.py", "faircl/cli/prefault.py", "faircl/cli/spare.py",
                      "faircl/cli/preload.py"])
AFTER = ["faircl/cli/run_pool.py"]


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
        code = f"import sys; from faircl.cli.dispatch import main_sequence; sys.exit(main_sequence({commands()!r}))"
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
        "(`faircl.cli.run_pool.RunPool`: a `forkserver` that imported torch, Lightning and faircl once) and in this "
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--fresh-rounds", type=int, default=2)
    p.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args()
    start, load0 = time.perf_counter(), os.getloadavg()
    pool = RunPool()
    protocols = {}
    with tempfile.TemporaryDirectory(prefix="faircl-startup-") as tmp:
        for kind, args in RUNS.items():
            print(f"{kind}: {' '.join(args)}, {a.rounds} rounds", flush=True)
            epochs = "1 epoch" if kind == "quick" else "15 epochs (its config)"
            protocols[kind] = {"name": f"ce/biased_features, {epochs}",
                               **measure(args, Path(tmp) / kind, pool, a.rounds, a.fresh_rounds)}
    load1 = os.getloadavg()
    loads = [x for r in protocols.values() for x in r["load_1min"]]
    import torch

    raw = {"rounds": a.rounds, "fresh_rounds": a.fresh_rounds, "seconds": time.perf_counter() - start,
           "when": time.strftime("%Y-%m-%d", time.gmtime()), "protocols": protocols,
           "lines_before": lines_of(BEFORE[1], BEFORE[0]), "lines_after": lines_of(AFTER),
           "machine": f"{os.cpu_count()} cores, {torch.get_num_threads()} torch threads, torch {torch.__version__}, "
                      f"Python {sys.version.split()[0]}. How busy: 1-minute load average {load0[0]:.2f} at the start, "
                      f"{load1[0]:.2f} at the end, {min(loads):.2f}–{max(loads):.2f} at the rounds' starts (other "
                      "work shared the machine's cores whenever it was above 1)."}
    text = render(raw)
    old = a.out.read_text() if a.out.is_file() else ""
    history = old[old.find("\n## History"):] if "\n## History" in old else ""
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(text + history)
    a.out.with_suffix(".json").write_text(json.dumps(raw, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
