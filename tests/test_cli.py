"""FairCLI: every shipped config runs fit + test; class-name selection; reports; clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from faircl.cli import main

REPO = Path(__file__).resolve().parents[1]
CONFIGS = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "configs").rglob("*.yaml"))


def _needs_missing_data(config: Path) -> str | None:
    """The data directory a config points at, when it does not exist here (the test then skips)."""
    cfg = yaml.safe_load(config.read_text()) or {}
    data_dir = ((cfg.get("data") or {}).get("init_args") or {}).get("data_dir")
    if data_dir and not (REPO / data_dir).exists() and not Path(data_dir).exists():
        return data_dir
    return None


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS)
def test_every_shipped_config_fits_and_tests(config, tmp_path, monkeypatch):
    missing = _needs_missing_data(REPO / config)
    if missing:
        pytest.skip(f"data directory {missing} is not available here")
    monkeypatch.chdir(REPO)  # configs name data directories relative to the repository
    common = ["--config", config, "--trainer.fast_dev_run=true", f"--trainer.default_root_dir={tmp_path}",
              "--trainer.enable_progress_bar=false"]
    main(["fit", *common])
    main(["test", *common])


def test_class_name_selection_and_report(in_tmp):
    args = ["--model", "CE", "--data", "BiasedFeatures", "--data.n_train=256", "--data.n_val=64",
            "--data.n_test=128", "--model.encoder_kwargs={hidden_dim: 8}", "--trainer.max_epochs=1",
            "--trainer.enable_progress_bar=false", f"--trainer.default_root_dir={in_tmp}"]
    cli = main(["fit", *args])
    assert cli.model.num_classes == 2 and cli.model.hparams.input_dim == 32  # linked from the datamodule
    ckpt = next(in_tmp.rglob("*.ckpt"))
    main(["test", *args, "--ckpt_path", str(ckpt)])
    report = json.loads(next(in_tmp.rglob("report.json")).read_text())
    for key in ("accuracy", "f1", "tpr_gap_rms", "eo_gap", "leakage_h", "group_accuracy/group0"):
        assert key in report["metrics"], key
    assert "| accuracy" in next(in_tmp.rglob("report.md")).read_text()
    # Running again in the same directory never fails because a config file exists.
    main(["fit", *args])


def test_shared_bases_are_not_selectable():
    import faircl.data

    names = faircl.data.available_datamodules()
    assert {"TextCSV", "ImageCSV", "BiasInBios", "UTKFace"} <= names.keys()
    assert not {"TextDataModule", "ImageFairDataModule", "FairDataModule"} & names.keys()
    with pytest.raises(SystemExit, match=r"unknown datamodule 'TextDataModule'"):
        main(["fit", "--model", "CE", "--data", "TextDataModule"])


def test_unknown_names_list_the_choices(in_tmp):
    with pytest.raises(SystemExit, match=r"unknown method 'NoSuchMethod'.*available: .*CE"):
        main(["fit", "--model", "NoSuchMethod", "--data", "BiasedFeatures"])
    with pytest.raises(SystemExit, match=r"unknown datamodule 'Nope'.*BiasedFeatures.*SynthBios"):
        main(["fit", "--model", "CE", "--data", "Nope"])
    cfg = in_tmp / "bad.yaml"
    cfg.write_text("model:\n  class_path: ConFare\ndata:\n  class_path: BiasedFeatures\n")
    with pytest.raises(SystemExit, match=r"unknown method 'ConFare'"):
        main(["fit", "--config", str(cfg)])


def test_print_config(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fit", "--model", "CE", "--data", "SynthBios", "--print_config"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "class_path: faircl.methods.CE" in out and "class_path: faircl.data.SynthBios" in out


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
        main(["fit", "--config", str(cfg), "--trainer.fast_dev_run=true"])
