"""``benchmarks/gpu.py`` skips cleanly on a machine without CUDA."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu.py"


@pytest.mark.skipif(torch.cuda.is_available(), reason="the skip path only runs without CUDA")
def test_gpu_benchmark_skips_without_cuda():
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "skipped: no CUDA" in proc.stdout
