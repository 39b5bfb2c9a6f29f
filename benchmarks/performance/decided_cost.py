"""CPU time per decided claim of ``faircl bench``, before and after the cuts of a bench run's fixed cost (no per-run
picture; generated data and EDA's synonyms built once, not per run) and with the sequential design (``--max-seeds``).

Three invocations of the same quick bench, each with its own empty baseline cache, one after the other:

- **before**: the code at ``--before`` (default 2b186b1, the last commit before the cuts, where ``run.json`` already
  records each run's CPU time), run from a ``git worktree`` of it; the fixed design;
- **after, fixed**: this checkout, the fixed design (the protocols' own seeds);
- **after, sequential**: this checkout with ``--max-seeds``.

A claim counts as decided unless it reads *inconclusive*. The CPU time is the sum of the runs' CPU seconds (every
thread of each forked run: ``run.json``'s ``cpu_s``), the bench's own deciding included (``bench.json``'s
``decide_cpu_s`` where recorded).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/performance/decided_cost.py            # results/decided_cost.md
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "benchmarks" / "performance" / "results" / "decided_cost.md"
BENCH = ["text", "--method", "ConFair", "--quick", "--protocol", "synthbios_minilm"]


def run(label: str, code: Path, out: Path, cache: Path, extra: list[str]) -> dict:
    """One bench invocation with the package at ``code``; its CPU time, claims and verdicts."""
    env = {**os.environ, "PYTHONPATH": str(code), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "faircl.cli", "bench", *BENCH, "--out", str(out), "--cache", str(cache), *extra]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=code)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{label}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    bench = json.loads((out / "bench.json").read_text())
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    cpu = sum(float(r.get("cpu_s", 0.0)) for r in bench["runs"]) + float(bench.get("decide_cpu_s", 0.0))
    decided = sum(r["verdict"] != "inconclusive" for r in rows)
    return {"label": label, "cpu_s": cpu, "wall_s": wall, "runs": len(bench["runs"]), "claims": len(rows),
            "decided": decided, "verdicts": [(r["claim"], r["verdict"], r.get("seeds_needed", "")) for r in rows],
            "seeds": bench.get("design", {}).get("seeds", {})}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="2b186b1")
    ap.add_argument("--max-seeds", type=int, default=12)
    ap.add_argument("--out", default=str(OUT))
    opts = ap.parse_args(argv)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["FAIRCL_CACHE"] = str(root / "cache")  # the frozen features and generated data of this script
        old = root / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(old), opts.before], cwd=REPO, check=True,
                       capture_output=True)
        try:
            found = [run("before (fixed design)", old, root / "o1", root / "c1", []),
                     run("after, fixed design", REPO, root / "o2", root / "c2", []),
                     run(f"after, --max-seeds {opts.max_seeds}", REPO, root / "o3", root / "c3",
                         ["--max-seeds", str(opts.max_seeds)])]
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=REPO, capture_output=True)
    lines = ["# CPU time per decided claim", "",
             f"`python benchmarks/performance/decided_cost.py --before {opts.before} --max-seeds {opts.max_seeds}` "
             f"({time.strftime('%Y-%m-%d')}; 1-minute load average {load:.2f} at the start, "
             f"{os.getloadavg()[0]:.2f} at the end, on {os.cpu_count()} cores): `faircl bench {' '.join(BENCH)}`, "
             "each invocation with an empty baseline cache. CPU time: the runs' own (every thread) plus the bench's "
             "deciding.", "",
             "| invocation | runs | seeds | claims | decided | CPU (min) | CPU per decided claim (min) | wall (min) |",
             "|---|---|---|---|---|---|---|---|"]
    for f in found:
        per = f"{f['cpu_s'] / 60 / f['decided']:.2f}" if f["decided"] else "— (none decided)"
        seeds = ", ".join(f"{k} {v}" for k, v in f["seeds"].items()) or "3 (the quick protocol's)"
        lines.append(f"| {f['label']} | {f['runs']} | {seeds} | {f['claims']} | {f['decided']} | "
                     f"{f['cpu_s'] / 60:.2f} | {per} | {f['wall_s'] / 60:.2f} |")
    lines += ["", "Verdicts (claim: verdict, seeds needed where inconclusive):", ""]
    for f in found:
        lines.append(f"- {f['label']}: " + "; ".join(f"{c}: {v}" + (f" ({n} seeds needed)" if n else "")
                                                   for c, v, n in f["verdicts"]))
    Path(opts.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
