"""``faircl test`` keeps the rows, ``faircl compare`` pairs runs by their fits and decides with
``faircl.eval.verdicts``: through the console entry point (``faircl.cli.main``, and the ``faircl`` command for the
comparisons), on embedded data."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from faircl.cli import main
from faircl.eval.row_predictions import read_rows

FAIRCL = shutil.which("faircl", path=str(Path(sys.executable).parent)) or shutil.which("faircl")
DATA = ["--data", "BiasedFeatures", "--data.n_train=600", "--data.n_val=400", "--data.n_test=800",
        "--data.batch_size=100", "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
        "--trainer.accelerator=cpu", "--trainer.devices=1"]
METHODS = {"CE": ["--model", "CE", "--model.encoder_kwargs={hidden_dim: 16}", "--model.lr=0.01"],
           "ConFair": ["--model", "ConFair", "--model.encoder_kwargs={hidden_dim: 16}", "--model.lr=0.01"]}


def faircl(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("FAIRCL_DEBUG", None)
    return subprocess.run([FAIRCL, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def fit_and_test(root: str, method: str, seed: int, bias: float, epochs: int = 3) -> None:
    """``faircl fit`` with a seed, then ``faircl test`` (which is given no seed) of its best checkpoint."""
    args = [*METHODS[method], *DATA, f"--data.bias={bias}", f"--trainer.default_root_dir={root}"]
    assert main(["fit", *args, f"--seed_everything={seed}", f"--trainer.max_epochs={epochs}"]) == 0
    assert main(["test", *args]) == 0


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """CE and ConFair over 3 seeds each, on data without (bias 0.5) and with (bias 0.8) a label–attribute link."""
    cwd = tmp_path_factory.mktemp("compare_rows")
    old = os.getcwd()
    os.chdir(cwd)
    try:
        for bias in (0.5, 0.8):
            for method in METHODS:
                for seed in (1, 2, 3):
                    fit_and_test(f"b{bias}/{method}/s{seed}", method, seed, bias)
    finally:
        os.chdir(old)
    return cwd


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.skipif(FAIRCL is None, reason="the faircl console command is not installed")
def test_no_association_is_untestable_and_real_bias_is_not(sweeps):
    verdicts = {}
    for bias in (0.5, 0.8):
        proc = faircl("compare", f"b{bias}", "--out", f"cmp{bias}", "--baseline", f"b{bias}/CE", cwd=sweeps)
        assert proc.returncode == 0, proc.stderr[-2000:]
        payload = json.loads((sweeps / f"cmp{bias}" / "compare.json").read_text())
        verdicts[bias] = payload["baseline"]["verdicts"]
        assert [v["claim"] for v in verdicts[bias]] == ["ConFair lowers tpr_gap_rms vs CE"]
        assert all(v["from_rows"] for v in verdicts[bias])
        assert list(payload["baseline"]["seeds"].values()) == [[1, 2, 3]]
        # the rows behind it: both splits, every row once
        rows = read_rows(next((sweeps / f"b{bias}" / "CE" / "s1").rglob("rows.npz")))
        assert len(rows["test"]["idx"]) == 800 and len(rows["val"]["idx"]) == 400
        assert np.array_equal(rows["test"]["idx"], np.arange(800))
    assert {v["verdict"] for v in verdicts[0.5]} == {"untestable"}, verdicts[0.5]
    assert all(v["reason"].startswith("no bias beyond chance") for v in verdicts[0.5])
    assert all(v["verdict"] != "untestable" for v in verdicts[0.8]), verdicts[0.8]
    assert all(all(b["observed"] > b["null_q95"] for b in v["bias"]) for v in verdicts[0.8])
    assert any("validation" in b["split"] for b in verdicts[0.8][0]["bias"])  # tested on the validation rows too


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.skipif(FAIRCL is None, reason="the faircl console command is not installed")
def test_runs_are_paired_by_their_fit_seeds(sweeps):
    """The test command is given no seed (its config says seed 0 ... or nothing): the fits' seeds 1, 2, 3 pair."""
    proc = faircl("compare", "b0.8/CE/s1", "b0.8/CE/s2", "--out", "cmp_seeds", cwd=sweeps)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "repeat a setting and seed" not in proc.stdout
    payload = json.loads((sweeps / "cmp_seeds" / "compare.json").read_text())
    assert sorted(r["seed"] for r in payload["runs"]) == [1, 2]
    assert len(payload["settings"]) == 1
    # the baseline header tells the epochs the fits trained, not the config's default
    proc = faircl("compare", "b0.8", "--out", "cmp_hdr", "--baseline", "b0.8/CE", cwd=sweeps)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = (sweeps / "cmp_hdr" / "baseline.md").read_text()
    assert "max_epochs of its fits: 3;" in text and "seeds 1, 2, 3" in text


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.skipif(FAIRCL is None, reason="the faircl console command is not installed")
def test_mixed_data_sets_are_refused(sweeps):
    proc = faircl("compare", "b0.5/ConFair", "b0.8/CE", "--out", "cmp_mixed", "--baseline", "b0.8/CE", cwd=sweeps)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert any("2 data sets" in line and "bias=0.5" in line and "bias=0.8" in line for line in lines), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (sweeps / "cmp_mixed" / "compare.json").exists()


@pytest.mark.slow
def test_test_command_records_the_fit(sweeps):
    run = next((sweeps / "b0.8" / "ConFair" / "s2").rglob("report.json"))
    meta = json.loads(run.read_text())["meta"]
    assert meta["fit"]["seed"] == 2 and meta["fit"]["source"] == "faircl fit"
    assert meta["fit"]["config"]["model"] == "ConFair" and meta["fit"]["config"]["data.bias"] == 0.8
    assert meta["fit"]["config"]["trainer.max_epochs"] == 3
    assert meta["rows"]["test"]["rows"] == meta["rows"]["test"]["split_size"] == 800
    rows = read_rows(run.parent / "rows.npz")
    report = json.loads(run.read_text())["metrics"]
    test = rows["test"]
    assert (test["pred"] == test["y"]).mean() == pytest.approx(report["accuracy"], abs=1e-9)
    assert (test["leak_h"] == test["a"]).mean() == pytest.approx(report["leakage_h"], abs=1e-9)
    assert np.allclose(test["proba"].sum(1), 1, atol=1e-5)
    assert np.array_equal(test["proba"].argmax(1), test["pred"])
