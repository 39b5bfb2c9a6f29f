"""The README's multi-process line works with Lightning's own launcher: ``faircl fit|test|predict --trainer.devices 2
--trainer.strategy ddp --trainer.accelerator cpu`` (Lightning re-runs the command for rank 1) exits 0 without an
abort at teardown, the 2-process test report equals the single-process report of the same checkpoint, and a
2-process predict writes one ``predictions.pt`` / ``.csv`` with every row once, in dataset order."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

ARGS = ["--model", "CE", "--data", "BiasedFeatures", "--data.n_train=256", "--data.n_val=64", "--data.n_test=203",
        "--data.dim=8", "--data.batch_size=32", "--model.encoder_kwargs={hidden_dim: 16}",
        "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false", "--trainer.max_epochs=2"]
DDP = ["--trainer.devices", "2", "--trainer.strategy", "ddp", "--trainer.accelerator", "cpu"]


def _faircl(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "faircl"  # the console command, as a user runs it
    cmd = [str(script), *args] if script.exists() else [sys.executable, "-m", "faircl.cli", *args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{' '.join(args[:1])} exited {res.returncode}:\n{res.stderr[-3000:]}"
    assert "terminate called" not in res.stderr and "Traceback" not in res.stderr, res.stderr[-3000:]
    if "had finished its work but not exited" in res.stderr:  # a rank stuck in teardown, stopped by rank 0: say where
        warnings.warn(f"a rank was stuck after its work ended:\n{res.stderr[-6000:]}", stacklevel=2)
    return res


def _in_process(cwd: Path, *args: str) -> None:
    """The single-process reference, run in this process (no launcher involved)."""
    from faircl.cli import main

    here = os.getcwd()
    os.chdir(cwd)
    try:
        assert main(list(args)) == 0
    finally:
        os.chdir(here)


def _newest(root: Path, name: str) -> Path:
    return max(root.rglob(name), key=lambda p: p.stat().st_mtime)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("ddp_launcher")
    _faircl(tmp, "fit", *ARGS, *DDP, "--trainer.default_root_dir=runs")
    ckpt = _newest(tmp / "runs", "last.ckpt")
    assert torch.load(ckpt, weights_only=True)["global_step"] == 2 * 4  # 256 rows / 2 ranks / 32 per batch
    return tmp, ckpt


@pytest.mark.ddp
@pytest.mark.e2e
def test_ddp_fit_and_test_with_lightnings_launcher_match_one_process(fitted):
    tmp, ckpt = fitted
    _faircl(tmp, "test", *ARGS, *DDP, "--trainer.default_root_dir=runs", "--ckpt_path", str(ckpt))
    multi = json.loads(_newest(tmp / "runs", "report.json").read_text())
    _in_process(tmp, "test", *ARGS, "--trainer.default_root_dir=single", "--ckpt_path", str(ckpt))
    single = json.loads(_newest(tmp / "single", "report.json").read_text())
    assert multi["meta"]["checkpoint"] == single["meta"]["checkpoint"] == str(ckpt)
    keys = [k for k, v in single["metrics"].items() if isinstance(v, float)]
    assert "accuracy" in keys and "tpr_gap_rms" in keys
    for k in keys:
        assert multi["metrics"][k] == pytest.approx(single["metrics"][k], abs=1e-6, nan_ok=True), k
    # the per-row predictions: every row once (203 test rows over 2 ranks: one padded), as on one process
    from faircl.eval.row_predictions import read_rows

    rows_multi = read_rows(_newest(tmp / "runs", "rows.npz"))
    rows_single = read_rows(_newest(tmp / "single", "rows.npz"))
    assert multi["meta"]["rows"]["test"]["rows"] == multi["meta"]["rows"]["test"]["split_size"] == 203
    for split, n in (("test", 203), ("val", 64)):
        assert list(rows_multi[split]["idx"]) == list(range(n))
        for f in ("y", "a", "pred", "leak_h", "leak_yhat"):
            assert (rows_multi[split][f] == rows_single[split][f]).all(), (split, f)
        assert abs(rows_multi[split]["proba"] - rows_single[split]["proba"]).max() < 1e-5
    assert multi["meta"]["fit"] == single["meta"]["fit"] and multi["meta"]["fit"]["source"] == "faircl fit"


@pytest.mark.ddp
@pytest.mark.e2e
def test_ddp_predict_writes_one_file_in_dataset_order(fitted):
    tmp, ckpt = fitted
    res = _faircl(tmp, "predict", *ARGS, *DDP, "--trainer.default_root_dir=pred", "--ckpt_path", str(ckpt))
    out = _newest(tmp / "pred", "predictions.pt").parent
    assert sorted(p.name for p in out.glob("predictions*")) == ["predictions.csv", "predictions.pt"]
    assert res.stdout.count("predictions written to") == 1
    multi = torch.load(out / "predictions.pt", weights_only=False)
    assert multi["idx"].tolist() == list(range(203))  # 203 rows on 2 ranks: the sampler's padding row is dropped
    rows = list(csv.DictReader((out / "predictions.csv").open()))
    assert [int(r["idx"]) for r in rows] == list(range(203))
    _in_process(tmp, "predict", *ARGS, "--trainer.default_root_dir=pred1", "--ckpt_path", str(ckpt))
    single = torch.load(_newest(tmp / "pred1", "predictions.pt"), weights_only=False)
    for key in ("y", "a", "prediction"):
        assert torch.equal(multi[key], single[key]), key
    assert torch.allclose(multi["probabilities"], single["probabilities"], atol=1e-6)


def _one_process_group(tmp_path: Path) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)


@pytest.mark.parametrize("fails", [False, True])
def test_the_command_closes_its_process_group(tmp_path, monkeypatch, fails):
    """Every ``faircl`` training command ends with its process group destroyed (its threads joined), also when the
    run fails: a process that exits with the group open can abort at teardown on a busy machine."""
    import torch.distributed as dist

    import faircl.runs.lightning_cli
    from faircl.cli import main

    def run(args):
        _one_process_group(tmp_path)
        if fails:
            raise ValueError("a data error after the group was made")

    monkeypatch.setattr(faircl.runs.lightning_cli, "run_cli", run)
    try:
        assert main(["fit", "--model", "CE"]) == (2 if fails else 0)
        assert not dist.is_initialized()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
