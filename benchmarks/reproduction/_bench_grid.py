"""What the benchmark front-ends through ``faircl bench`` share (``text_bench.py``, ``vision_bench.py``,
``embedding_bench.py``): their grid (``faircl/bench/grids/<suite>.yaml``), the command of one invocation, running a
list of them, and reading an invocation's ``results.csv``."""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

import faircl

#: the grids: which method runs with which arguments on which protocols of a suite (package data)
GRIDS = Path(faircl.__file__).resolve().parent / "bench" / "grids"


def load_grid(suite: str, need: tuple[str, ...] = ("methods",), folder: Path = GRIDS) -> dict[str, Any]:
    """The grid of ``suite`` (``<folder>/<suite>.yaml``); a missing file, a missing top-level key of ``need`` or a
    method without ``class`` stops the script with one line naming the file and the key."""
    path = folder / f"{suite}.yaml"
    if not path.is_file():
        raise SystemExit(f"{path}: no such grid")
    grid = yaml.safe_load(path.read_text()) or {}
    if not isinstance(grid, dict):
        raise SystemExit(f"{path}: expected a mapping of keys, got {type(grid).__name__}")
    for key in need:
        if key not in grid:
            raise SystemExit(f"{path}: missing key {key!r}")
    for label, method in (grid.get("methods") or {}).items():
        if not isinstance(method, dict) or "class" not in method:
            raise SystemExit(f"{path}: methods.{label}: expected a mapping with a 'class' key")
        method.setdefault("init_args", {})
    return grid


def stage1_epochs(method: dict[str, Any], protocols: list[Any]) -> dict[str, Any]:
    """A method's arguments on ``protocols`` (the resolved protocols of one invocation): with ``stage1_from_share``,
    ``stage1_epochs`` is the protocols' rule, ``round(stage1_share * max_epochs)``; a protocol without the rule, or
    protocols whose stage-1 budgets differ, stop the script with one line."""
    args = dict(method["init_args"])
    if not method.get("stage1_from_share"):
        return args
    budgets = {}
    for p in protocols:
        if p.stage1_share is None:
            raise SystemExit(f"{p.source}: no stage1_share, which a method with stage1_from_share needs")
        budgets[p.name] = round(float(p.stage1_share) * int(p.trainer["max_epochs"]))
    if len(set(budgets.values())) != 1:
        raise SystemExit(f"one invocation's protocols give different stage-1 budgets: {budgets}")
    args["stage1_epochs"] = next(iter(budgets.values()))
    return args


