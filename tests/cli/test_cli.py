"""FairCLI in-process: every shipped config runs fit + test; class-name selection; reports; clear errors;
checkpoint selection by a fairness-aware metric; optimiser injection keeps the parameter groups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from faircl.cli import UserError, main, resolve_config, run_cli, shipped_configs

REPO = Path(__file__).resolve().parents[2]
CONFIGS = shipped_configs()
TINY = ["--data.n_train=256", "--data.n_val=64", "--data.n_test=128", "--model.encoder_kwargs={hidden_dim: 8}",
        "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]


def _data_folder(config: str | Path) -> str | None:
    """The public data folder a shipped config reads (``""`` for the corpora of ``CounterfactualTuples``), or None
    for embedded or synthetic data."""
    cfg = yaml.safe_load(Path(resolve_config(str(config))).read_text()) or {}
    cls = ((cfg.get("data") or {}).get("class_path") or "").rsplit(".", 1)[-1]
    import faircl.data

    folder = getattr(faircl.data.available_datamodules().get(cls), "data_folder", None)
    return "" if folder is None and cls == "CounterfactualTuples" else folder


def _needs_missing_data(config: Path) -> str | None:
    """The data folder a config reads, when it is not available here (the test then skips)."""
    folder = _data_folder(config)
    if folder is None:
        return None
    import os

    root = Path(os.environ.get("FAIRCL_DATA", REPO.parent / "shared" / "data"))
    return None if (root / folder).exists() else str(root / folder)


@pytest.mark.slow
@pytest.mark.parametrize("config", [pytest.param(c, marks=pytest.mark.e2e) if _data_folder(c) is not None else c
                                    for c in CONFIGS])
def test_every_shipped_config_fits_and_tests(config, tmp_path, monkeypatch):
    missing = _needs_missing_data(Path(resolve_config(config)))
    if missing:
        pytest.skip(f"data folder {missing} is not available here")
    monkeypatch.setenv("FAIRCL_DATA", str(REPO.parent / "shared" / "data"))
    monkeypatch.chdir(tmp_path)  # configs resolve by name and data by $FAIRCL_DATA from any directory
    # tiny work: the leakage probes fit on 256 training rows (on one-step representations a linear SVM over all rows
    # iterates to its limit: ~15 s on UTKFace)
    common = ["--config", config, "--trainer.fast_dev_run=true", f"--trainer.default_root_dir={tmp_path}",
              "--trainer.enable_progress_bar=false", "--model.init_args.leakage_max_rows=256"]
    model = ((yaml.safe_load(Path(resolve_config(config)).read_text()) or {}).get("model") or {})
    if str(model.get("class_path", "")).rsplit(".", 1)[-1] == "CCD":
        common.append("--model.init_args.rho_max_rows=64")  # ρ from 64 tuples, not 1,024 (MiniLM: ~30 s saved)
    fit = run_cli(["fit", *common])
    assert fit.trainer.state.finished and fit.trainer.global_step >= 1  # it trained (one batch: fast_dev_run)
    assert not list(tmp_path.rglob("report.json"))
    run_cli(["test", *common])
    reports = list(tmp_path.rglob("report.json"))  # the test wrote its fairness report
    assert len(reports) == 1, reports
    metrics = json.loads(reports[0].read_text())["metrics"]
    assert any(isinstance(v, float) and v == v for v in metrics.values()), metrics  # a number (CCD: no accuracy)


def test_class_name_selection_and_report(in_tmp):
    args = ["--model", "CE", "--data", "BiasedFeatures", *TINY, "--trainer.max_epochs=1",
            f"--trainer.default_root_dir={in_tmp}"]
    cli = run_cli(["fit", *args])
    assert cli.model.num_classes == 2 and cli.model.hparams.input_dim == 32  # linked from the datamodule
    ckpt = next(in_tmp.rglob("last.ckpt"))
    run_cli(["test", *args, "--ckpt_path", str(ckpt)])
    report = json.loads(next(in_tmp.rglob("report.json")).read_text())
    assert report["meta"]["checkpoint"] == str(ckpt)
    for key in ("accuracy", "f1", "tpr_gap_rms", "eo_gap", "leakage_h", "group_accuracy/group0"):
        assert key in report["metrics"], key
    assert "| accuracy" in next(in_tmp.rglob("report.md")).read_text()
    run_cli(["fit", *args])  # a second run gets its own version folder
    assert len(list(in_tmp.rglob("config.yaml"))) == 3


def test_main_returns_exit_codes(in_tmp, capsys):
    assert main(["fit", "--model", "CE", "--data", "BiasedFeatures", *TINY, "--trainer.fast_dev_run=true"]) == 0
    assert main(["fit", "--model", "NoSuchMethod", "--data", "BiasedFeatures"]) == 2
    err = capsys.readouterr().err
    assert "unknown method 'NoSuchMethod'" in err and "Traceback" not in err


def test_untrained_weights_only_on_request(in_tmp):
    args = ["--model", "CE", "--data", "BiasedFeatures", *TINY, f"--trainer.default_root_dir={in_tmp}"]
    with pytest.raises(UserError, match=r"--ckpt_path best: no run of CE on BiasedFeatures with checkpoints under"):
        run_cli(["test", *args])
    with pytest.raises(UserError, match=r"--ckpt_path last: no run of CE on BiasedFeatures"):
        run_cli(["test", *args, "--ckpt_path", "last"])
    run_cli(["test", *args, "--ckpt_path", "none"])
    report = json.loads(next(in_tmp.rglob("report.json")).read_text())
    assert report["meta"]["checkpoint"] == "none (untrained weights)"


def test_best_checkpoint_follows_a_fairness_aware_monitor(in_tmp):
    args = ["--model", "CE", "--data", "BiasedFeatures", *TINY, "--trainer.max_epochs=3", "--model.monitor=val/dto",
            f"--trainer.default_root_dir={in_tmp}"]
    cli = run_cli(["fit", *args])
    ckpt_cb = cli.trainer.checkpoint_callback
    assert (ckpt_cb.monitor, ckpt_cb.mode) == ("val/dto", "min")
    assert "val/dto" in cli.trainer.callback_metrics and "val/tradeoff" in cli.trainer.callback_metrics
    best = torch.load(ckpt_cb.best_model_path, weights_only=False)
    scores = [v for k, v in best["callbacks"].items() if "ModelCheckpoint" in k or "FairCheckpoint" in k]
    assert scores and float(scores[0]["best_model_score"]) == pytest.approx(float(ckpt_cb.best_model_score))
    last = torch.load(Path(ckpt_cb.best_model_path).parent / "last.ckpt", weights_only=False)
    assert last["epoch"] == 2  # last.ckpt follows every epoch, improved or not


def test_selection_scores_match_dto():
    from faircl.methods.selection import monitor_mode, selection_scores
    from faircl.metrics.tradeoff import dto

    s = selection_scores({"accuracy": 0.8, "tpr_gap_rms": 0.1})
    assert s["dto"] == pytest.approx(float(dto([0.8], [0.9], 1.0, 1.0)[0])) == pytest.approx((0.04 + 0.01) ** 0.5)
    assert s["tradeoff"] == pytest.approx((1.6 + 0.9) / 3)
    assert selection_scores({"accuracy": 0.8, "tpr_gap_rms": float("nan")}) == {}
    assert "balanced_dto" not in s
    # imbalanced classes: a constant predictor (accuracy 0.9, GAP 0, balanced accuracy 0.5) is far from the optimum
    const = selection_scores({"accuracy": 0.9, "balanced_accuracy": 0.5, "tpr_gap_rms": 0.0})
    assert const["balanced_dto"] == pytest.approx(0.5) and const["dto"] == pytest.approx(0.1)
    assert monitor_mode("val/balanced_dto") == "min"
    assert monitor_mode("val/dto") == "min" and monitor_mode("val/tradeoff") == "max"
    assert monitor_mode("val/loss", default=("val/loss", "min")) == "min"
    with pytest.raises(ValueError, match="monitor_mode"):
        monitor_mode("val/dto", "lowest")


def test_injected_optimizer_keeps_the_parameter_groups(in_tmp):
    args = ["--model", "Adversarial", "--data", "BiasedFeatures", *TINY, "--trainer.fast_dev_run=true",
            "--model.lr=0.003", "--model.adv_lr=0.0005", "--optimizer", "AdamW", "--optimizer.weight_decay=0.05"]
    cli = run_cli(["fit", *args])
    opt = cli.trainer.optimizers[0]
    assert isinstance(opt, torch.optim.AdamW)
    groups = cli.model.param_groups()
    assert len(opt.param_groups) == len(groups) >= 2
    assert opt.param_groups[0]["lr"] == pytest.approx(0.003)
    assert [g["lr"] for g in opt.param_groups[1:]] == [0.0005]
    assert all(g["weight_decay"] == 0.05 for g in opt.param_groups)
    with pytest.raises(UserError, match="--model.lr, not --optimizer.lr"):
        run_cli(["fit", *args, "--optimizer.lr=0.1"])


def test_shared_bases_are_not_selectable():
    import faircl.data

    names = faircl.data.available_datamodules()
    assert {"TextCSV", "ImageCSV", "BiasInBios", "UTKFace"} <= names.keys()
    assert not {"TextDataModule", "ImageFairDataModule", "FairDataModule"} & names.keys()
    with pytest.raises(UserError, match=r"unknown datamodule 'TextDataModule'"):
        run_cli(["fit", "--model", "CE", "--data", "TextDataModule"])


def test_unknown_names_list_the_choices(in_tmp):
    with pytest.raises(UserError, match=r"unknown method 'NoSuchMethod'.*available: .*CE"):
        run_cli(["fit", "--model", "NoSuchMethod", "--data", "BiasedFeatures"])
    with pytest.raises(UserError, match=r"unknown datamodule 'Nope'.*BiasedFeatures.*SynthBios"):
        run_cli(["fit", "--model", "CE", "--data", "Nope"])
    with pytest.raises(UserError, match=r"not a subclass of faircl.methods.base.FairModule"):
        run_cli(["fit", "--model", "torch.nn.Linear", "--data", "BiasedFeatures"])
    cfg = in_tmp / "bad.yaml"
    cfg.write_text("model:\n  class_path: ConFare\ndata:\n  class_path: BiasedFeatures\n")
    with pytest.raises(UserError, match=r"unknown method 'ConFare'"):
        run_cli(["fit", "--config", str(cfg)])


def test_print_config(capsys):
    assert main(["fit", "--model", "CE", "--data", "SynthBios", "--print_config"]) == 0
    out = capsys.readouterr().out
    assert "class_path: faircl.methods.CE" in out and "class_path: faircl.data.SynthBios" in out


def test_configs_resolve_by_name_and_ship_with_the_package():
    path = Path(resolve_config("confair/biased_features"))
    assert path.is_file() and path.parent.parent.name == "configs" and path.parents[2].name == "faircl"
    assert Path(resolve_config("configs/confair/biased_features.yaml")).resolve() == path.resolve()
    assert "confair/biased_features" in CONFIGS and len(CONFIGS) >= 40
    assert (REPO / "configs").resolve() == (REPO / "faircl" / "configs").resolve()
    with pytest.raises(UserError, match="config 'confair/nope' not found"):
        resolve_config("confair/nope")
    for name in CONFIGS:
        assert "shared/data" not in Path(resolve_config(name)).read_text(), name


def test_data_folders_default_to_faircl_data(monkeypatch, tmp_path):
    from faircl.data import BiasInBios, HateSpeech, UTKFace
    from faircl.data.io import DataError

    monkeypatch.setenv("FAIRCL_DATA", str(tmp_path))
    assert HateSpeech().data_dir == tmp_path / "multilingual_hate_speech_demographics"
    assert BiasInBios().data_dir == tmp_path / "bias_in_bios_samples"
    assert UTKFace().data_dir == tmp_path / "utkface_subset"
    monkeypatch.delenv("FAIRCL_DATA")
    with pytest.raises(ValueError, match="set FAIRCL_DATA to the folder holding multilingual_hate_speech"):
        HateSpeech().setup()
    with pytest.raises(DataError, match="--data.data_dir .* or set FAIRCL_DATA .* utkface_subset"):
        UTKFace().setup()


def test_version():
    import faircl

    assert faircl.__version__ == "0.2.0"


def test_config_naming_a_missing_column_fails_clearly(in_tmp):
    from faircl.data import DataError

    rows = ["text,label,gender"] + [f"sentence number {i},{i % 2},{'MF'[i % 3 == 0]}" for i in range(40)]
    (in_tmp / "data.csv").write_text("\n".join(rows) + "\n")
    cfg = in_tmp / "cfg.yaml"
    cfg.write_text(
        "model:\n  class_path: CE\n  init_args: {encoder: bow}\n"
        "data:\n  class_path: TextCSV\n  init_args:\n"
        f"    data_dir: {in_tmp}\n    files: data.csv\n    text_column: text\n    label_column: label\n"
        "    attribute_columns: race\n"
    )
    with pytest.raises(DataError, match=r"data.csv.*column 'race'.*column missing"):
        run_cli(["fit", "--config", str(cfg), "--trainer.fast_dev_run=true"])


def test_export_writes_a_hugging_face_folder(in_tmp, capsys):
    from transformers import AutoModel

    from faircl.testing import make_tiny_bert

    bert = make_tiny_bert(in_tmp / "bert")
    args = ["--model", "CE", "--data", "SynthBios", "--data.representation=text", "--model.encoder=hf", f"--model.encoder_kwargs={{model_dir: {bert}}}",
            "--model.leakage=false", "--trainer.max_epochs=1", "--trainer.limit_train_batches=1",
            "--trainer.limit_val_batches=1", "--trainer.enable_progress_bar=false", "--trainer.default_root_dir=runs"]
    run_cli(["fit", *args])
    assert main(["export", "--ckpt_path", "last", "--root", "runs", "--out", "enc"]) == 0
    assert (in_tmp / "enc" / "config.json").is_file() and AutoModel.from_pretrained(in_tmp / "enc") is not None
    assert main(["export", "--ckpt_path", "last", "--root", "runs", "--out", "enc"]) == 2  # no overwriting
    assert "is not empty; pass --overwrite" in capsys.readouterr().err


def test_predict_a_user_file_with_textcsv(in_tmp):
    import csv

    words = ["good", "fine", "great", "bad", "awful", "poor"]
    for name, n in (("train.csv", 60), ("val.csv", 20), ("mine.csv", 25)):
        rows = ["text,label,gender"] + [f"{words[i % 6]} {words[(i + 1) % 3]} day,{int(i % 6 >= 3)},{'MF'[i % 2]}"
                                        for i in range(n)]
        (in_tmp / name).write_text("\n".join(rows) + "\n")
    cfg = in_tmp / "cfg.yaml"
    cfg.write_text("model:\n  class_path: CE\n  init_args: {encoder: bow}\ndata:\n  class_path: TextCSV\n  init_args:\n"
                   f"    data_dir: {in_tmp}\n    files: {{train: train.csv, val: val.csv, test: mine.csv}}\n"
                   "    attribute_columns: gender\n    batch_size: 8\n")
    common = ["--config", str(cfg), "--trainer.default_root_dir=runs", "--trainer.enable_progress_bar=false"]
    run_cli(["fit", *common, "--trainer.max_epochs=2"])
    cli = run_cli(["predict", *common, "--ckpt_path", "last"])
    out = Path(cli.trainer.log_dir)
    rows = list(csv.DictReader((out / "predictions.csv").open()))
    assert len(rows) == 25 and [int(r["idx"]) for r in rows] == list(range(25))
    assert [int(r["y"]) for r in rows] == [int(i % 6 >= 3) for i in range(25)]
    pred = torch.load(out / "predictions.pt")
    assert pred["split"] == "test" and torch.allclose(pred["probabilities"].sum(-1), torch.ones(25))


def test_a_corrupt_checkpoint_is_one_line(in_tmp, capsys):
    bad = in_tmp / "broken.ckpt"
    bad.write_bytes(b"not a checkpoint at all")
    code = main(["test", "--model", "CE", "--data", "BiasedFeatures", *TINY, "--ckpt_path", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and "broken.ckpt" in err and "Traceback" not in err


def test_best_checkpoint_comes_from_the_final_stage(tmp_path):
    import lightning as L

    from faircl.checkpoints import FairCheckpoint
    from faircl.data.synthetic import BiasedFeatures
    from faircl.methods import CE
    from faircl.testing import quiet_trainer_kwargs

    class Staged(CE):  # two stages (2 epochs, then the rest); val/fake = the epoch, lowest at epoch 0
        def stage_epochs(self):
            return [("warmup", 2), ("train", None)]

        def on_validation_epoch_end(self):
            super().on_validation_epoch_end()
            self.log("val/fake", float(self.current_epoch))

    def best_epoch(max_epochs: int) -> int:
        dm = BiasedFeatures(n_train=64, n_val=32, n_test=32, batch_size=32, seed=0)
        model = Staged(num_classes=2, num_groups=2, input_dim=dm.input_dim, leakage=False)
        ckpt = FairCheckpoint(monitor="val/fake", mode="min", dirpath=tmp_path / f"run{max_epochs}")
        trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=max_epochs, enable_checkpointing=True,
                                                   callbacks=[ckpt], num_sanity_val_steps=0))
        trainer.fit(model, datamodule=dm)
        return int(torch.load(ckpt.best_model_path, weights_only=True)["epoch"])

    assert best_epoch(4) == 2  # the first epoch of the final stage, not epoch 0 of the warm-up
    assert best_epoch(2) == 0  # the final stage is never reached: any epoch may be chosen
