"""benchmarks/reproduction/vision_bench.py: the grid comes from ``faircl/bench/grids/vision.yaml``, its invocations
name shipped protocols (the permuted control only where the data set has one) with the protocols' two-stage budgets, and
the results file has one row per claim, its control beside it."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from faircl.bench.spec import load_suite

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks" / "reproduction"))

import vision_bench  # noqa: E402


def test_invocations_name_shipped_protocols_and_set_two_stage_budgets():
    shipped = {p.name for p in load_suite("vision")}
    runs = vision_bench.invocations([], list(vision_bench.DATASETS))
    assert len(runs) == 2 * len(vision_bench.METHODS)
    for _, _, protocols, _ in runs.values():
        assert set(protocols) <= shipped
    assert runs["TwoStageCL · digits"][3]["stage1_epochs"] == 12
    assert runs["TwoStageCL · utkface"][3]["stage1_epochs"] == 18
    assert runs["Con_* (l2 h, Shen) · digits"][2] == ["stereo_digits", "stereo_digits_permuted"]
    assert runs["Con_* (l2 h, Shen) · utkface"][2] == ["stereo_utkface"]
    assert list(vision_bench.invocations(["PARADE"], ["digits"])) == ["PARADE · digits"]
    assert runs["FairSampling (sampled) · utkface"][3] == {"negatives": "sampled", "stage1_epochs": 10}  # fixed


def test_the_stage1_share_is_the_protocols(monkeypatch):
    for name in ("stereo_digits_chi", "stereo_digits_chi_lambda0", "stereo_utkface_chi", "stereo_utkface_chi_lambda0"):
        assert vision_bench.PROTOCOLS[name].stage1_share == 0.6  # inherited from the data set's main protocol
        monkeypatch.setitem(vision_bench.PROTOCOLS, name, replace(vision_bench.PROTOCOLS[name], stage1_share=0.5))
    runs = vision_bench.invocations(["TwoStageCL"], ["digits", "utkface"])
    assert runs["TwoStageCL · digits"][3]["stage1_epochs"] == 10  # round(0.5 × 20)
    assert runs["TwoStageCL · utkface"][3]["stage1_epochs"] == 15


def test_render_writes_each_claim_with_its_control(tmp_path, bench_out):
    work = tmp_path / "work"
    bench_out(work / vision_bench.slug("Con_* (l2 h, Shen) · digits"), [
        ("stereo_digits", "tpr_gap_rms", "CE", "holds", -0.05, -0.08, -0.02),
        ("stereo_digits", "leakage_h", "CE", "holds", -0.40, -0.44, -0.36),
        ("stereo_digits_permuted", "tpr_gap_rms", "CE", "untestable", 0.0, -0.01, 0.01)], 90.0)
    bench_out(work / vision_bench.slug("PARADE · utkface"), [
        ("stereo_utkface_knn", "tpr_gap_rms", "DML", "inconclusive", 0.01, -0.04, 0.06)], 90.0)
    bench_out(work / vision_bench.slug("FairSampling (weighted) · digits"), [
        ("stereo_digits_probe", "tpr_gap_rms", "SimCLR", "inconclusive", 0.02, -0.03, 0.07),
        ("stereo_digits_probe", "cluster_dominance", "SimCLR", "inconclusive", 0.03, -0.01, 0.07)], 90.0)
    out = tmp_path / "vision_bench.md"
    vision_bench.render(work, out)
    text = out.read_text()
    gap = next(ln for ln in text.splitlines()
               if ln.startswith("| Con_* (l2 h, Shen) lowers tpr_gap_rms vs CE (digits)"))
    assert gap.endswith("| -5.0 [-8.0, -2.0] | **holds** | — | untestable | 1.5 min |")
    leak = next(ln for ln in text.splitlines() if ln.startswith("| Con_* (l2 h, Shen) lowers leakage_h"))
    assert "-40.0 [-44.0, -36.0]" in leak
    knn = next(ln for ln in text.splitlines() if ln.startswith("| PARADE lowers tpr_gap_rms vs DML (utkface)"))
    assert "+1.0 [-4.0, +6.0]" in knn and "| — |" in knn
    cluster = next(ln for ln in text.splitlines()
                   if ln.startswith("| FairSampling (weighted) lowers cluster_dominance vs SimCLR (digits)"))
    assert "| +3.0 [-1.0, +7.0] | **inconclusive** |" in cluster
    assert "Wall time of the bench invocations' own runs: 4.5 min" in text
    # a partial regeneration (here: nothing run) keeps every row of the file as it stands, and says so
    vision_bench.render(tmp_path / "empty", out)
    assert gap in out.read_text().splitlines() and "are those of the previous regeneration" in out.read_text()
