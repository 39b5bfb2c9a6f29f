"""``faircl compare`` as a command: its jsonargparse options (names, defaults, help, one-line errors), a setting of one
seed printed without a spread, and signed gaps drawn without a "lower is better" arrow."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from faircl.cli import main
from faircl.cli.compare import _parser
from faircl.eval.report import arrow, to_markdown

#: every option of ``faircl compare`` and its default
DEFAULTS = {"gap": "tpr_gap_rms", "select": [], "minimise": None, "maximise": None, "split": None, "baseline": None,
            "margin": 0.02, "paper_effect": None, "leakage": False, "leakage_paper_effect": None,
            "utility": "accuracy", "bootstrap": 2000, "permutations": 1000, "overwrite": False}


def _run(folder: Path, model: str, seed: int, acc: float, gap: float) -> None:
    """A ``faircl test`` run folder with its fit record (no rows)."""
    folder.mkdir(parents=True)
    meta = {"checkpoint": "none", "fit": {"seed": seed, "config": {"seed_everything": seed, "model": model,
                                                                   "data": "BiasedFeatures"}}}
    metrics = {"accuracy": acc, "balanced_accuracy": acc - 0.01, "tpr_gap_rms": gap,
               "tpr_gap_majority_minority": -gap}
    (folder / "report.json").write_text(json.dumps({"metrics": metrics, "meta": meta}))


def test_the_options_keep_their_names_and_defaults():
    opts = _parser().parse_args(["a", "b", "--out", "o"])
    assert opts.folders == ["a", "b"] and opts.out == "o"
    assert {k: getattr(opts, k) for k in DEFAULTS} == DEFAULTS
    opts = _parser().parse_args(["a", "--out", "o", "--select", "accuracy>=0.8", "--select", "dp_gap<=0.1",
                                 "--minimize", "dp_gap", "--split", "test", "--baseline", "model=CE",
                                 "--margin", "0.05", "--paper-effect", "-0.045", "--leakage",
                                 "--leakage-paper-effect", "-0.1", "--utility", "balanced_accuracy",
                                 "--bootstrap", "500", "--permutations", "300", "--overwrite"])
    assert opts.select == ["accuracy>=0.8", "dp_gap<=0.1"] and opts.minimise == "dp_gap"
    assert (opts.split, opts.baseline, opts.margin, opts.paper_effect, opts.leakage) == ("test", "model=CE", 0.05,
                                                                                         -0.045, True)
    assert (opts.leakage_paper_effect, opts.utility, opts.bootstrap, opts.permutations, opts.overwrite) == (
        -0.1, "balanced_accuracy", 500, 300, True)
    assert _parser().parse_args(["a", "--out", "o", "--maximize", "accuracy"]).maximise == "accuracy"


def test_help_comes_from_jsonargparse(capsys):
    assert main(["compare", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: faircl compare")
    for flag in ("--out", "--gap", "--select", "--minimise", "--maximise", "--split", "--baseline", "--margin",
                 "--paper-effect", "--leakage", "--leakage-paper-effect", "--utility", "--bootstrap",
                 "--permutations", "--overwrite"):
        assert flag in out, flag
    assert "(type: float, default: 0.02)" in " ".join(out.split())  # jsonargparse's own wording of a default


@pytest.mark.parametrize("args, told", [
    (["x"], "compare: missing --out"),
    ([], "compare: missing FOLDER..."),
    (["x", "--out", "o", "--bogus", "1"], "unrecognized arguments: --bogus 1"),
    (["x", "--out", "o", "--perm", "300"], "unrecognized arguments: --perm 300"),  # no abbreviations
    (["x", "--out", "o", "--margin", "abc"], "compare --margin abc: expected a number"),
    (["x", "--out", "o", "--bootstrap", "1.5"], "compare --bootstrap 1.5: expected a whole number"),
    (["x", "--out", "o", "--paper-effect", "much"], "compare --paper-effect much: expected a number"),
    (["x", "--out", "o", "--split", "train"], "invalid choice: 'train'"),
    (["x", "--out", "o", "--margin", "2"], "--margin 2: give the utility margin as a fraction"),
])
def test_bad_options_are_one_line_errors(args, told, capsys):
    assert main(["compare", *args]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("(add --debug")]
    assert len(lines) == 1 and lines[0].startswith("faircl: error: ") and told in lines[0], err


def test_a_setting_of_one_seed_prints_its_mean_alone(tmp_path, monkeypatch):
    for seed in (1, 2):
        _run(tmp_path / "runs" / f"ce{seed}", "CE", seed, 0.80 + 0.01 * seed, 0.20 + 0.01 * seed)
    _run(tmp_path / "runs" / "mine1", "Mine", 1, 0.83, 0.05)  # one seed only
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "runs", "--out", "cmp", "--split", "test"]) == 0
    settings = {r["label"]: r for r in csv.DictReader((tmp_path / "cmp" / "settings.csv").open())}
    assert settings["Mine"]["accuracy_sd"] == "n/a" and float(settings["Mine"]["accuracy_mean"]) == 0.83
    assert float(settings["CE"]["accuracy_sd"]) == pytest.approx(0.00707, abs=1e-4)  # two seeds: a spread
    md = (tmp_path / "cmp" / "settings.md").read_text().splitlines()
    (mine,) = [ln for ln in md if "| Mine |" in ln]
    (ce,) = [ln for ln in md if "| CE |" in ln]
    assert "±" not in mine and "0.8300" in mine and "± 0.0071" in ce
    selection = (tmp_path / "cmp" / "selection.md").read_text()
    (picked,) = [ln for ln in selection.splitlines() if ln.startswith("| DTO |")]
    assert "Mine" in picked and "±" not in picked and "0.8300" in picked
    sd = {s["name"]: s["sd"]["accuracy"] for s in json.loads((tmp_path / "cmp" / "compare.json").read_text())["settings"]}
    assert None in sd.values() and any(v is not None and v > 0 for v in sd.values())  # one seed: no sd


def test_signed_gaps_get_no_lower_is_better_arrow(tmp_path, monkeypatch):
    assert arrow("tpr_gap_majority_minority") == "" and arrow("gap_majority_minority") == ""
    assert arrow("tpr_gap_rms") == "↓" and arrow("accuracy") == "↑" and arrow("group_tpr/female") == ""
    md = to_markdown({"value": {"tpr_gap_majority_minority": -0.1, "tpr_gap_rms": 0.1}})
    assert "| tpr_gap_majority_minority (signed) |" in md and "| tpr_gap_rms ↓ |" in md
    for seed in (1, 2):
        _run(tmp_path / "runs" / f"ce{seed}", "CE", seed, 0.80, 0.20 + 0.01 * seed)
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "runs", "--out", "cmp", "--gap", "tpr_gap_majority_minority"]) == 0
    text = (tmp_path / "cmp" / "settings.md").read_text()
    assert "against test tpr_gap_majority_minority (signed)." in text and "tpr_gap_majority_minority ↓" not in text
    assert main(["compare", "runs", "--out", "cmp2"]) == 0
    assert "against test tpr_gap_rms ↓." in (tmp_path / "cmp2" / "settings.md").read_text()


def test_a_claim_on_one_paired_seed_gets_no_verdict_and_says_why(tmp_path, monkeypatch, capsys):
    for seed in (1, 2, 3):
        _run(tmp_path / "runs" / f"ce{seed}", "CE", seed, 0.80, 0.20 + 0.01 * seed)
        _run(tmp_path / "runs" / f"two{seed}", "Two", seed, 0.80, 0.10 + 0.02 * seed)
    _run(tmp_path / "runs" / "one2", "One", 2, 0.81, 0.05)  # shares seed 2 only
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "runs", "--out", "cmp", "--baseline", "model=CE", "--split", "test"]) == 0
    out = capsys.readouterr().out
    (said,) = [ln for ln in out.splitlines() if "One lowers" in ln]
    assert said == ("no verdict: One lowers tpr_gap_rms vs CE — 1 paired seed (seed 2); a paired comparison needs at "
                    "least 2 (no seed-to-seed variance)")
    assert "∞" not in out
    base = json.loads((tmp_path / "cmp" / "compare.json").read_text())["baseline"]
    assert [v["claim"] for v in base["verdicts"]] == ["Two lowers tpr_gap_rms vs CE"]  # two seeds or more: decided
    assert [(u["claim"], u["verdict"]) for u in base["undecided"]] == [("One lowers tpr_gap_rms vs CE", None)]
    md = (tmp_path / "cmp" / "baseline.md").read_text()
    assert "∞" not in md and "(1 seed: no interval)" in md
    assert "- One lowers tpr_gap_rms vs CE: no verdict, 1 paired seed (seed 2)" in md.split("## No verdict (1)")[1]
