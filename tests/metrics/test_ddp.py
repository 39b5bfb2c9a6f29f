"""Every metric class under 2-process CPU DDP (gloo) equals the single-process result on all the data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("ddp_metrics_script.py")
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.ddp
def test_all_metrics_exact_under_two_process_ddp():
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=600, env=env,
                          cwd=REPO)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-6000:]}"
    names = proc.stdout.strip().splitlines()[-1].split()
    assert names[0] == "OK"
    assert set(names[1:]) == {"GroupFairness(6)", "GroupFairness(2)", "LinearLeakage", "GroupRecallAtK", "GroupNMI",
                              "GroupUniformityKL", "ClusterBalance", "CCEDGap"}
