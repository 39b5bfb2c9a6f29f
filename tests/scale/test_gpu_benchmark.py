"""``benchmarks/performance/gpu.py`` skips cleanly on a machine without CUDA."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "performance" / "gpu.py"


@pytest.mark.skipif(torch.cuda.is_available(), reason="the skip path only runs without CUDA")
def test_gpu_benchmark_skips_without_cuda():
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "skipped: no CUDA" in proc.stdout


def test_device_comparison_runs_every_metric_on_the_cpu():
    """The CUDA-against-CPU section compares every exported metric; run CPU against CPU, all must agree."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec.loader.exec_module(module)
        rows = module.cuda_equals_cpu(device="cpu")
    finally:
        sys.path.remove(str(SCRIPT.parent))
    from faircl import metrics

    metric_classes = {name for name in metrics.__all__ if name[0].isupper()}
    covered = {name for name in metric_classes if any(row[0].startswith(name) for row in rows)}
    assert covered == metric_classes
    assert all(row[3] and row[1] > 0 for row in rows), rows
