"""``faircl compare`` compares trained runs only and drops nothing silently: a run of untrained weights
(``faircl test --ckpt_path none``) is kept apart and named, as are folders whose report is missing or unreadable,
unfinished sweep trials, and runs whose report names per-row predictions that are gone."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from faircl.cli import main
from faircl.runs.folders import UNTRAINED, read_run

TINY = ["--model", "CE", "--data", "BiasedFeatures", "--data.n_train=256", "--data.n_val=64", "--data.n_test=128",
        "--model.encoder_kwargs={hidden_dim: 8}", "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false", "--trainer.accelerator=cpu"]


def _run(folder: Path, seed: int, acc: float, **meta) -> Path:
    """A ``faircl test`` run folder of CE with its fit record (no rows)."""
    folder.mkdir(parents=True)
    fit = {"seed": seed, "config": {"seed_everything": seed, "model": "CE", "data": "BiasedFeatures",
                                    "trainer.max_epochs": 3}}
    metrics = {"accuracy": acc, "balanced_accuracy": acc, "tpr_gap_rms": 0.2 - acc / 10}
    (folder / "report.json").write_text(json.dumps({"metrics": metrics, "meta": {"checkpoint": "x.ckpt", "fit": fit,
                                                                                **meta}}))
    return folder


def _untrained(folder: Path) -> None:
    """What ``faircl test --ckpt_path none`` leaves: no fit record, the test command's config (15 epochs, seed 0)."""
    folder.mkdir(parents=True)
    meta = {"method": "CE", "data": "BiasedFeatures", "checkpoint": UNTRAINED,
            "fit": "unknown (the checkpoint has no fit record)"}
    (folder / "report.json").write_text(json.dumps({"metrics": {"accuracy": 0.51, "balanced_accuracy": 0.5,
                                                                "tpr_gap_rms": 0.0}, "meta": meta}))
    (folder / "config.yaml").write_text(yaml.safe_dump({"seed_everything": 0, "model": "CE", "data": "BiasedFeatures",
                                                        "trainer": {"max_epochs": 15}}))


def _compare(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["compare", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_run_of_untrained_weights_is_kept_apart_and_named(tmp_path, monkeypatch, capsys):
    for seed in (0, 1):
        _run(tmp_path / "runs" / f"ce{seed}", seed, 0.80 + seed / 100)
    _untrained(tmp_path / "runs" / "untrained")
    monkeypatch.chdir(tmp_path)
    code, out, err = _compare(capsys, "runs", "--out", "cmp", "--baseline", "runs/ce0")
    assert code == 0, err
    payload = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert sorted(r["path"] for r in payload["runs"]) == ["runs/ce0", "runs/ce1"]  # not paired as seed 0
    assert [s["seeds"] for s in payload["settings"]] == [[0, 1]]  # one setting: no 15-epoch "CE" beside it
    assert "untrained" in payload["left_out"]["runs/untrained"]
    (note,) = [ln for ln in out.splitlines() if "runs/untrained" in ln]
    assert note.startswith("faircl compare: note: left out 1 run folder(s), tested on untrained weights")
    assert "runs/untrained" in (tmp_path / "cmp" / "runs.md").read_text().split("## Left out")[1]
    assert "0.51" not in (tmp_path / "cmp" / "selection.md").read_text()
    # only untrained runs: refused in one line
    code, _, err = _compare(capsys, "runs/untrained", "--out", "cmp2")
    assert code == 2 and "holds no finished run of trained weights" in err and "untrained weights" in err


def test_faircl_test_on_untrained_weights_records_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["test", *TINY, "--trainer.default_root_dir=u", "--ckpt_path", "none"]) == 0
    run = read_run(next((tmp_path / "u").rglob("report.json")))
    assert run.untrained and run.checkpoint == UNTRAINED


def test_every_folder_left_out_is_named_with_what_is_missing(tmp_path, monkeypatch, capsys):
    for seed in (1, 2):
        _run(tmp_path / "runs" / f"ce{seed}", seed, 0.8)
    halfway = _run(tmp_path / "runs" / "halfway", 3, 0.8)
    (halfway / "report.md").write_text("# Fairness report\n")
    (halfway / "report.json").unlink()  # deleted halfway: its report.md remains
    broken = _run(tmp_path / "runs" / "broken", 4, 0.8)
    (broken / "report.json").write_text('{"metrics": {"accur')
    _run(tmp_path / "runs" / "no_rows", 5, 0.8, rows={"file": "rows.npz"})  # names rows that are gone
    trial = tmp_path / "runs" / "sweep" / "trial_0"
    trial.mkdir(parents=True)
    (trial / "trial_spec.json").write_text("{}")  # no trial.json: pruned or interrupted
    _run(trial / "test" / "version_0", 6, 0.8)
    monkeypatch.chdir(tmp_path)
    code, out, err = _compare(capsys, "runs", "--out", "cmp")
    assert code == 0, err
    notes = [ln for ln in out.splitlines() if ln.startswith("faircl compare: note:")]
    told = {
        "runs/halfway": "no report.json (beside its report.md",
        "runs/broken": "runs/broken/report.json: not readable JSON",
        "runs/sweep/trial_0/test/version_0": "a sweep trial that did not finish",
        "runs/no_rows": "runs/no_rows: rows.npz",
    }
    for folder, why in told.items():
        assert any(folder in ln and why in ln for ln in notes), (folder, notes)
    left_out = json.loads((tmp_path / "cmp" / "compare.json").read_text())["left_out"]
    assert set(left_out) == set(told) - {"runs/no_rows"}  # kept, its claims from summary numbers
    assert sorted(r["seed"] for r in json.loads((tmp_path / "cmp" / "compare.json").read_text())["runs"]) == [1, 2, 5]
