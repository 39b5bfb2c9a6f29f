"""A two-task DDP run under ``srun``: ``srun -N1 -n2 --ntasks-per-node=2 faircl fit|test ... --trainer.devices 2
--trainer.strategy ddp`` (Lightning's SLURMEnvironment takes the two tasks as the two ranks: gloo on CPU) trains on
half the rows per rank, and its test report of ``--ckpt_path best`` equals a one-process ``faircl test`` of the same
checkpoint. Lightning refuses ``-n2`` alone: it reads the tasks per node from SLURM_NTASKS_PER_NODE, which only
``--ntasks-per-node`` sets. Skipped, with the reason, where no SLURM cluster answers (``.ci/slurm-up``)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

# 256 training rows in batches of 128 (the config's): 1 step per epoch on each of 2 ranks, 2 on one process
ARGS = ["--config", "ce/biased_features", "--data.n_train=256", "--data.n_val=64", "--data.n_test=203",
        "--trainer.enable_progress_bar=false", "--trainer.accelerator", "cpu"]
DDP = ["--trainer.devices", "2", "--trainer.strategy", "ddp", "--trainer.num_nodes", "1"]
SRUN = ["srun", "-N1", "-n2", "--ntasks-per-node=2", "--cpus-per-task=1", "--time=10"]
FAIRCL = str(Path(sys.executable).parent / "faircl")  # the console command, as a user runs it


def _port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _run(cwd: Path, *cmd: str, srun: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}  # a one-process run is no SLURM job
    env.update(HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=_port())
    res = subprocess.run([*SRUN, *cmd] if srun else list(cmd), cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, f"{' '.join(cmd[:2])} exited {res.returncode}:\n{res.stderr[-3000:]}"
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    return res


def _newest(root: Path, name: str) -> Path:
    return max(root.rglob(name), key=lambda p: p.stat().st_mtime)


@pytest.mark.ddp
@pytest.mark.e2e
def test_srun_ddp_fit_and_test_match_one_process(slurm_cluster, tmp_path):
    fit = _run(tmp_path, FAIRCL, "fit", *ARGS, *DDP, "--trainer.max_epochs", "1", srun=True)
    assert "MEMBER: 2/2" in fit.stderr and "GLOBAL_RANK: 1" in fit.stderr  # one process group of the two tasks
    best = _newest(tmp_path / "runs", "best-*.ckpt")
    assert torch.load(best, weights_only=True)["global_step"] == 1  # each rank saw half of the 256 rows

    _run(tmp_path, FAIRCL, "test", *ARGS, *DDP, "--ckpt_path", "best", srun=True)
    multi = json.loads(_newest(tmp_path / "runs", "report.json").read_text())
    assert (tmp_path / multi["meta"]["checkpoint"]).resolve() == best.resolve()  # the fit's best, found by name
    _run(tmp_path, FAIRCL, "test", *ARGS, "--trainer.devices", "1", "--trainer.default_root_dir", "single",
         "--ckpt_path", str(best), srun=False)
    single = json.loads(_newest(tmp_path / "single", "report.json").read_text())
    keys = [k for k, v in single["metrics"].items() if isinstance(v, float)]
    assert {"accuracy", "tpr_gap_rms", "dp_gap"} <= set(keys), keys
    for k in keys:
        assert multi["metrics"][k] == pytest.approx(single["metrics"][k], abs=1e-6, nan_ok=True), k
    assert multi["meta"]["rows"]["test"]["rows"] == 203  # every test row once over the two ranks
