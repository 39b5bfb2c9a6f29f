"""The rows file, the fit record's data identity, setting labels, and what the report's tables and picture say."""

from __future__ import annotations

import json

import numpy as np
import pytest

from faircl.eval.statistics import confusion_from_rows, gap_from_confusion
from faircl.eval.report import to_markdown
from faircl.eval.report_plot import class_rates, drawable_labels, plot_report
from faircl.eval.row_predictions import data_identity, flatten_config, leakage_of, read_rows, rows_fingerprint, write_rows
from faircl.eval.tradeoff import Run, group_runs, plot_front, setting_labels


def _fields(n: int = 20, c: int = 3, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(c), n).astype(np.float32)
    a = rng.integers(-1, 2, n)
    return {"idx": np.arange(n), "y": rng.integers(0, c, n), "a": a, "pred": proba.argmax(1), "proba": proba,
            "leak_h": rng.integers(0, 2, n), "leak_yhat": np.full(n, -1)}


def test_rows_round_trip_and_bad_files(tmp_path):
    rows = {"test": _fields(), "val": _fields(9, seed=1)}
    path = write_rows(rows, tmp_path)
    assert path.name == "rows.npz"
    back = read_rows(path)
    for split in rows:
        for k, v in rows[split].items():
            assert np.array_equal(back[split][k], v) and back[split][k].dtype == (np.float32 if k == "proba"
                                                                                     else np.int64)
    with pytest.raises(ValueError, match="lacks pred"):
        write_rows({"test": {k: v for k, v in _fields().items() if k != "pred"}}, tmp_path)
    with pytest.raises(ValueError, match="expected 20 rows"):
        write_rows({"test": {**_fields(), "y": np.zeros(19)}}, tmp_path)
    with pytest.raises(ValueError, match="unknown split"):
        write_rows({"train": _fields()}, tmp_path)
    (tmp_path / "bad.npz").write_text("not numpy")
    with pytest.raises(ValueError, match="bad.npz"):
        read_rows(tmp_path / "bad.npz")


def test_leakage_of_counts_known_rows_only():
    f = {"a": np.array([0, 1, -1, 1, 0]), "leak_h": np.array([0, 0, 1, 1, -1])}
    # literal loop over rows with a known attribute and a guess
    pairs = [(a, g) for a, g in zip(f["a"], f["leak_h"]) if a >= 0 and g >= 0]
    assert leakage_of(f) == pytest.approx(sum(a == g for a, g in pairs) / len(pairs))
    assert np.isnan(leakage_of({"a": np.array([-1, -1]), "leak_h": np.array([0, 1])}))


def test_fingerprint_and_data_identity():
    f = _fields()
    g = {**f, "pred": 1 - f["pred"]}  # other predictions, same rows
    assert rows_fingerprint(f) == rows_fingerprint(g)
    assert rows_fingerprint(f) != rows_fingerprint({**f, "a": np.roll(f["a"], 1)})
    cfg = flatten_config({"model": {"class_path": "faircl.methods.CE", "init_args": {"lr": 0.1}},
                          "data": {"class_path": "BiasedFeatures", "init_args": {"bias": 0.8, "batch_size": 64}}})
    assert cfg == {"model": "CE", "model.lr": 0.1, "data": "BiasedFeatures", "data.bias": 0.8,
                   "data.batch_size": 64}
    same = {**cfg, "data.batch_size": 1024, "model.lr": 1.0}  # loader and method settings: the same data set
    other = {**cfg, "data.bias": 0.5}
    assert data_identity(cfg) == data_identity(same) != data_identity(other)


def _run(seed, **config):
    return Run(f"r{seed}{sorted(config.items())}", seed, config, {"accuracy": 0.8 + 0.01 * seed, "tpr_gap_rms": 0.1})


def test_setting_labels_name_what_differs():
    runs = [_run(s, model="CE", **{"model.lr": 0.001}) for s in (1, 2)]
    runs += [_run(s, model="ConFair", **{"model.lr": 0.001, "model.lambda_fair": lam, "model.temperature": 0.1})
             for s in (1, 2) for lam in (0.11, 1.0)]
    runs += [_run(1, model="CE", **{"model.lr": 0.001, "data.batch_size": 1024})]
    settings, varied = group_runs(runs, ())
    labels = sorted(setting_labels(settings, varied).values())
    assert labels == ["CE", "CE batch_size=1024", "ConFair λ=0.11", "ConFair λ=1"]


