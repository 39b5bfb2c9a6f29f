"""``faircl compare --baseline`` decides exactly as the claim is defined: on the same planted per-row predictions, its
verdict numbers equal those of the verdict rule's primitives composed directly here (the gap from the rows with the
validation rows screened for bias, the leakage from the per-seed probe accuracies with the rows' accuracy as its
utility) + ``faircl.eval.verdicts.decide``."""

from __future__ import annotations

import dataclasses
import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from faircl.cli import main
from faircl.eval.verdicts import (ClaimEvidence, SplitPredictions, claim_from_predictions, decide,
                                 degenerate_by_seed, leakage_bias_tests, paired_bootstrap, paired_seed_comparison)
from faircl.eval.row_predictions import write_rows


def _planted(rng, n: int, bias: float, acc: float = 0.8):
    """Rows and predictions whose errors fall on group 0's positives with extra probability ``bias``."""
    y = rng.integers(0, 2, n)
    a = rng.integers(0, 2, n)
    a[rng.random(n) < 0.03] = -1  # a few unknown attributes
    wrong = rng.random(n) > acc
    wrong |= (y == 1) & (a == 0) & (rng.random(n) < bias)
    pred = np.where(wrong, 1 - y, y)
    return y, a, pred


def _write_run(folder: Path, seed: int, model: str, test: dict, val: dict) -> None:
    folder.mkdir(parents=True)
    rows = {}
    for split, f in (("test", test), ("val", val)):
        proba = np.stack([1 - f["pred"], f["pred"]], 1).astype(np.float32) * 0.8 + 0.1
        rows[split] = {"idx": np.arange(len(f["y"])), "y": f["y"], "a": f["a"], "pred": f["pred"], "proba": proba,
                       "leak_h": f["leak_h"], "leak_yhat": np.full(len(f["y"]), -1)}
    write_rows(rows, folder)
    t = rows["test"]
    metrics = {"accuracy": float((t["pred"] == t["y"]).mean()), "tpr_gap_rms": 0.0}
    meta = {"method": model, "data": "BiasedFeatures", "checkpoint": "none",
            "fit": {"seed": seed, "source": "faircl fit",
                    "config": {"seed_everything": seed, "model": model, "data": "BiasedFeatures", "data.bias": 0.8}},
            "rows": {"file": "rows.npz"}}
    (folder / "report.json").write_text(json.dumps({"metrics": metrics, "meta": meta}))


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("same_numbers")
    rng = np.random.default_rng(7)
    n_test, n_val = 900, 500
    y, a, _ = _planted(rng, n_test, 0.0)
    yv, av, _ = _planted(rng, n_val, 0.0)
    runs = {"CE": [], "Mine": []}
    for model, bias in (("CE", 0.35), ("Mine", 0.12)):
        for seed in (1, 2, 3, 4):
            pred = np.where((rng.random(n_test) > 0.8) | ((y == 1) & (a == 0) & (rng.random(n_test) < bias)), 1 - y, y)
            vpred = np.where((rng.random(n_val) > 0.8) | ((yv == 1) & (av == 0) & (rng.random(n_val) < bias)),
                             1 - yv, yv)
            leak = np.where(rng.random(n_test) < (0.75 if model == "CE" else 0.6), a, 1 - a)
            vleak = np.where(rng.random(n_val) < (0.75 if model == "CE" else 0.6), av, 1 - av)
            leak[a < 0], vleak[av < 0] = 0, 0
            test = {"y": y, "a": a, "pred": pred, "leak_h": leak}
            val = {"y": yv, "a": av, "pred": vpred, "leak_h": vleak}
            _write_run(root / model / f"s{seed}", seed, model, test, val)
            known, vknown = a >= 0, av >= 0
            runs[model].append({"test_pred": pred, "val_pred": vpred,
                                "leakage_h": float((leak[known] == a[known]).mean()),
                                "val_leakage_h": float((vleak[vknown] == av[vknown]).mean())})
    raw = {"labels": {"main": {"test": (y, a), "val": (yv, av)}}, "parts": {"main": {"dto": runs}},
           "info": {"main": {"classes": 2}}, "args": {"bootstrap": 2000}}
    return root, raw


