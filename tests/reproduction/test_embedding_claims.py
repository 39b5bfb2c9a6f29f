"""The embedding benchmark's verdicts from saved per-item outputs (faircl/eval/embedding_claims.py, rendered by
``embedding_fairness.py --render``): a planted bias of the original encoder is found and its claim decided, a
metric without bias reads untestable, CCED says its null is not defined. Synthetic runs, no model: a few seconds."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
HEAD = "CCD β=1"
TESTS = ("sent-weat6", "sent-weat6b", "sent-weat7", "sent-weat7b", "sent-weat8", "sent-weat8b")


@pytest.fixture(scope="module")
def claims():
    from faircl.eval import embedding_claims

    return embedding_claims


def _seat(rng, shift, words=8, per_word=6):
    s, x, cl = [], [], []
    for w in range(2 * words):
        base = rng.normal(0, 0.3) + (shift if w < words else 0.0)
        s += (base + rng.normal(0, 0.05, per_word)).tolist()
        x += [int(w < words)] * per_word
        cl += [w % words] * per_word
    return {"s": s, "x": x, "cluster": cl}


def _items(rng, crows_share, seat_shift):
    crows = np.where(rng.random(200) < crows_share, 1.0, -1.0) * rng.uniform(0.01, 0.1, 200)
    stereo = rng.uniform(0.2, 0.8, (160, 3))  # no preference between stereotype and anti-stereotype
    bias_ir = []
    for q in range(70):
        first = ["M" if rng.random() < 0.5 else "F" for _ in range(4)]
        bias_ir.append({"category": f"c{q % 7}", "m": 2 + first.count("M"), "f": 2 + first.count("F"),
                        "cells": [["MFN", 3], ["FMN", 3]] + [["MFN", 1]] * 4})
    return {"crows": crows.tolist(), "stereoset": stereo.tolist(),
            "seat": {n: _seat(rng, seat_shift) for n in TESTS},
            "seat_words": {n[5:]: _seat(rng, seat_shift, per_word=1) for n in TESTS},
            "bias_ir": bias_ir, "cced": {"a": rng.uniform(0, 0.1, 20).tolist()}}


def _model(items, cced, acc):
    m = {"items": items, "cced_heldout": cced, "cced_in": cced, "utility_accuracy": acc,
         "seat_mean_abs_effect_size": 0.9, "bias_ir_deviation": 0.02, "crows_pairs_embedding_stereo_score": 60.0,
         "stereoset_embedding_ss": 50.0, "rep_distance": 0.0, "cced/a": cced, "cced/b": cced}
    return m


def _saved(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    base_items = _items(rng, 0.85, 1.5)  # CrowS and SEAT biased, StereoSet and Bias-IR not
    runs = []
    for seed in range(3):
        meth_items = {**base_items, "crows": _items(np.random.default_rng(10 + seed), 0.52, 1.5)["crows"]}
        bw = {"rho": 0.4, "zero": 0.0, "zero_unsquared": 0.0, "tiny": 0.0, "median_kernel": 0.6, "dist_median": 0.4,
              "n_tuples": 10}
        runs.append({"seed": seed, "counts": {"train": {"a": 10}, "val": {"a": 2}, "test_in": {"a": 3},
                                              "test_out": {"b": 4}},
                     "models": {"original": _model(base_items, 0.08, 0.60),
                                HEAD: _model(meth_items, 0.02 + 0.001 * seed, 0.61 + 0.001 * seed)},
                     "train_info": {HEAD: [5.0, 0.4, [[1, 0.5]], 0.5]},
                     "bandwidth": {"median": bw, "variance": bw}})
    args = {"threads": 1, "quick": False, "train_list": ["a"], "heldout_list": ["b"], "batch_size": 16, "lr": 5e-5,
            "val_every": 10, "precision": "32-true", "train": 10, "beta_list": [1.0], "seat_max": 0,
            "permutations": 1000}
    meta = {"args": args, "command": ".venv/bin/python benchmarks/embedding_fairness.py", "pools": {"a": 15, "b": 4},
            "polarity": {"a": "ok", "b": "ok"}, "speed": {"fp32": 40.0, "bf16": 100.0}, "total": 60.0,
            "sources": {"a": "source a", "b": "source b"}, "headline": HEAD, "constant_acc": 0.1,
            "eval_sizes": {"seat": 576, "bias_ir": 70, "crows": 200, "stereoset": 160}, "n_probe": 280,
            "n_classes": 28}
    path = tmp_path / "emb.json"
    path.write_text(json.dumps({"runs": runs, "meta": meta}))
    return path


def test_render_judges_every_claim_against_its_null(tmp_path, claims):
    saved = _saved(tmp_path)
    out = tmp_path / "emb.md"
    spec = importlib.util.spec_from_file_location("embedding_fairness_bench", BENCH / "embedding_fairness.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--render", str(saved), "--out", str(out)])
    lines = out.read_text().splitlines()
    assert any(ln.startswith("Regenerate: `.venv/bin/python benchmarks/embedding_fairness.py`") for ln in lines[:12])
    tables = [ln for ln in lines if ln.startswith("|")]
    assert tables[0].startswith("| claim | protocol | paper effect |")  # the verdict table comes first
    rows = {ln.split(" | ")[0][2:]: ln for ln in tables[2:9]}
    crows = rows["CCD moves the CrowS-Pairs score toward 50 (β=1)"]
    assert re.search(r"\| test \d+\.\d \(null 95%: \d+\.\d\); validation \d+\.\d \(null 95%: \d+\.\d\) \|", crows)
    assert "**untestable**" not in crows and "**holds**" in crows  # a planted bias that the method removes
    assert "**untestable**" in rows["CCD moves the StereoSet ss toward 50 (β=1)"]  # no preference planted
    assert "**untestable**" in rows["CCD lowers the Bias-IR deviation (β=1)"]
    seat = rows["CCD lowers the mean SEAT \\|effect size\\| (β=1)"]
    assert "validation (word tests)" in seat and "**untestable**" not in seat
    assert "not defined" in rows["CCD lowers CCED on held-out sources (β=1)"]
    assert "## The original encoder's bias against its null" in lines
    assert any(ln.startswith("Does the verdict hang on the one split") for ln in lines)


def test_half_split_is_disjoint_stratified_and_fixed(claims):
    strata = np.array([0] * 5 + [1] * 4)
    test, val = claims.half_split(9, strata)
    assert sorted(test.tolist() + val.tolist()) == list(range(9))
    assert (strata[test] == 0).sum() == 3 and (strata[test] == 1).sum() == 2
    again, _ = claims.half_split(9, strata)
    assert again.tolist() == test.tolist()


def test_crows_evidence_uses_the_test_half_and_an_exact_null(claims, tmp_path):
    from scipy import stats

    runs = json.loads(_saved(tmp_path).read_text())["runs"]
    ev = claims.evidence(runs, HEAD, "crows_pairs_embedding_stereo_score", 1000, 200)
    prefs = (np.asarray(runs[0]["models"]["original"]["items"]["crows"]) > 0).astype(int)
    test, val = claims.half_split(len(prefs))
    t, v = ev["bias"]
    k = int(prefs[test].sum())
    assert t.observed == pytest.approx(abs(k / len(test) - 0.5))
    assert t.p_value == pytest.approx(stats.binomtest(k, len(test), 0.5).pvalue)
    assert v.observed == pytest.approx(abs(prefs[val].mean() - 0.5))
    # the change: per seed |share − 0.5| of CCD minus the original's, on the test half
    per_seed = [abs((np.asarray(r["models"][HEAD]["items"]["crows"])[test] > 0).mean() - 0.5) - t.observed
                for r in runs]
    assert ev["effect"].mean == pytest.approx(np.mean(per_seed))
    assert ev["effect"].n_rows == len(test)