def grid_parser(doc: str, suite: str) -> argparse.ArgumentParser:
    """The options every grid script takes (``--methods``, ``--work``, ``--out`` is the script's own)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--methods", default="", help="comma-separated labels or prefixes ('' = all)")
    p.add_argument("--work", default=str(default_work(suite)))
    p.add_argument("--quick", action="store_true", help="the protocols' quick variants (3 seeds, short budgets)")
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--max-seeds", type=int, default=None, help="faircl bench --max-seeds: add seeds where a claim is "
                   "still open, up to this many per protocol")
    p.add_argument("--render", action="store_true", help="only rewrite the results file from --work")
    p.add_argument("--note", default="", help="a sentence added after the wall time (e.g. the machine's load)")
    return p


def listed(text: str, allowed: Any = None, flag: str = "") -> list[str]:
    """The comma-separated items of ``text``; with ``allowed``, an unknown one stops the script naming ``flag``."""
    items = [m.strip() for m in text.split(",") if m.strip()]
    unknown = sorted(set(items) - set(allowed)) if allowed is not None else []
    if unknown:
        raise SystemExit(f"{flag}: unknown {unknown}; choose among {list(allowed)}")
    return items


def use_shared_data(root: Path) -> None:
    """``$FAIRCL_DATA`` defaults to ``../shared/data`` beside the repository."""
    os.environ.setdefault("FAIRCL_DATA", str(root.parent / "shared" / "data"))


def slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_").lower()


def default_work(suite: str) -> Path:
    """``$FAIRCL_CACHE/bench-runs/<suite>`` (default ``~/.cache/faircl/bench-runs/<suite>``)."""
    return Path(os.environ.get("FAIRCL_CACHE", Path.home() / ".cache" / "faircl")) / "bench-runs" / suite


def shown(work: Path) -> str:
    """``work`` as the results files name it: under ``~`` when it is in the home folder (no machine's path)."""
    try:
        return "~/" + str(work.resolve().relative_to(Path.home().resolve()))
    except ValueError:
        return str(work)


def bench_command(suite: str, protocols: list[str], label: str, cls: str, args: dict[str, Any], out: Path,
                  quick: bool = False, seeds: int | None = None, max_seeds: int | None = None) -> list[str]:
    """``faircl bench <suite> --protocol … --method <cls> --name <label> --out <out> --method.init_args.k v …``."""
    faircl = shutil.which("faircl", path=str(Path(sys.executable).parent)) or "faircl"
    cmd = [faircl, "bench", suite, *sum((["--protocol", p] for p in protocols), []), "--method", cls,
           "--name", label, "--out", str(out)]
    # a string as is: the parser types it (a JSON-quoted string is no Literal value)
    for k, v in args.items():
        cmd += [f"--method.init_args.{k}", v if isinstance(v, str) else json.dumps(v)]
    if quick:
        cmd.append("--quick")
    if seeds:
        cmd += ["--seeds", str(seeds)]
    if max_seeds:
        cmd += ["--max-seeds", str(max_seeds)]
    return cmd


def run_all(commands: dict[str, list[str]]) -> dict[str, float]:
    """Run each invocation in turn (name → command); their wall times in seconds. A failing one is reported and
    the rest still run."""
    walls: dict[str, float] = {}
    for name, cmd in commands.items():
        print("$", " ".join(cmd), flush=True)
        start = time.perf_counter()
        code = subprocess.run(cmd, env={**os.environ, "HF_HUB_OFFLINE": "1"}).returncode
        walls[name] = time.perf_counter() - start
        if code:
            print(f"{name}: faircl bench exited {code}", file=sys.stderr)
    return walls


def bench_rows(folder: Path) -> list[dict[str, str]]:
    """An invocation's ``results.csv`` rows (``[]`` when it has not run)."""
    if not (folder / "results.csv").is_file():
        return []
    with open(folder / "results.csv") as fh:
        return list(csv.DictReader(fh))


def bench_wall(folder: Path, default: float = 0.0) -> float:
    """An invocation's wall time in seconds (its ``bench.json``)."""
    path = folder / "bench.json"
    return json.loads(path.read_text()).get("wall_s", default) if path.is_file() else default


def bench_cpu(folder: Path) -> float:
    """The CPU seconds of an invocation's runs, reused ones included (its ``bench.json``; 0 where not recorded)."""
    path = folder / "bench.json"
    return float(json.loads(path.read_text()).get("cpu_s", 0.0)) if path.is_file() else 0.0


def seeds_cell(row: dict[str, str]) -> str:
    """A bench row's seed count, with the look that decided it under ``--max-seeds`` (``8``, ``16 (look 2)``)."""
    if not row.get("seeds"):
        return "—"
    n = len(row["seeds"].split())
    return f"{n} (look {row['look']})" if row.get("look") and row.get("level") and int(row["look"]) > 1 else str(n)


def carried(line: str, at: int, width: int, cell: str = "—") -> str:
    """A row kept from the file as it stood; one of fewer than ``width`` cells gets ``cell`` inserted as its
    ``at``-th (a column added since)."""
    cells = line.strip().strip("|").split(" | ")
    if len(cells) >= width:
        return line
    return "| " + " | ".join([*cells[:at], cell, *cells[at:]]).strip() + " |"


def open_start(previous: list[str]) -> int:
    """Where the file's open-claims section starts (its length when it has none): the verdict rows end there."""
    return next((i for i, ln in enumerate(previous) if ln.startswith("## Open claims")), len(previous))


def carried_open(previous: list[str], carried: list[tuple[str, list[str]]]) -> list[str]:
    """The rows of the file's open-claims table (as it stood) of the invocations not run again: (method label,
    its protocols) each."""
    table = [ln for ln in previous[open_start(previous):] if ln.startswith("| ")]
    return [ln for ln in table if any(ln.startswith(f"| {label} lowers ") and ln.split(" | ")[1] in protocols
                                      for label, protocols in carried)]


def open_claims(folders: dict[str, Path], kept: list[str] = ()) -> list[str]:
    """A section on every claim still inconclusive in the invocations run this time (name → folder): the seeds it
    ran, the seeds its verdict says would decide it with 80% power (or why no number would), and what those seeds
    would cost in CPU hours at the CPU time per seed its protocol's runs took here (method and baselines). ``kept``:
    the file's rows of methods not run again (:func:`carried_open`), listed after them."""
    rows = []
    for name, folder in folders.items():
        path = folder / "bench.json"
        if not path.is_file():
            continue
        bench = json.loads(path.read_text())
        per_seed: dict[str, dict[int, float]] = {}
        for run in bench.get("runs", []):
            seeds = per_seed.setdefault(run["protocol"], {})
            seeds[run["seed"]] = seeds.get(run["seed"], 0.0) + float(run.get("cpu_s", 0.0))
        for r in bench_rows(folder):
            if r["verdict"] != "inconclusive" or r["protocol"].endswith("_permuted"):
                continue
            ran = len((r.get("seeds") or "").split())
            costs = [c for c in per_seed.get(r["protocol"], {}).values() if c > 0]
            if r.get("seeds_needed") and r.get("rows_needed"):  # on more rows than the protocol has
                rows.append(f"| {r.get('claim', name)} | {r['protocol']} | {ran} | {r['seeds_needed']} on "
                            f"{int(r['rows_needed']):,} test rows | — (more rows than the protocol's) |")
            elif r.get("seeds_needed"):
                need = int(r["seeds_needed"])
                cost = f"{max(need - ran, 0) * sum(costs) / len(costs) / 3600:.2f}" if costs else "—"
                rows.append(f"| {r.get('claim', name)} | {r['protocol']} | {ran} | {need} | {cost} |")
            else:
                why = (r.get("reason") or "no reason recorded").rsplit("; ", 2)
                said = next((w for w in why if "seeds" in w and ("would" in w or "no number" in w)), why[-1])
                rows.append(f"| {r.get('claim', name)} | {r['protocol']} | {ran} | — ({said}) | — |")
    rows += kept
    if not rows:
        return []
    return ["", "## Open claims: what would decide them", "",
            "Each claim still *inconclusive* after the runs of this regeneration, with the seeds that would decide it "
            "with 80% power (its verdict's `seeds_needed`: *holds* if the paper's effect, or the protocol's smallest "
            "effect of interest, is real, *does not hold* if there is no change) and what the seeds beyond those run "
            "would cost at the CPU time per seed (method and baselines) its protocol took here"
            + (" (the rows of methods not run again are those of the previous regeneration)." if kept else "."), "",
            "| claim | protocol | seeds run | seeds needed | CPU hours for the rest |", "|---|---|---|---|---|", *rows]


def fmt(row: dict[str, str]) -> str:
    """A bench row's Δ and its 95% interval, ×100."""
    e, lo, hi = (100 * float(row[k]) for k in ("effect", "effect_lo", "effect_hi"))
    return f"{e:+.1f} [{lo:+.1f}, {hi:+.1f}]"