def _direct(raw: dict, metric: str, paper: float | None) -> ClaimEvidence:
    """"Mine lowers ``metric`` vs CE" composed from the verdict rule's primitives, without faircl compare."""
    b, m = raw["parts"]["main"]["dto"]["CE"], raw["parts"]["main"]["dto"]["Mine"]

    def split(name: str, runs: list[dict]) -> SplitPredictions:
        y, a = raw["labels"]["main"][name]
        return SplitPredictions(y, a, [r[f"{name}_pred"] for r in runs])

    bt, mt, bv = split("test", b), split("test", m), split("val", b)
    if metric != "leakage_h":
        return claim_from_predictions("Bench", bt, mt, bv, metric=metric, paper_effect=paper, num_classes=2,
                                      num_groups=2, n_bootstrap=2000)
    lb, lm, lv = [r["leakage_h"] for r in b], [r["leakage_h"] for r in m], [r["val_leakage_h"] for r in b]
    return ClaimEvidence("Bench", paired_seed_comparison(lb, lm),
                         paired_bootstrap(bt.y, bt.a, bt.preds, mt.preds, "accuracy", num_classes=2, num_groups=2,
                                          n_bootstrap=2000),
                         paper, leakage_bias_tests(lb, bt.a, lv, bv.a), degenerate_by_seed(bt, 2),
                         degenerate_by_seed(mt, 2))


def test_compare_numbers_equal_the_benchmark_path(planted, monkeypatch):
    root, raw = planted
    monkeypatch.chdir(root)
    assert main(["compare", "CE", "Mine", "--out", "cmp", "--baseline", "CE", "--leakage",
                 "--paper-effect", "-0.05"]) == 0
    ours = json.loads((root / "cmp" / "compare.json").read_text())["baseline"]["verdicts"]
    bench = decide([_direct(raw, "tpr_gap_rms", -0.05), _direct(raw, "leakage_h", None)])
    assert [v["claim"] for v in ours] == ["Mine lowers tpr_gap_rms vs CE", "Mine lowers leakage_h vs CE"]
    for o, b in zip(ours, bench):
        assert o["verdict"] == b.verdict and o["from_rows"]
        for part in ("effect", "utility"):
            for key in ("mean", "lo", "hi", "p_value", "se", "df", "n_seeds"):
                assert o[part][key] == pytest.approx(getattr(getattr(b, part), key), rel=1e-12, abs=1e-15), (part, key)
        assert o["p_adj"] == pytest.approx(b.p_adj, rel=1e-12)
        assert o["mde"] == pytest.approx(b.mde, rel=1e-12)
        assert len(o["bias"]) == len(b.bias) >= 1
        assert any("validation" in t["split"] for t in o["bias"])  # the validation rows are used too
        for ob, bb in zip(o["bias"], b.bias):
            assert ob["split"] == bb.split
            for key in ("observed", "null_q95", "null_mean", "p_value"):
                assert ob[key] == pytest.approx(getattr(bb, key), rel=1e-12), key
    # the planted effect is found (not a test of two empty answers)
    assert (bench[0].direction, bench[0].size) == ("lowers", "reaches")
    assert all(b.real for b in bench[0].bias)


def test_runs_without_rows_never_read_a_bare_holds(planted, tmp_path, monkeypatch):
    """The same runs with their rows files removed: the verdict says the bias was not checked."""
    root, _ = planted
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(root / "CE", copy / "CE")
    shutil.copytree(root / "Mine", copy / "Mine")
    for f in copy.rglob("rows.npz"):
        f.unlink()
    for rep in copy.rglob("report.json"):  # the summary numbers the verdict then rests on
        data = json.loads(rep.read_text())
        data["metrics"]["tpr_gap_rms"] = 0.3 if "CE" in str(rep) else 0.1
        data["metrics"]["tpr_gap_rms"] += 0.001 * int(rep.parent.name[1:])
        rep.write_text(json.dumps(data))
    monkeypatch.chdir(copy)
    assert main(["compare", "CE", "Mine", "--out", "cmp", "--baseline", "CE"]) == 0
    verdicts = json.loads((copy / "cmp" / "compare.json").read_text())["baseline"]["verdicts"]
    assert len(verdicts) == 1 and not verdicts[0]["from_rows"]
    assert verdicts[0]["verdict"] == "inconclusive"  # a significant fall, but the bias is not checked
    assert verdicts[0]["reason"].startswith("bias not checked")
    assert "not checked" in (copy / "cmp" / "baseline.md").read_text()


