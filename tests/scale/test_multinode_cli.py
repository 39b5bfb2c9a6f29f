"""A launcher-independent 2-node run of the ``faircl`` command on one machine: two processes with ``NODE_RANK`` 0 / 1,
``--trainer.num_nodes 2 --trainer.devices 1`` (gloo, CPU) complete fit and test, and the 2-process test report equals
a single-process test of the same checkpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = """seed_everything: 0
trainer:
  max_epochs: 2
  accelerator: cpu
  enable_model_summary: false
  enable_progress_bar: false
  default_root_dir: {root}
model:
  class_path: ConFair
  init_args:
    encoder: mlp
    encoder_kwargs: {{hidden_dim: 16, num_layers: 1}}
    pipeline: true
    stage1_epochs: 1
    leakage_max_rows: 200
data:
  class_path: BiasedFeatures
  init_args: {{n_train: 256, n_val: 64, n_test: 128, dim: 8, batch_size: 64}}
"""


def _faircl(*args: str) -> list[str]:
    script = Path(sys.executable).parent / "faircl"  # the console command, as a user runs it
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "faircl.cli", *args]


def _two_nodes(args: list[str], cwd: Path, port: int) -> list[subprocess.CompletedProcess]:
    port = str(port)
    procs = []
    for node in (0, 1):
        env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "WORLD_SIZE": "2",
               "NODE_RANK": str(node), "LOCAL_RANK": "0", "PL_TORCH_DISTRIBUTED_BACKEND": "gloo",
               "HF_HUB_OFFLINE": "1"}
        cmd = _faircl(*args, "--trainer.num_nodes", "2", "--trainer.devices", "1", "--trainer.strategy", "ddp")
        procs.append(subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    done = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


def _report(root: Path) -> dict:
    reports = sorted(root.rglob("report.json"), key=lambda p: p.stat().st_mtime)
    assert reports, f"no report.json under {root}"
    data = json.loads(reports[-1].read_text())
    return data.get("metrics", data)


def _single_test(tmp_path: Path, ckpt: Path, name: str) -> dict:
    root = tmp_path / name
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(CONFIG.format(root=root))
    res = subprocess.run(_faircl("test", "--config", str(cfg), "--ckpt_path", str(ckpt)), cwd=tmp_path,
                         capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert res.returncode == 0, res.stderr[-3000:]
    return _report(root)


@pytest.fixture(scope="module")
def two_node_fit(tmp_path_factory, free_port) -> tuple[Path, Path, Path]:
    """``faircl fit`` as two nodes of one process each; returns (folder, config, last checkpoint)."""
    tmp = tmp_path_factory.mktemp("multinode")
    cfg = tmp / "cfg.yaml"
    cfg.write_text(CONFIG.format(root=tmp / "run"))
    for res in _two_nodes(["fit", "--config", str(cfg)], tmp, free_port()):
        assert res.returncode == 0, res.stderr[-3000:]
    ckpts = sorted((tmp / "run").rglob("last.ckpt"))
    assert ckpts, "fit wrote no checkpoint"
    return tmp, cfg, ckpts[-1]


@pytest.mark.ddp
@pytest.mark.slow
@pytest.mark.e2e
def test_two_node_cli_fit_crosses_stages_and_checkpoint_tests_in_one_process(two_node_fit):
    import torch

    tmp, _, ckpt = two_node_fit
    state = torch.load(ckpt, map_location="cpu", weights_only=False)
    # 2 nodes × 256 rows / 64 per batch, sharded: 2 optimiser steps per epoch
    assert state["global_step"] >= 2
    report = _single_test(tmp, ckpt, "single")
    assert 0.0 <= report["accuracy"] <= 1.0


@pytest.mark.ddp
@pytest.mark.slow
@pytest.mark.e2e
def test_two_node_cli_test_report_equals_single_process(two_node_fit, free_port):
    tmp, cfg, ckpt = two_node_fit
    for res in _two_nodes(["test", "--config", str(cfg), "--ckpt_path", str(ckpt)], tmp, free_port()):
        assert res.returncode == 0, res.stderr[-3000:]
    multi = _report(tmp / "run")
    single = _single_test(tmp, ckpt, "single_ref")
    for key in ("accuracy", "tpr_gap_rms", "leakage_h"):
        assert key in single
        assert multi[key] == pytest.approx(single[key], abs=1e-6), key
