"""``faircl bench --launcher slurm`` on a real cluster (CI starts a one-node one: ``.ci/slurm-up``): each look's runs
are one job array, the verdicts are exactly the local launcher's on the same seeds, every run records its job, and a
job cancelled mid-run (``scancel``) is reported with its log and run again by the same command, nothing lost or
duplicated. Skipped, with the reason, where no cluster answers."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from faircl.runs.slurm import available

FAIRCL = shutil.which("faircl", path=str(Path(sys.executable).parent)) or shutil.which("faircl")
NO_CLUSTER = available()

PROTOCOL = """\
name: tiny
version: 1
title: BiasedFeatures, tiny
input_kind: features
data:
  class_path: BiasedFeatures
  init_args: {n_train: 300, n_val: 150, n_test: 300, dim: 8, bias: 0.9, class_sep: 1.0, group_sep: 2.0,
              batch_size: 64, seed: 0}
model: {encoder: mlp, encoder_kwargs: {hidden_dim: 8}, lr: 0.01}
trainer: {max_epochs: 2}
seeds: 2
baselines:
  CE: {class_path: CE}
claims:
  - {gap: tpr_gap_rms, baseline: CE}
"""
PLANTED = '''\
from faircl.methods import CE


class Renamed(CE):
    """CE under another name."""
'''
#: columns of results.csv that are the verdict (not the time it took)
SAME = ("protocol", "claim", "verdict", "direction", "size", "utility", "effect", "ci_low", "ci_high", "p_adj",
        "seeds")

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(NO_CLUSTER is not None, reason=str(NO_CLUSTER)),
              pytest.mark.skipif(FAIRCL is None, reason="the faircl console command is not installed")]


def _env() -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("FAIRCL_DEBUG", None)
    env.pop("PYTHONPATH", None)
    return env


def _command(out: str, cache: str, launcher: str) -> list[str]:
    return [FAIRCL, "bench", "protocols", "--method", "planted.Renamed", "--out", out, "--cache", cache,
            "--permutations", "200", "--bootstrap", "400", "--launcher", launcher, "--slurm.cpus_per_task", "1",
            "--slurm.time_min", "10"]


def _rows(out: Path) -> list[dict[str, str]]:
    with open(out / "results.csv") as fh:
        return [{k: r[k] for k in SAME if k in r} for r in csv.DictReader(fh)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bench_slurm")
    (root / "protocols").mkdir()
    (root / "protocols" / "tiny.yaml").write_text(PROTOCOL)
    (root / "planted.py").write_text(textwrap.dedent(PLANTED))
    done = subprocess.run(_command("local", "cache_local", "local"), cwd=root, env=_env(), capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return root


def test_the_cluster_gives_the_local_verdicts_and_records_its_jobs(folder):
    done = subprocess.run(_command("slurm", "cache_slurm", "slurm"), cwd=folder, env=_env(), capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert _rows(folder / "slurm") == _rows(folder / "local")
    runs = json.loads((folder / "slurm" / "bench.json").read_text())["runs"]
    assert len(runs) == 4 and all(r["launcher"] == "slurm" and r["job_id"] for r in runs), runs
    arrays = {r["job_id"].split("_")[0] for r in runs}
    assert len(arrays) == 1, arrays  # the look's four runs: one job array
    assert all(Path(r["log"]).is_file() for r in runs)
    local = json.loads((folder / "local" / "bench.json").read_text())["runs"]
    assert {r["launcher"] for r in local} == {"local"} and not any(r["job_id"] for r in local)
    print("slurm bench jobs:", sorted(r["job_id"] for r in runs))


def _running_tasks(log_folder: Path) -> list[str]:
    """The running tasks of the arrays whose submitit files are in ``log_folder`` (this bench's, not another's)."""
    arrays = {p.name.split("_")[0] for p in log_folder.glob("*_*")} if log_folder.is_dir() else set()
    res = subprocess.run(["squeue", "-h", "-r", "-o", "%i %T"], capture_output=True, text=True)
    tasks = [line.split()[:2] for line in res.stdout.splitlines() if line.strip()]
    return [job for job, state in tasks if state == "RUNNING" and job.split("_")[0] in arrays]


def test_a_job_cancelled_mid_run_is_reported_and_run_again_with_nothing_lost(folder):
    proc = subprocess.Popen(_command("cancelled", "cache_cancelled", "slurm"), cwd=folder, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = None
    deadline = time.monotonic() + 300
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        running = _running_tasks(folder / "cancelled" / "slurm")
        victim = running[0] if running else None
        time.sleep(0.5)
    assert victim is not None, "no task of the bench's array was seen running"
    subprocess.run(["scancel", victim], check=True)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 1, out[-2000:] + err[-3000:]  # a failed run: the bench says so and exits 1
    assert "FAILED" in err and "_log.out" in err, err[-3000:]  # the failure names the SLURM log
    again = subprocess.run(_command("cancelled", "cache_cancelled", "slurm"), cwd=folder, env=_env(),
                           capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-3000:]
    assert "runs already done" in again.stderr  # only the cancelled run was submitted again
    assert _rows(folder / "cancelled") == _rows(folder / "local")
    records = sorted(p for p in (folder / "cancelled").rglob("run.json")) + sorted(
        p for p in (folder / "cache_cancelled").rglob("run.json"))
    assert len(records) == 4, records  # two seeds of the method and of CE, each once