def test_bad_options_are_one_line_errors_and_unpaired_settings_are_said(planted, tmp_path, monkeypatch, capsys):
    root, _ = planted
    monkeypatch.chdir(root)
    for args, told in ((["--paper-effect", "4.5"], "as a fraction"), (["--bootstrap", "5"], "at least 100"),
                       (["--margin", "2"], "--margin 2")):
        assert main(["compare", "CE", "Mine", "--out", str(tmp_path / "bad"), "--baseline", "CE", *args]) == 2
        err = capsys.readouterr().err
        assert told in err and "Traceback" not in err
    import shutil

    shutil.copytree(root / "Mine" / "s1", tmp_path / "other" / "s9")
    rep = tmp_path / "other" / "s9" / "report.json"
    data = json.loads(rep.read_text())
    data["meta"]["fit"]["seed"] = 9
    data["meta"]["fit"]["config"]["model.lr"] = 0.5  # another setting of Mine, with a seed the baseline lacks
    rep.write_text(json.dumps(data))
    assert main(["compare", "CE", "Mine", str(tmp_path / "other"), "--out", str(tmp_path / "cmp"),
                 "--baseline", "CE"]) == 0
    out = capsys.readouterr().out
    assert "no claim for Mine lr=0.5: no fit seed shared with the baseline (seeds 1, 2, 3, 4)" in out


def test_a_gap_the_rows_do_not_recompute_says_so(planted, tmp_path, monkeypatch):
    root, _ = planted
    monkeypatch.chdir(root)
    for rep in list((root / "CE").rglob("report.json")) + list((root / "Mine").rglob("report.json")):
        data = json.loads(rep.read_text())
        data["metrics"].setdefault("dp_gap", 0.2 if "CE" in str(rep) else 0.1)
        rep.write_text(json.dumps(data))
    assert main(["compare", "CE", "Mine", "--out", str(tmp_path / "dp"), "--baseline", "CE", "--gap", "dp_gap"]) == 0
    (v,) = json.loads((tmp_path / "dp" / "compare.json").read_text())["baseline"]["verdicts"]
    assert not v["from_rows"] and v["verdict"] not in ("reproduces", "lowers, less than target")
    assert v["reason"].startswith("bias not checked (dp_gap is not recomputed from rows")


def test_the_bench_and_compare_decide_the_same_claims_identically(planted, tmp_path, monkeypatch):
    """The same runs, once through ``faircl compare --baseline`` and once as the finished runs of a bench protocol
    with the same claims: the same verdicts, numbers and Holm p-values (one path from runs to verdicts)."""
    from faircl.bench.results import decide_bench
    from faircl.bench.runner import RunTask
    from faircl.bench.spec import load_suite

    root, _ = planted
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "planted.yaml").write_text(textwrap.dedent("""\
        name: planted
        version: 1
        input_kind: features
        data: {class_path: BiasedFeatures}
        model: {lr: 0.01}
        trainer: {max_epochs: 1}
        seeds: 4
        baselines: {CE: {class_path: CE}}
        claims:
          - {gap: tpr_gap_rms, baseline: CE, leakage: true, paper_effect: -0.05}
        """))
    (protocol,) = load_suite(str(tmp_path / "suite"))
    tasks = []
    for model in ("CE", "Mine"):
        for folder in sorted((root / model).iterdir()):
            run = tmp_path / "bench" / model / folder.name
            shutil.copytree(folder, run)
            (run / "run.json").write_text(json.dumps({"report": "report.json", "wall_s": 1.0}))
            tasks.append(RunTask(protocol, model, model, {}, int(folder.name[1:]), run, model == "CE"))
    bench = decide_bench([protocol], {protocol.name: tasks}, "Mine")
    monkeypatch.chdir(root)
    assert main(["compare", "CE", "Mine", "--out", str(tmp_path / "cmp"), "--baseline", "CE", "--leakage",
                 "--paper-effect", "-0.05"]) == 0
    ours = json.loads((tmp_path / "cmp" / "compare.json").read_text())["baseline"]["verdicts"]
    assert [r.claim for r in bench] == [v["claim"] for v in ours] == ["Mine lowers tpr_gap_rms vs CE",
                                                                     "Mine lowers leakage_h vs CE"]
    assert [r.verdict.verdict for r in bench] == [v["verdict"] for v in ours]
    assert (bench[0].verdict.direction, bench[0].verdict.size) == ("lowers", "reaches")  # found by both
    for row, o in zip(bench, ours):
        v = row.verdict
        assert row.from_rows and o["from_rows"] and v.reason == o["reason"]
        assert (v.p_adj, v.mde, v.direction, v.size, v.utility_axis) == (o["p_adj"], o["mde"], o["direction"], o["size"],
                                                                          o["utility_axis"])
        for part in ("effect", "utility"):
            assert repr(dataclasses.asdict(getattr(v, part))) == repr(o[part]), part
        assert repr([dataclasses.asdict(b) for b in v.bias]) == repr(o["bias"])  # NaN intervals too
