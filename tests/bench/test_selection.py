"""Selection rules of a protocol: Shen's rule (lowest validation gap within a tolerance of the best validation
accuracy) and the fixed budget, against a literal loop; bad rules refused naming the file; a bench run under the rule
tests the checkpoint of the epoch the rule picks and keeps only that one."""

from __future__ import annotations

import json
import math
import textwrap

import numpy as np
import pytest

from faircl.bench.runner import MethodSpec, plan, run_one
from faircl.bench.checkpoint_selection import check_selection, pick_epoch
from faircl.bench.spec import load_suite
from faircl.runs.user_error import UserError

SHEN = check_selection({"rule": "gap_within"}, "test")


def _history(acc, gap):
    return [{"epoch": e, "metrics": {"val/accuracy": a, "val/tpr_gap_rms": g}}
            for e, (a, g) in enumerate(zip(acc, gap))]


def _reference(acc, gap, tol):
    """Shen's rule as a literal loop over the epochs."""
    best = -1.0
    for a in acc:
        if a == a and a > best:
            best = a
    pick, pick_gap = None, None
    for e in range(len(acc)):
        if acc[e] == acc[e] and acc[e] >= best - tol - 1e-12 and math.isfinite(gap[e]):
            if pick is None or gap[e] < pick_gap:
                pick, pick_gap = e, gap[e]
    return pick


def test_shens_rule_matches_a_literal_loop_on_random_histories():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 12))
        acc = np.round(rng.uniform(0.5, 0.9, n), 2).tolist()  # rounded: ties and exact boundary cases happen
        gap = np.round(rng.uniform(0.0, 0.3, n), 2).tolist()
        if rng.random() < 0.3:
            gap[int(rng.integers(n))] = float("nan")  # a group absent from validation in one epoch
        tol = float(rng.choice([0.0, 0.01, 0.05]))
        want = _reference(acc, gap, tol)
        if want is None:
            continue
        got, why = pick_epoch(_history(acc, gap), {**SHEN, "tolerance": tol})
        assert got == want, (acc, gap, tol, why)


def test_the_tolerance_boundary_survives_round_off():
    # 0.80 - 0.01 is 0.79 in exact arithmetic; planted noise of a few ulps must not drop the epoch at the boundary
    for noise in (0.0, -2e-16, 2e-16):
        acc = [0.80, 0.79 + noise, 0.75]
        got, _ = pick_epoch(_history(acc, [0.20, 0.05, 0.01]), SHEN)
        assert got == 1
    assert pick_epoch(_history([0.80, 0.789, 0.75], [0.20, 0.05, 0.01]), SHEN)[0] == 0  # just outside: the best


def test_degenerate_histories():
    with pytest.raises(ValueError, match="no epoch was validated"):
        pick_epoch([], SHEN)
    with pytest.raises(ValueError, match="finite val/accuracy"):
        pick_epoch(_history([float("nan")], [0.1]), SHEN)
    nan = float("nan")
    epoch, why = pick_epoch(_history([0.7, 0.8, 0.8], [nan, nan, nan]), SHEN)
    assert epoch == 1 and "no epoch within" in why  # no gap anywhere: the (first) best accuracy, said so
    assert pick_epoch(_history([0.7, 0.8, 0.6], [0.1, 0.2, 0.0]), {"rule": "last"})[0] == 2
    # ties in the gap: the earliest epoch
    assert pick_epoch(_history([0.8, 0.8, 0.8], [0.1, 0.05, 0.05]), SHEN)[0] == 1


@pytest.mark.parametrize("selection, says", [
    ({"rule": "best_f1"}, "unknown selection rule 'best_f1'"),
    ({"rule": "gap_within", "tol": 1}, "takes ['accuracy', 'gap', 'tolerance']"),
    ({"rule": "gap_within", "tolerance": -1}, "tolerance must be a number >= 0"),
    ({"rule": "last", "tolerance": 0.01}, "takes no arguments"),
    ({"mode": "max"}, "'selection' is {monitor"),
    ({"monitor": "val/dto", "mode": "lowest"}, "mode must be max or min"),
])
def test_bad_selection_is_refused_naming_the_file(tmp_path, selection, says):
    (tmp_path / "p.yaml").write_text(PROTOCOL.replace("SELECTION", json.dumps(selection)))
    with pytest.raises(UserError) as err:
        load_suite(str(tmp_path))
    assert says in str(err.value) and "p.yaml" in str(err.value)


