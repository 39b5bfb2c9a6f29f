"""finDML evaluation against literal references on tiny hand-made embeddings, and the checkpoint command."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from faircl.eval.findml import (downstream_metrics, evaluate_embeddings, group_scores, minority_gap, rebalance_rows,
                                representation_report)

NAMES = ["g0", "g1", "g2"]


def _blobs(n_per: int = 12, seed: int = 0):
    """Three well separated classes in 4-D with some overlap noise; groups of unequal sizes (and unknowns)."""
    rng = np.random.default_rng(seed)
    centres = np.array([[4, 0, 0, 0], [0, 4, 0, 0], [0, 0, 4, 0]], dtype=np.float64)
    y = np.repeat(np.arange(3), n_per)
    x = centres[y] + rng.normal(scale=1.6, size=(len(y), 4))
    a = rng.choice([0, 0, 0, 1, 1, 2], size=len(y))
    a[::11] = -1
    return x, y, a


def _brute_recall(x, y, a, k, g):
    hits = []
    for i in range(len(x)):
        if a[i] != g:
            continue
        d = [(np.sum((x[i] - x[j]) ** 2), j) for j in range(len(x)) if j != i]
        nearest = [j for _, j in sorted(d)[:k]]
        hits.append(any(y[j] == y[i] for j in nearest))
    return float(np.mean(hits)) if hits else float("nan")


def test_per_group_recall_at_k_by_brute_force():
    x, y, a = _blobs()
    rep = representation_report(x, y, a, num_classes=3, num_groups=3, group_names=NAMES, ks=(1, 3))
    for k in (1, 3):
        for g, name in enumerate(NAMES):
            assert rep[f"recall@{k}/{name}"] == pytest.approx(_brute_recall(x, y, a, k, g))
        overall = np.mean([_brute_recall(x, y, np.zeros_like(a), k, 0)])
        assert rep[f"recall@{k}"] == pytest.approx(overall)
    assert rep["recall@1"] < 1.0  # the noise makes some neighbours wrong: the test can fail


def test_per_group_nmi_matches_sklearn_and_ukl_the_formula():
    from sklearn.cluster import KMeans
    from sklearn.metrics import normalized_mutual_info_score

    rng = np.random.default_rng(1)
    centres = np.array([[10, 0, 0], [0, 10, 0], [0, 0, 10]], dtype=np.float64)
    y = np.repeat(np.arange(3), 10)
    x = centres[y] + rng.normal(scale=0.5, size=(30, 3))
    x[0] = centres[1]  # one row of class 0 sits in cluster 1: group 0's NMI drops below 1
    a = np.tile([0, 1], 15)
    rep = representation_report(x, y, a, num_classes=3, num_groups=2, group_names=["g0", "g1"])
    clusters = KMeans(3, n_init=10, random_state=0).fit_predict(x)
    for g in (0, 1):
        assert rep[f"nmi/g{g}"] == pytest.approx(normalized_mutual_info_score(y[a == g], clusters[a == g]))
        s = np.linalg.svd(x[a == g], compute_uv=False)
        p = s / s.sum()
        ukl = sum((1 / len(p)) * math.log((1 / len(p)) / pi) for pi in p)
        assert rep[f"ukl/g{g}"] == pytest.approx(ukl)
    assert rep["nmi/g0"] < rep["nmi/g1"] == pytest.approx(1.0)
    assert rep["nmi_gap_worst_vs_rest"] == pytest.approx(rep["nmi/g1"] - rep["nmi/g0"])


def test_gaps_literal_and_minority_gap():
    values, sizes = [0.9, 0.5, 0.7, float("nan")], [50, 10, 30, 0]
    # rest = groups 0 and 2 (weighted 50:30), minority = group 1
    assert minority_gap(values, sizes, [1]) == pytest.approx((0.9 * 50 + 0.7 * 30) / 80 - 0.5)
    assert minority_gap(values, sizes, [1], higher_is_better=False) == pytest.approx(0.5 - (0.9 * 50 + 0.7 * 30) / 80)
    assert math.isnan(minority_gap(values, sizes, [3]))
    x, y, a = _blobs()
    rep = representation_report(x, y, a, num_classes=3, num_groups=3, group_names=NAMES, minority_groups=[2])
    counts = np.bincount(a[a >= 0], minlength=3)
    r = [rep[f"recall@1/{n}"] for n in NAMES]
    assert rep["recall@1_gap_majority_minority"] == pytest.approx(r[int(counts.argmax())] - r[int(counts.argmin())])
    assert rep["recall@1_gap_minority"] == pytest.approx((r[0] * counts[0] + r[1] * counts[1]) / counts[:2].sum()
                                                         - r[2])
    assert rep["ukl_gap_minority"] == pytest.approx(
        rep["ukl/g2"] - (rep["ukl/g0"] * counts[0] + rep["ukl/g1"] * counts[1]) / counts[:2].sum())


def test_group_scores_against_loops():
    t = np.array([0, 0, 1, 1, 2, 2, 0, 1, 2, 2])
    p = np.array([0, 1, 1, 1, 2, 0, 0, 2, 2, 1])
    a = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, -1])
    out = group_scores(t, p, a, num_groups=3)

    def macro(tt, pp):
        classes = sorted(set(tt.tolist()))
        prec, rec = [], []
        for c in classes:
            tp = np.sum((tt == c) & (pp == c))
            prec.append(tp / np.sum(pp == c) if np.sum(pp == c) else 0.0)
            rec.append(tp / np.sum(tt == c))
        return np.mean(prec), np.mean(rec)

    for g in (0, 1):
        m = a == g
        assert out["accuracy"][1][g] == pytest.approx(np.mean(t[m] == p[m]))
        pr, rc = macro(t[m], p[m])
        assert out["precision"][1][g] == pytest.approx(pr)
        assert out["recall"][1][g] == pytest.approx(rc)
    assert out["accuracy"][0] == pytest.approx(0.6)
    assert math.isnan(out["accuracy"][1][2])  # group 2 has no rows


def _flip_data():
    """1-D embeddings ±5 by class; in test, half of group 1 sits on the wrong side: accuracy 1 vs 0.5 exactly."""
    rng = np.random.default_rng(0)
    ytr = np.tile([0, 1], 40)
    xtr = (np.where(ytr == 1, 5.0, -5.0) + rng.normal(scale=0.3, size=80))[:, None]
    atr = np.repeat([0, 1], 40)
    yte = np.tile([0, 1], 20)
    ate = np.repeat([0, 1], 20)
    side = np.where(yte == 1, 5.0, -5.0)
    flip = (ate == 1) & (np.arange(40) % 4 < 2)
    xte = (np.where(flip, -side, side) + rng.normal(scale=0.3, size=40))[:, None]
    return xtr, ytr, atr, xte, yte, ate


@pytest.mark.parametrize("clf", ["lr", "svm", "kmeans", "rf"])
def test_downstream_classifiers_group_gaps(clf):
    xtr, ytr, atr, xte, yte, ate = _flip_data()
    rep = downstream_metrics(xtr, ytr, atr, xte, yte, ate, num_classes=2, num_groups=2, group_names=["a", "b"],
                             classifiers=[clf], minority_groups=[1])
    assert rep[f"{clf}/accuracy/a"] == 1.0 and rep[f"{clf}/accuracy/b"] == 0.5
    assert rep[f"{clf}/accuracy"] == 0.75
    assert rep[f"{clf}/accuracy_gap_minority"] == pytest.approx(0.5)
    assert rep[f"{clf}/recall/b"] == pytest.approx(0.5) and rep[f"{clf}/precision/b"] == pytest.approx(0.5)


def test_rebalance_rows_equalises_cells():
    y = np.array([0] * 10 + [1] * 6 + [0] * 3 + [1] * 4)
    a = np.array([0] * 16 + [1] * 7)
    rows = rebalance_rows(y, a, "cell", seed=0)
    cells = np.bincount(y[rows] * 2 + a[rows], minlength=4)
    assert cells.tolist() == [3, 3, 3, 3]
    assert np.bincount(a[rebalance_rows(y, a, "group")]).tolist() == [7, 7]
    assert len(rebalance_rows(y, a, "none")) == len(y)
    with pytest.raises(ValueError, match="rebalance"):
        rebalance_rows(y, a, "rows")


def test_evaluate_embeddings_full_report_and_degenerate_inputs():
    x, y, a = _blobs(n_per=14)
    tr, te = slice(0, None, 2), slice(1, None, 2)
    a_te = a[te].copy()
    a_te[a_te == 2] = 0  # group 2 absent from the test split: its per-group entries are NaN, not an error
    rep = evaluate_embeddings(torch.tensor(x[tr]), torch.tensor(y[tr]), torch.tensor(a[tr]), x[te], y[te], a_te,
                              num_classes=3, num_groups=3, group_names=NAMES, classifiers=("lr",), rebalance="class")
    assert math.isnan(rep["recall@1/g2"]) and math.isnan(rep["lr/accuracy/g2"])
    assert math.isfinite(rep["recall@1_gap_majority_minority"]) and math.isfinite(rep["lr/accuracy"])
    bal = evaluate_embeddings(x[tr], y[tr], a[tr], x[te], y[te], a[te], classifiers=("lr",),
                              downstream_train=(x[te], y[te], a[te]))
    assert bal["lr/accuracy"] >= rep["lr/accuracy"] - 0.2  # trained on the test rows themselves
    with pytest.raises(ValueError, match="rows"):
        evaluate_embeddings(x[:5], y[:4], a[:5], x, y, a)
    with pytest.raises(ValueError, match="differ in width"):
        evaluate_embeddings(x, y, a, x[:, :2], y, a)
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="row 3"):
        evaluate_embeddings(x, y, a, bad, y, a)
    with pytest.raises(ValueError, match="outside"):
        evaluate_embeddings(x, y, a, x, y, a, num_groups=2)


def test_findml_command_on_a_checkpoint(in_tmp):
    import lightning as L
    import yaml

    from faircl.data import ColoredDigits
    from faircl.eval.findml import main
    from faircl.methods.dml import DML
    from faircl.testing import quiet_trainer_kwargs

    data = {"class_path": "ColoredDigits", "init_args": {"batch_size": 40, "size": 8, "sampler": "samples_per_class",
                                                         "samples_per_class": 4}}
    cfg = {"model": {"class_path": "DML", "init_args": {"encoder": "conv",
                                                        "encoder_kwargs": {"width": 8, "out_dim": 16},
                                                        "embed_dim": 16}},
           "data": data}
    (in_tmp / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    dm = ColoredDigits(**data["init_args"])
    model = DML(num_classes=10, num_groups=2, input_dim=3, encoder="conv", encoder_kwargs={"width": 8, "out_dim": 16},
                embed_dim=16)
    trainer = L.Trainer(**quiet_trainer_kwargs(max_steps=3, limit_val_batches=0))
    trainer.fit(model, datamodule=dm)
    trainer.save_checkpoint(in_tmp / "m.ckpt")
    report = main(["--ckpt", str(in_tmp / "m.ckpt"), "--config", str(in_tmp / "cfg.yaml"), "--out",
                   str(in_tmp / "out"), "--classifiers", "lr", "kmeans", "--k", "1", "4"])
    saved = json.loads((in_tmp / "out" / "report.json").read_text())
    assert saved["meta"]["embedding"] == "z" and saved["meta"]["method"] == "DML"
    for key in ("recall@1", "recall@4/red", "nmi_gap_worst_vs_rest", "ukl/green", "lr/accuracy_gap_majority_minority",
                "kmeans/recall/red"):
        assert key in report and key in saved["metrics"]
    assert 0.0 <= report["recall@1"] <= report["recall@4"] <= 1.0
    with pytest.raises(SystemExit, match="not found"):
        main(["--ckpt", str(in_tmp / "nope.ckpt"), "--config", str(in_tmp / "cfg.yaml")])
