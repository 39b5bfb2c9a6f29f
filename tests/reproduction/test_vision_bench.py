"""benchmarks/vision_bench.py: every method of the grid finds its script rows in the committed vision_fairness.md,
its invocations name shipped protocols, and the results file pairs each bench claim with the script's claim of the
same method, data set and kind (and lists the script's claims the bench does not judge)."""

from __future__ import annotations

import sys
from pathlib import Path

from faircl.bench.spec import load_suite

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import vision_bench  # noqa: E402


def test_every_method_has_its_script_rows_on_both_data_sets():
    rows = vision_bench.before_rows()
    for label, (_, _, _, prefix) in vision_bench.METHODS.items():
        for ds in vision_bench.DATASETS:
            mine = [r for r in rows if r["dataset"] == ds and r["claim"].startswith(prefix + " lowers")]
            assert mine and all(r["effect"] and r["verdict"] for r in mine), (label, ds)


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


def test_render_pairs_before_and_after(tmp_path, bench_out):
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
    assert "-2.9 [-5.0, -0.9]" in gap and "does not hold" in gap and "-5.0 [-8.0, -2.0]" in gap
    assert "**holds**" in gap and "| untestable |" in gap and "1.5 min" in gap
    leak = next(ln for ln in text.splitlines() if ln.startswith("| Con_* (l2 h, Shen) lowers leakage_h"))
    assert "-40.3 [-43.7, -36.8]" in leak
    knn = next(ln for ln in text.splitlines() if ln.startswith("| PARADE lowers tpr_gap_rms vs DML (utkface)"))
    assert "+3.2 [-2.3, +8.7]" in knn and "| — |" in knn
    cluster = next(ln for ln in text.splitlines()
                   if ln.startswith("| FairSampling (weighted) lowers cluster_dominance vs SimCLR (digits)"))
    assert "+5.3 [-1.2, +11.7]" in cluster and "+3.0 [-1.0, +7.0]" in cluster  # the script's, then the bench's
    listed = text.split("does not judge")[1]
    assert "Martin: FairSampling (sampled) lowers cluster dominance vs SimCLR (digits)" in listed  # not run here
    assert "FairSampling (weighted) lowers cluster dominance vs SimCLR (digits)" not in listed  # judged above
    assert "λ = 0" in listed
    assert "Shen: Con_* (l2 h, Shen) lowers GAP vs CE (full batch) (digits)" not in listed
    assert "Wall time of the bench invocations' own runs: 4.5 min" in text