def test_front_plot_keeps_labels_apart_and_inside(tmp_path):
    """Many settings on nearly the same point: every label is drawn, none overlaps another."""
    import matplotlib

    matplotlib.use("Agg")
    runs = [_run(1, model="ConFair", **{"model.lambda_fair": lam}) for lam in np.linspace(0.1, 0.2, 6)]
    settings, varied = group_runs(runs, ())
    labels = setting_labels(settings, varied)
    plot_front(settings, "tpr_gap_rms", tmp_path / "front.png", {settings[0].name: "DTO"}, labels=labels)
    assert (tmp_path / "front.png").stat().st_size > 0
    assert all(label.startswith("ConFair λ=") for label in labels.values())


def test_report_arrows_and_counts():
    md = to_markdown({"value": {"accuracy": 0.9, "tpr_gap_rms": 0.1, "group_fpr/men": 0.2, "group_tpr/men": 0.7,
                                "n_unknown_group": 322.0}})
    lines = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in md.splitlines()[2:]}
    assert "accuracy ↑" in lines and "tpr_gap_rms ↓" in lines
    assert "group_fpr/men" in lines and "group_tpr/men" in lines  # no direction is better for a group's rate
    assert lines["n_unknown_group"] == "322"


def test_class_rates_match_a_literal_loop_and_the_gap():
    f = _fields(400, c=4, seed=3)
    r = class_rates(f["y"], f["pred"], f["a"], 4, 2)
    for g in range(2):
        for c in range(4):
            rows = [(y, p) for y, p, a in zip(f["y"], f["pred"], f["a"]) if a == g and y == c]
            assert r["tpr"][g, c] == pytest.approx(sum(p == c for _, p in rows) / len(rows))
            neg = [(y, p) for y, p, a in zip(f["y"], f["pred"], f["a"]) if a == g and y != c]
            assert r["fpr"][g, c] == pytest.approx(sum(p == c for _, p in neg) / len(neg))
    # the RMS of the drawn class gaps is the report's tpr_gap_rms (the title's number)
    gap = gap_from_confusion(confusion_from_rows(f["y"], f["pred"], f["a"], 4, 2), "tpr_gap_rms")
    assert np.sqrt(np.nanmean(r["tpr_gap"] ** 2)) == pytest.approx(float(gap), rel=1e-12)


def test_multi_class_report_png_draws_class_gaps(tmp_path):
    f = _fields(300, c=5, seed=4)
    report = {"accuracy": 0.5, "worst_group_accuracy": 0.4, "tpr_gap_rms": 0.3, "fpr_gap_rms": 0.1,
              "group_accuracy/men": 0.5, "group_accuracy/women": 0.4, "group_tpr/men": 0.5,
              "group_tpr/women": 0.5, "group_fpr/men": 0.1, "group_fpr/women": 0.1}
    import matplotlib.pyplot as plt

    captured = {}
    real_savefig = plt.Figure.savefig

    def spy(fig, path, *args, **kwargs):
        captured["titles"] = [ax.get_title() for ax in fig.axes]
        return real_savefig(fig, path, *args, **kwargs)

    plt.Figure.savefig = spy
    try:
        assert plot_report(report, tmp_path / "r.png", rows=f, class_names=list("abcde")) is not None
    finally:
        plt.Figure.savefig = real_savefig
    assert any("per class and group" in t and "tpr_gap_rms 0.300 = RMS of the class gaps" in t
               for t in captured["titles"])


def test_group_names_no_font_draws_are_replaced_and_said(tmp_path):
    labels, font, lost = drawable_labels(["men", "women"])
    assert labels == ["men", "women"] and not lost
    labels, font, lost = drawable_labels(["男", "women"])
    if font is None:  # no CJK font installed here: said, never drawn as boxes
        assert labels == ["group 0*", "women"] and lost == ["男"]
    report = {"accuracy": 0.5, "group_accuracy/男": 0.5, "group_accuracy/女": 0.4}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no glyph warnings
        assert plot_report(report, tmp_path / "cjk.png") is not None