PROTOCOL = textwrap.dedent("""\
    name: p
    version: 1
    input_kind: features
    data: {class_path: BiasedFeatures, init_args: {n_train: 256, n_val: 128, n_test: 128, batch_size: 64}}
    model: {encoder: mlp, lr: 0.01}
    trainer: {max_epochs: 4}
    selection: SELECTION
    seeds: 1
    baselines: {CE: {class_path: CE}}
    claims: [{gap: tpr_gap_rms, baseline: CE}]
    """)


def test_a_run_under_shens_rule_tests_the_epoch_the_rule_picks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "p.yaml").write_text(PROTOCOL.replace("SELECTION", "{rule: gap_within, tolerance: 0.05}"))
    (protocol,) = load_suite(str(tmp_path / "suite"))
    from faircl.methods import CE
    task = plan(protocol, MethodSpec("CE", "faircl.methods.CE", {}, CE), [0], tmp_path / "out", tmp_path / "cache")[0]
    task.prepare()
    assert task.config()["report_plot"] is False
    assert run_one(str(task.folder)) == 0
    assert not list(task.folder.rglob("report.png"))  # a bench run draws no per-run picture: the bench draws its own
    history = json.loads((task.folder / "epochs.json").read_text())
    assert [e["epoch"] for e in history] == [0, 1, 2, 3]
    acc = [e["metrics"]["val/accuracy"] for e in history]
    gap = [e["metrics"]["val/tpr_gap_rms"] for e in history]
    record = task.record()
    assert record["selected"]["epoch"] == _reference(acc, gap, 0.05)
    assert record["checkpoint"].endswith(f"epoch={record['selected']['epoch']}.ckpt")
    ckpts = list(task.folder.rglob("*.ckpt"))
    assert [p.name for p in ckpts] == [f"epoch={record['selected']['epoch']}.ckpt"]  # the others are deleted
    report = json.loads((task.folder / record["report"]).read_text())
    assert report["meta"]["checkpoint"] == str(task.folder / record["checkpoint"])  # what the test loaded


@pytest.mark.parametrize("selection", ["{rule: gap_within, tolerance: 1.0}", "{monitor: val/f1, mode: max}"])
def test_a_staged_method_is_selected_among_its_final_stage_epochs_only(tmp_path, monkeypatch, selection):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "p.yaml").write_text(PROTOCOL.replace("SELECTION", selection))
    (protocol,) = load_suite(str(tmp_path / "suite"))
    from faircl.methods import INLP
    spec = MethodSpec("INLP", "faircl.methods.INLP", {"stage1_epochs": 2, "n_clf": 2}, INLP)
    task = plan(protocol, spec, [0], tmp_path / "out", tmp_path / "cache")[-1]
    assert not task.baseline
    task.prepare()
    assert task.config()["report_plot"] is False
    assert run_one(str(task.folder)) == 0
    assert not list(task.folder.rglob("report.png"))  # a bench run draws no per-run picture: the bench draws its own
    history = json.loads((task.folder / "epochs.json").read_text())
    # stage 1 (epochs 0-1) is plain CE: with a tolerance of 100 points it would win on a lower gap, and on F1 it
    # often wins outright, if it were a candidate; only the final stage's epochs are (a monitor included)
    assert [e["epoch"] for e in history] == [0, 1, 2, 3]
    assert [e["epoch"] for e in history if e["final"]] == [2, 3]
    assert task.record()["selected"]["epoch"] in (2, 3)
    assert [p.name for p in task.folder.rglob("*.ckpt")] == [f"epoch={task.record()['selected']['epoch']}.ckpt"]


def test_a_monitor_picks_the_best_epoch_the_earliest_on_a_tie():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 10))
        f1 = np.round(rng.uniform(0.5, 0.9, n), 1).tolist()  # rounded: ties happen
        if rng.random() < 0.3:
            f1[int(rng.integers(n))] = float("nan")
        history = [{"epoch": e + 3, "metrics": {"val/f1": v}} for e, v in enumerate(f1)]
        for mode in ("max", "min"):
            best, want = None, None
            for e, v in enumerate(f1):  # literal loop: strictly better replaces, so a tie keeps the earlier epoch
                if v == v and (best is None or (v > best if mode == "max" else v < best)):
                    best, want = v, e + 3
            if want is None:
                with pytest.raises(ValueError, match="finite val/f1"):
                    pick_epoch(history, {"monitor": "val/f1", "mode": mode})
                continue
            got, why = pick_epoch(history, {"monitor": "val/f1", "mode": mode})
            assert got == want and "val/f1" in why, (f1, mode, why)
