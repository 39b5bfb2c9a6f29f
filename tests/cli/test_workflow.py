"""The user workflow through the real ``faircl`` console command, in separate processes, exit codes checked:
fit → test best / last → predict → resume; user classes; configs by name; no overwriting; one-line errors."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

FAIRCL = shutil.which("faircl", path=str(Path(sys.executable).parent)) or shutil.which("faircl")
SRC = str(Path(__file__).resolve().parents[2])
SMALL = ["--data.n_train=512", "--data.n_val=128", "--data.n_test=256", "--data.batch_size=64",
         "--model.encoder_kwargs={hidden_dim: 16}", "--model.lr=0.01", "--trainer.enable_progress_bar=false",
         "--trainer.enable_model_summary=false"]

pytestmark = pytest.mark.skipif(FAIRCL is None, reason="the faircl console command is not installed")


def faircl(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    full_env.pop("FAIRCL_DEBUG", None)
    full_env.update(env or {})
    return subprocess.run([FAIRCL, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300)


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def report(run_dir: Path) -> dict:
    return json.loads((run_dir / "report.json").read_text())


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One ``faircl fit`` of CE on BiasedFeatures (4 epochs), run in its own working directory."""
    cwd = tmp_path_factory.mktemp("workflow")
    args = ["--model", "CE", "--data", "BiasedFeatures", *SMALL, "--trainer.default_root_dir=runs"]
    proc = ok(faircl("fit", *args, "--trainer.max_epochs=4", cwd=cwd))
    return cwd, args, proc


@pytest.mark.slow
def test_fit_exits_zero_keeps_best_and_last_without_warnings(trained):
    cwd, _, proc = trained
    assert "FairCLI object" not in proc.stdout
    ckpts = cwd / "runs" / "lightning_logs" / "version_0" / "checkpoints"
    assert (ckpts / "last.ckpt").is_file() and len(list(ckpts.glob("best-*.ckpt"))) == 1
    for text in ("args parameter", "not recommended", "tensorboard", "Warning", "warn", "deprecated"):
        assert text not in proc.stderr, proc.stderr[-2000:]
    logged = (cwd / "runs" / "lightning_logs" / "version_0" / "metrics.csv").read_text().splitlines()[0]
    assert "val/dto" in logged and "val/tradeoff" in logged and "val/accuracy" in logged


@pytest.mark.slow
@pytest.mark.parametrize("which", ["best", "last"])
def test_test_loads_the_trained_checkpoint_in_a_new_process(trained, which):
    cwd, args, _ = trained
    before = set((cwd / "runs" / "lightning_logs").iterdir())
    ok(faircl("test", *args, "--ckpt_path", which, cwd=cwd))
    (run_dir,) = set((cwd / "runs" / "lightning_logs").iterdir()) - before
    rep = report(run_dir)
    loaded = rep["meta"]["checkpoint"]
    assert Path(cwd / loaded).is_file() and "version_0/checkpoints" in loaded
    assert (Path(loaded).name == "last.ckpt") == (which == "last")
    assert rep["metrics"]["accuracy"] > 0.65  # the trained model (an untrained one is at ~0.5)


@pytest.mark.slow
def test_test_without_a_run_fails_saying_what_it_looked_for(tmp_path):
    proc = faircl("test", "--model", "CE", "--data", "BiasedFeatures", *SMALL, "--trainer.default_root_dir=nothing",
                  cwd=tmp_path)
    assert proc.returncode == 2
    assert "no run of CE on BiasedFeatures with checkpoints under 'nothing'" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_predict_writes_files_for_the_chosen_split(trained):
    cwd, args, _ = trained
    before = set((cwd / "runs" / "lightning_logs").iterdir())
    ok(faircl("predict", *args, "--data.predict_split=val", cwd=cwd))
    (run_dir,) = set((cwd / "runs" / "lightning_logs").iterdir()) - before
    pred = torch.load(run_dir / "predictions.pt")
    assert pred["split"] == "val" and len(pred["idx"]) == 128 and pred["probabilities"].shape == (128, 2)
    assert torch.equal(pred["idx"], torch.arange(128)) and "h" in pred
    rows = list(csv.DictReader((run_dir / "predictions.csv").open()))
    assert len(rows) == 128 and set(rows[0]) == {"idx", "y", "a", "prediction", "prob_0", "prob_1"}
    acc = sum(r["y"] == r["prediction"] for r in rows) / len(rows)
    assert acc > 0.65


