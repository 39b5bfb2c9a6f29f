"""What a run pays for the SLURM launcher (:class:`faircl.runs.slurm.SlurmExecutor`) over the local pool
(:class:`faircl.runs.executors.LocalPool`), on a one-node cluster, and the lines of ``cli/``, ``bench/`` and
``runs/`` before and after the run layer.

Each round runs the same ``K`` runs (``faircl.runs.engine:run_folder``: ``faircl fit`` then ``faircl test`` of
``ce/biased_features`` at one epoch, a bench run's shape) twice, in alternating order: one after the other, forked
from the pre-imported worker; and as one SLURM job array of ``K`` tasks run one at a time (``array_parallelism`` 1,
one CPU each), timed from submission until the last task's record is written. The overhead per run is, per round,
(array − local) / ``K``; the table gives its median with a distribution-free 95% interval (order statistics) and the
same as a share of a local run.

    python benchmarks/performance/launcher.py --rounds 5 --runs 4   # needs a cluster: .ci/slurm-up
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from startup import REPO, lines_of, median_interval  # noqa: E402

from faircl.runs.config_files import read_config, resolve_config  # noqa: E402
from faircl.runs.executors import Job, LocalPool  # noqa: E402
from faircl.runs.slurm import SlurmExecutor, SlurmSettings, available  # noqa: E402

OUT = REPO / "benchmarks" / "performance" / "results" / "launcher.md"
#: the commit before the run layer, and the packages then and now
BEFORE = "4a3d983"
PACKAGES = ("faircl/cli", "faircl/bench", "faircl/runs")


def _files(package: str, commit: str | None) -> list[str]:
    import subprocess

    if commit is None:
        return sorted(str(p.relative_to(REPO)) for p in (REPO / package).rglob("*.py"))
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit, package], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.split()
    return [p for p in listed if p.endswith(".py")]


def jobs(root: Path, k: int, tag: str) -> list[Job]:
    """``k`` run folders of ``ce/biased_features`` at one epoch, each with its ``config.yaml``."""
    config = read_config(resolve_config("ce/biased_features"))
    out = []
    for i in range(k):
        folder = root / f"{tag}_{i}"
        folder.mkdir(parents=True)
        run = {**config, "seed_everything": i, "report_plot": False,
               "trainer": {**(config.get("trainer") or {}), "max_epochs": 1, "default_root_dir": str(folder),
                           "enable_progress_bar": False, "enable_model_summary": False}}
        (folder / "config.yaml").write_text(yaml.safe_dump(run, sort_keys=False))
        out.append(Job(f"{tag} {i}", "faircl.runs.engine:run_folder", (str(folder),), folder, folder / "run.log"))
    return out


def timed_run(executor, batch: list[Job]) -> float:
    codes: list[int] = []
    start = time.perf_counter()
    executor.run(batch, lambda job, code, info: codes.append(code))
    took = time.perf_counter() - start
    bad = [job.name for job, code in zip(batch, codes) if code]
    if bad or len(codes) != len(batch):
        raise SystemExit(f"runs failed: {bad}; see their run.log")
    return took


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=4, help="runs per round on each launcher")
    p.add_argument("--write", type=Path, default=OUT)
    a = p.parse_args()
    reason = available()
    if reason is not None:
        raise SystemExit(f"needs a SLURM cluster ({reason}); start the one-node one with .ci/slurm-up")
    work = Path(tempfile.mkdtemp(prefix="faircl-launcher-"))
    local = LocalPool()
    slurm = SlurmExecutor(SlurmSettings(cpus_per_task=1, array_parallelism=1, time_min=10,
                                        log_folder=work / "slurm"))
    timed_run(local, jobs(work, 1, "warm"))  # untimed: the worker's start
    rows = []
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    for r in range(a.rounds):
        pair = {"local": local, "slurm": slurm}
        order = list(pair) if r % 2 == 0 else list(pair)[::-1]
        rows.append({name: timed_run(pair[name], jobs(work, a.runs, f"r{r}_{name}")) / a.runs for name in order})
        print(f"round {r + 1}: " + ", ".join(f"{k} {v:.1f} s/run" for k, v in rows[-1].items()), flush=True)
    over = [t["slurm"] - t["local"] for t in rows]
    share = [t["slurm"] / t["local"] - 1 for t in rows]
    med = sorted(over)[len(over) // 2]
    lo, hi = median_interval(over)
    med_s, (lo_s, hi_s) = sorted(share)[len(share) // 2], median_interval(share)
    local_med = sorted(t["local"] for t in rows)[len(rows) // 2]
    slurm_med = sorted(t["slurm"] for t in rows)[len(rows) // 2]
    lines = {pkg: (lines_of(_files(pkg, BEFORE), BEFORE), lines_of(_files(pkg, None))) for pkg in PACKAGES}
    text = "\n".join([
        "# The SLURM launcher's overhead per run",
        "",
        f"`python benchmarks/performance/launcher.py --rounds {a.rounds} --runs {a.runs}` "
        f"({time.perf_counter() - t0:.0f} s, {time.strftime('%Y-%m-%d')}), on a one-node cluster of "
        f"{os.cpu_count()} CPUs (`.ci/slurm-up`). Each round runs {a.runs} runs (`faircl fit` + `faircl test` of "
        "`ce/biased_features` at one epoch) on each launcher, in alternating order: forked from the pre-imported "
        "worker one after the other, and as one job array run one task at a time. Figures: median [distribution-free "
        f"95% interval of the median] over rounds. Load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at "
        "the end.",
        "",
        "| per run | local pool (s) | SLURM array (s) | overhead (s) | overhead (share of a local run) |",
        "|---|---|---|---|---|",
        f"| {a.runs} runs × {a.rounds} rounds | {local_med:.1f} | {slurm_med:.1f} | {med:+.1f} [{lo:+.1f}, {hi:+.1f}] "
        f"| {100 * med_s:+.0f}% [{100 * lo_s:+.0f}%, {100 * hi_s:+.0f}%] |",
        "",
        "An array task is a new Python process: it pays the imports of torch, Lightning and faircl that the local "
        "pool's forked runs do not, plus SLURM's scheduling. On a cluster the runs of an array run side by side, so "
        "the wall time of a look is that overhead plus its longest run, not the sum.",
        "",
        "## Lines of code",
        "",
        f"Before: commit {BEFORE} (the run engine in `cli/`); after: this tree.",
        "",
        "| package | before | after |",
        "|---|---|---|",
        *[f"| `{pkg}/` | {b} | {n} |" for pkg, (b, n) in lines.items()],
        f"| all three | {sum(b for b, _ in lines.values())} | {sum(n for _, n in lines.values())} |",
        "",
    ])
    a.write.write_text(text)
    (a.write.with_suffix(".json")).write_text(json.dumps({"rows": rows, "lines": lines}, indent=2))
    print(text)


if __name__ == "__main__":
    main()
