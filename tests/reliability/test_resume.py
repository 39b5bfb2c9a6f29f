"""Exactness under interruption: a run killed mid-epoch (SIGINT / SIGKILL) and resumed from ``last.ckpt`` ends with
the same weights and test report as an uninterrupted run (CPU, deterministic), for CE and the staged TwoStageCL."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).with_name("resume_run.py")
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(SCRIPT.parents[2])}


def _start(method: str, out: Path, mode: str) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, str(SCRIPT), method, str(out), mode], env=ENV,
                            stdout=subprocess.DEVNULL, stderr=open(out / f"{mode}.log", "w"))


def _finish(proc: subprocess.Popen, out: Path, mode: str) -> None:
    assert proc.wait(timeout=400) == 0, (out / f"{mode}.log").read_text()[-3000:]


def _compare(a: dict, b: dict) -> None:
    assert a["global_step"] == b["global_step"]
    assert a["state_dict"].keys() == b["state_dict"].keys()
    for k, v in a["state_dict"].items():
        w = b["state_dict"][k]
        if v.is_floating_point():
            assert torch.allclose(v, w, atol=1e-6, rtol=0), (k, (v - w).abs().max())
        else:
            assert torch.equal(v, w), k
    assert a["report"].keys() == b["report"].keys() and a["report"]
    for k, v in a["report"].items():
        w = b["report"][k]
        assert (math.isnan(v) and math.isnan(w)) or abs(v - w) <= 1e-6, (k, v, w)


CASES = [pytest.param("ce", signal.SIGINT, marks=pytest.mark.slow),
         pytest.param("two_stage", signal.SIGKILL, marks=pytest.mark.slow),
         pytest.param("ce", signal.SIGKILL, marks=[pytest.mark.slow, pytest.mark.long]),
         pytest.param("two_stage", signal.SIGINT, marks=[pytest.mark.slow, pytest.mark.long])]


@pytest.mark.parametrize("method,sig", CASES)
def test_killed_and_resumed_run_matches_uninterrupted(tmp_path, method, sig):
    full = _start(method, tmp_path / "full", "full")
    victim_dir = tmp_path / "victim"
    victim = _start(method, victim_dir, "victim")
    try:
        deadline = time.monotonic() + 400
        while not (victim_dir / "mid_epoch").exists():
            assert victim.poll() is None, (victim_dir / "victim.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the victim run never reached the middle of its epoch"
            time.sleep(0.2)
        assert (victim_dir / "ckpt" / "last.ckpt").is_file()  # killed after an epoch-end checkpoint, mid-epoch
        victim.send_signal(sig)
        victim.wait(timeout=120)
    finally:
        if victim.poll() is None:
            victim.kill()
    assert not (victim_dir / "final.pt").exists()
    resumed = _start(method, victim_dir, "resume")
    _finish(resumed, victim_dir, "resume")
    _finish(full, tmp_path / "full", "full")
    _compare(torch.load(tmp_path / "full" / "final.pt"), torch.load(victim_dir / "final.pt"))