@pytest.mark.slow
def test_fit_ckpt_path_last_resumes_from_the_right_epoch(trained):
    cwd, args, _ = trained
    proc = ok(faircl("fit", *args, "--trainer.max_epochs=6", "--ckpt_path", "last", cwd=cwd))
    said = [line for line in proc.stderr.splitlines() if line.startswith("faircl: resuming")]
    assert said and said[0].startswith("faircl: resuming from runs/lightning_logs/version_0/checkpoints/last.ckpt "
                                       "(saved in epoch 3, counted from 0); this run writes to runs/lightning_logs/version_"), said
    newest = max((cwd / "runs").rglob("last.ckpt"), key=lambda p: p.stat().st_mtime)
    assert "version_0" not in str(newest)
    assert torch.load(newest, weights_only=False)["epoch"] == 5
    epochs = {row["epoch"] for row in csv.DictReader((newest.parents[1] / "metrics.csv").open())}
    assert "0" not in epochs and "4" in epochs


@pytest.mark.slow
def test_user_classes_by_import_path_and_class_path(tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mymodule.py").write_text(textwrap.dedent("""
        import os
        from pathlib import Path
        from faircl.data import BiasedFeatures
        from faircl.methods import CE

        class MyMethod(CE):
            def on_fit_start(self):
                super().on_fit_start()
                Path(os.environ["MARK"]).write_text(type(self).__name__ + " " + type(self.trainer.datamodule).__name__)

        class MyData(BiasedFeatures):
            pass
    """))
    (tmp_path / "cfg.yaml").write_text("data:\n  class_path: mypkg.mymodule.MyData\n  init_args:\n    n_train: 64\n")
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "MARK": str(tmp_path / "m")}
    ok(faircl("fit", "--config", "cfg.yaml", "--model", "mypkg.mymodule.MyMethod", "--trainer.fast_dev_run=true",
              "--trainer.enable_progress_bar=false", cwd=tmp_path, env=env))
    assert (tmp_path / "m").read_text() == "MyMethod MyData"
    proc = faircl("fit", "--model", "mypkg.mymodule.Nope", "--data", "BiasedFeatures", cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "cannot import method 'mypkg.mymodule.Nope'" in proc.stderr


@pytest.mark.slow
def test_config_by_name_from_another_directory_and_no_overwrite(tmp_path):
    args = ["fit", "--config", "ce/biased_features", "--trainer.max_epochs=1", "--trainer.logger=false",
            "--trainer.default_root_dir=out", "--data.init_args.n_train=128", "--data.init_args.n_val=64",
            "--data.init_args.n_test=64", "--trainer.enable_progress_bar=false"]
    ok(faircl(*args, cwd=tmp_path))
    config = (tmp_path / "out" / "config.yaml").read_text()
    assert "class_path: faircl.methods.CE" in config
    proc = faircl(*args, cwd=tmp_path)
    assert proc.returncode == 2 and "already holds config.yaml, checkpoints" in proc.stderr
    assert "--overwrite" in proc.stderr and (tmp_path / "out" / "config.yaml").read_text() == config
    ok(faircl(*args, "--overwrite", cwd=tmp_path))


def test_errors_are_one_line_and_debug_shows_the_traceback(tmp_path):
    proc = faircl("fit", "--model", "NoSuchMethod", "--data", "BiasedFeatures", cwd=tmp_path)
    assert proc.returncode == 2
    assert "unknown method 'NoSuchMethod'" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 3
    proc = faircl("fit", "--config", "no/such_config", cwd=tmp_path, env={"FAIRCL_DEBUG": "1"})
    assert proc.returncode == 2 and "Traceback" in proc.stderr and "config 'no/such_config' not found" in proc.stderr