def _noisy_rows(rng, n, pred_from=None):
    y = rng.integers(0, 3, n)
    a = rng.integers(-1, 2, n)  # -1: unknown attribute
    pred = np.where(rng.random(n) < 0.7, y, rng.integers(0, 3, n)) if pred_from is None else pred_from
    return {"idx": np.arange(n), "y": y, "a": a, "pred": pred, "proba": np.eye(3, dtype=np.float32)[pred],
            "leak_h": np.where(rng.random(n) < 0.5, a, -1), "leak_yhat": np.full(n, -1)}


def test_fairness_of_rows_matches_a_literal_computation():
    from faircl.eval.row_predictions import fairness_of

    f = _noisy_rows(np.random.default_rng(0), 500)
    got = fairness_of(f, 2)
    assert got["accuracy"] == pytest.approx(np.mean(f["pred"] == f["y"]))
    # TPR gap RMS (Shen's GAP) with two groups: the RMS over classes of |TPR_0 − TPR_1|, unknown rows left out
    gaps = []
    for c in range(3):
        tpr = [np.mean(f["pred"][(f["y"] == c) & (f["a"] == g)] == c) for g in range(2)]
        gaps.append(tpr[0] - tpr[1])
    assert got["tpr_gap_rms"] == pytest.approx(np.sqrt(np.mean(np.square(gaps))))
    known = (f["a"] >= 0) & (f["leak_h"] >= 0)
    assert got["leakage_h"] == pytest.approx(np.mean(f["leak_h"][known] == f["a"][known]))
    assert "leakage_yhat" not in got  # no probe: left out, not reported as 0


def test_compare_reads_knn_and_probe_runs_from_their_rows(tmp_path):
    """A run whose rows are a 1-NN's: its test and validation numbers are the rows', not the logits' report."""
    from faircl.runs.folders import read_run
    from faircl.eval.row_predictions import fairness_of, write_rows

    rng = np.random.default_rng(1)
    rows = {"test": _noisy_rows(rng, 400), "val": _noisy_rows(rng, 200)}
    for how in ("logits", "knn", "probe"):
        run = tmp_path / how
        write_rows(rows, run)
        (run / "report.json").write_text(json.dumps({
            "metrics": {"accuracy": 0.99, "tpr_gap_rms": 0.0, "recall_at_1": 0.5},
            "meta": {"rows": {"file": "rows.npz", "predictions": how}}}))
        got = read_run(run / "report.json")
        assert got.predictions == how
        if how == "logits":
            assert got.test["accuracy"] == 0.99 and got.val == {}
            continue
        assert got.test["accuracy"] == pytest.approx(np.mean(rows["test"]["pred"] == rows["test"]["y"]))
        assert got.test["tpr_gap_rms"] == pytest.approx(fairness_of(rows["test"], 2)["tpr_gap_rms"])
        assert got.test["recall_at_1"] == 0.5  # what rows cannot give stays the report's
        assert got.val["accuracy"] == pytest.approx(np.mean(rows["val"]["pred"] == rows["val"]["y"]))
        assert "dto" in got.val and "dto" in got.test


def test_run_folders_read_rows_once_and_items_with_the_file_named(tmp_path):
    from faircl.runs.folders import read_items
    from faircl.eval.row_predictions import read_runs_rows

    path = write_rows({"test": _fields()}, tmp_path / "a")
    with_rows = Run(str(tmp_path / "a"), 1, {}, {"accuracy": 0.5}, rows=str(path))
    without = Run(str(tmp_path / "b"), 1, {}, {"accuracy": 0.5})
    got = read_runs_rows([with_rows, without, with_rows])
    assert list(got) == [str(path)] and np.array_equal(got[str(path)]["test"]["y"], _fields()["y"])
    known = {str(path): {"test": {"y": np.zeros(1)}}}
    assert read_runs_rows([with_rows], known)[str(path)] is known[str(path)]  # not read again
    assert read_items(tmp_path / "a") is None
    (tmp_path / "a" / "items.json").write_text('{"seat": 1}')
    assert read_items(tmp_path / "a") == {"seat": 1}
    (tmp_path / "a" / "items.json").write_text("{broken")
    with pytest.raises(ValueError, match="items.json: not readable JSON"):
        read_items(tmp_path / "a")
