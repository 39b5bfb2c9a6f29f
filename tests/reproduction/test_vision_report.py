"""The vision benchmark's protocols and its results file, on a tiny synthetic fixture (no training): the realised
stereotype, the summary table first with one verdict per claim, planted effects decided as planted, and
``--render`` reproducing the file from the raw results."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

HEADER = ("| claim | protocol | paper effect | our effect [95% CI] | Holm p | MDE | holds-MDE | "
          "utility change [95% CI] | baseline bias vs null | verdict |")


def _biased_preds(y, a, rng, flip_counter: float, noise: float = 0.03) -> list[int]:
    """Correct labels, except counter-stereotyped rows (a != y) flipped with probability ``flip_counter``."""
    p = y.copy()
    flip = ((a != y) & (rng.random(len(y)) < flip_counter)) | (rng.random(len(y)) < noise)
    p[flip] = 1 - p[flip]
    return p.tolist()


def _fixture(seeds: int = 3, n: int = 160) -> dict:
    from vision_fairness import METHODS

    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], n // 2)
    a = np.tile([0, 1], n // 2)
    labels = {"val": [y.tolist(), a.tolist()], "test": [y.tolist(), a.tolist()]}
    # planted: CE-type baselines biased (40% of counter-stereotyped rows wrong); Con_* (l2 h) unbiased; the rest as
    # biased as their baseline
    flip = {name: 0.4 for name in METHODS}
    flip["Con_* (l2 h, Shen)"] = 0.0
    parts: dict = {"paper": {}, "dto": {}}
    for rule in parts:
        for name, (family, _, _, how) in METHODS.items():
            runs = []
            for s in range(seeds):
                rep = {"selected_epoch": float(s), "fit_seconds": 1.0,
                       "rule": {"shen": "shen", "chi": "chi"}.get(how, "fixed") if rule == "paper" else "dto",
                       "test_pred": _biased_preds(y, a, rng, flip[name]),
                       "val_pred": _biased_preds(y, a, rng, flip[name])}
                if family in ("shen", "chi"):
                    rep["leakage_h"] = 0.9 + 0.01 * rng.random()
                if family == "ssl":
                    rep.update(cluster_dominance=0.30 + 0.01 * rng.random(), cluster_entropy=1.9,
                               probe_accuracy=0.8)
                if family == "dml":
                    rep.update({"recall@1": 0.9, "recall@1/red": 0.88, "recall@1/green": 0.92, "nmi": 0.5})
                runs.append(rep)
            parts[rule][name] = runs
    info = {s: {"rows": n, "p_a_eq_y": 0.5, "counts": {"<5/red": n // 4}} for s in ("train", "val", "test")}
    cfg = {"seeds": list(range(seeds)), "bias": 0.8, "digits_size": 8, "utk_size": 32, "utk_fractions": [0.2, 0.25],
           "encoder": {"digits": {"encoder": "conv", "encoder_kwargs": {"width": 16, "out_dim": 128}}},
           "epochs": {"digits": {"shen": 4, "chi": 3, "dml": 2, "ssl": 3}}, "ssl_pretrain": 0.5, "chi_stage1": 0.6,
           "batch": {"shen": 1024, "chi": 128, "dml": 64, "ssl": 128}, "lr": {"shen": 3e-3, "chi": 1e-3},
           "dml": {"samples_per_class": 32}, "ssl": {"temperature": 0.5, "num_clusters": 4, "epsilon": 0.1}}
    return {"argv": ["--seeds", "3", "--out", "/somewhere/v.md"], "quick": False, "cfg": cfg, "when": "2026-01-01",
            "info": {"digits": info}, "labels": {"digits": labels}, "parts": {"digits": parts},
            "seconds": {"digits": 60.0}, "total": 60.0}


def _summary(md: str) -> list[str]:
    lines = md.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    assert lines[first] == HEADER  # the summary is the first table of the file
    rows = []
    for ln in lines[first + 2:]:
        if not ln.startswith("|"):
            break
        rows.append(ln)
    return rows


def test_vision_report_fixture_verdicts_and_render(tmp_path):
    from _vision_report import CLAIMS, save_raw
    from vision_fairness import main

    raw = _fixture()
    path = tmp_path / "vision_fairness.json.gz"
    save_raw(path, raw)
    out = tmp_path / "vision_fairness.md"
    main(["--render", str(path), "--out", str(out)])
    md = out.read_text()
    lines = md.splitlines()
    assert lines[0].startswith("# Fair image representations")
    at = next(i for i, ln in enumerate(lines[:12]) if ln.startswith("Regenerate"))
    assert "`.venv/bin/python benchmarks/vision_fairness.py --seeds 3`" in lines[at]  # --out is not shown
    assert lines[at + 1].startswith("Wall time of this run: **1.0 min**")
    rows = _summary(md)
    assert len(rows) == len(CLAIMS)
    verdicts = ("holds", "contradicted", "does not hold", "inconclusive", "untestable", "degenerate")
    assert all(sum(f"**{v}**" in r for v in verdicts) == 1 for r in rows)
    by = {r.split(" | ")[0].lstrip("| "): r for r in rows}
    # planted: Con_* removes a real 40%-of-counter-rows bias at no accuracy cost
    assert "**holds**" in by["Shen: Con_* (l2 h, Shen) lowers GAP vs CE (full batch) (digits)"]
    # as biased as its baseline (the bias is real on test and validation): no significant change
    row = by["finDML: PARADE lowers the per-(class, group) Recall@1 gap (GAP of the 1-NN label) vs DML (digits)"]
    assert "(null 95%" in row and ("**does not hold**" in row or "**inconclusive**" in row)
    # cluster dominance has no attribute null: said so in the bias column
    assert "no null (the statistic does not involve the attribute)" in by[
        "Martin: FairSampling (weighted) lowers cluster dominance vs SimCLR (digits)"]
    assert "## The same claims at the epoch of lowest validation DTO" in md
    assert "P(a = y)" in md and "selected epoch per seed" in md
    assert (tmp_path / "vision_fairness_tradeoff.png").is_file()
    # --render again: the same file
    again = tmp_path / "again.md"
    main(["--render", str(path), "--out", str(again)])
    assert again.read_text().replace("again_tradeoff", "vision_fairness_tradeoff") == md


def test_stereo_digits_realised_association():
    from _vision_protocols import StereoDigits, describe

    dm = StereoDigits(bias=0.8, size=8, seed=0)
    info = describe(dm.splits, dm.class_names, dm.group_names)
    assert abs(info["train"]["p_a_eq_y"] - 0.8) < 0.005
    for split in ("val", "test"):
        counts = np.array(list(info[split]["counts"].values())).reshape(2, 2)  # label × colour
        assert np.abs(counts[:, 0] - counts[:, 1]).max() <= 1  # every label split evenly over the colours
    # the colour is painted from the attribute: red rows have no green channel above the red one
    x, a = dm.splits["test"].x, dm.splits["test"].a
    red = x[a == 0]
    assert float((red[:, 1] - red[:, 0]).max()) <= 0.0


def test_stereo_utkface_realised_association(data_dir):
    from _vision_protocols import StereoUTKFace, describe

    root = Path(data_dir) / "utkface_subset"
    if not (root / "labels.csv").is_file():
        pytest.skip("UTKFace subset absent")
    dm = StereoUTKFace(str(root), bias=0.8, image_size=8, cache=False, val_fraction=0.2, test_fraction=0.25, seed=0)
    info = describe(dm.splits, dm.class_names, dm.group_names)
    assert dm.group_names == ["White", "Black"]
    assert abs(info["train"]["p_a_eq_y"] - 0.8) < 0.01
    for split in ("val", "test"):
        assert info[split]["p_a_eq_y"] == 0.5
        assert len(set(info[split]["counts"].values())) == 1  # balanced cells


def test_merge_runs_replaces_only_the_rerun_and_records_reproduction():
    from vision_fairness import merge_runs

    def rep(pred, leak=None):
        return {"test_pred": pred, **({"val_leakage_h": leak} if leak is not None else {})}

    saved = {"parts": {"digits": {"paper": {"CE": [rep([0, 1]), rep([1, 1])], "M": [rep([0, 0]), rep([1, 0])]}}}}
    new = {"when": "2026-11-25", "argv": ["--methods", "CE"], "total": 60.0,
           "parts": {"digits": {"paper": {"CE": [rep([0, 1], 0.7), rep([0, 0], 0.6)]}}}}
    out = merge_runs(saved, new, lambda msg: None)
    assert [r["val_leakage_h"] for r in out["parts"]["digits"]["paper"]["CE"]] == [0.7, 0.6]
    assert out["parts"]["digits"]["paper"]["M"] == [rep([0, 0]), rep([1, 0])]  # the others are kept
    assert out["reruns"][0]["same_test_predictions"] == 1 and out["reruns"][0]["runs"] == 2
    from _vision_report import reruns_line

    assert "1 of 2 runs reproduce the saved test predictions" in reruns_line(out)
    bad = {**new, "parts": {"digits": {"paper": {"CE": [rep([0, 1])]}}}}  # fewer seeds than saved
    with pytest.raises(SystemExit, match="no 1 runs of 'CE'"):
        merge_runs(saved, bad, lambda msg: None)
