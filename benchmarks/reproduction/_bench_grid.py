"""What the benchmark grids through ``faircl bench`` share (``text_bench.py``, ``vision_bench.py``): the command of
one invocation, running a list of them, reading an invocation's ``results.csv``, and reading the verdicts of the
script-based results file each grid replaces (its first family: each paper's own selection)."""

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


def grid_parser(doc: str, suite: str) -> argparse.ArgumentParser:
    """The options every grid script takes (``--methods``, ``--work``, ``--out`` is the script's own)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--methods", default="", help="comma-separated labels or prefixes ('' = all)")
    p.add_argument("--work", default=str(default_work(suite)))
    p.add_argument("--quick", action="store_true", help="the protocols' quick variants (3 seeds, short budgets)")
    p.add_argument("--seeds", type=int, default=None)
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
                  quick: bool = False, seeds: int | None = None) -> list[str]:
    """``faircl bench <suite> --protocol … --method <cls> --name <label> --out <out> --method.init_args.k v …``."""
    faircl = shutil.which("faircl", path=str(Path(sys.executable).parent)) or "faircl"
    cmd = [faircl, "bench", suite, *sum((["--protocol", p] for p in protocols), []), "--method", cls,
           "--name", label, "--out", str(out)]
    for k, v in args.items():
        cmd += [f"--method.init_args.{k}", json.dumps(v)]
    if quick:
        cmd.append("--quick")
    if seeds:
        cmd += ["--seeds", str(seeds)]
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


def fmt(row: dict[str, str]) -> str:
    """A bench row's Δ and its 95% interval, ×100."""
    e, lo, hi = (100 * float(row[k]) for k in ("effect", "effect_lo", "effect_hi"))
    return f"{e:+.1f} [{lo:+.1f}, {hi:+.1f}]"


def script_rows(path: Path, family: int = 1) -> list[dict[str, str]]:
    """The summary rows of a script-based results file's first family (``family=2``: its second, the table under
    "The same claims at the epoch of lowest validation DTO"): ``{claim, protocol, effect, verdict}``."""
    parts = path.read_text().split("## The same claims at the epoch of lowest validation DTO")
    if family == 1:
        text = parts[0]
    else:
        text = parts[1].split("\n## ")[0] if len(parts) > 1 else ""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]  # not at an escaped \|
        if len(cells) < 10 or cells[0] in ("claim", "---"):
            continue
        verdict = re.match(r"\*\*(.+?)\*\*", cells[9])
        rows.append({"claim": cells[0], "protocol": cells[1], "effect": cells[3],
                     "verdict": verdict.group(1) if verdict else cells[9]})
    return rows
