"""benchmarks/reproduction/embedding_bench.py: the grid comes from ``faircl/bench/grids/embeddings.yaml``, the β
ablation gets its table and its picture once two values of β have run, and ``--methods`` names select exactly
(β = 1 is not β = 1.5)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks" / "reproduction"))

import embedding_bench  # noqa: E402

COLUMNS = ["protocol", "gap", "baseline", "verdict", "baseline_gap", "method_gap", "effect", "effect_lo", "effect_hi",
           "utility_change", "utility_lo", "utility_hi", "reason"]


def _invocation(folder: Path, effect: float, verdict: str, utility: float) -> None:
    folder.mkdir(parents=True)
    with open(folder / "results.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS)
        w.writeheader()
        for gap in embedding_bench.SCORES:
            w.writerow({"protocol": "cda_minilm", "gap": gap, "baseline": "original", "verdict": verdict,
                        "baseline_gap": 0.078, "method_gap": 0.078 + effect, "effect": effect,
                        "effect_lo": effect - 0.01, "effect_hi": effect + 0.01, "utility_change": utility,
                        "utility_lo": utility - 0.01, "utility_hi": utility + 0.01, "reason": "planted"})
    (folder / "bench.json").write_text(json.dumps({"wall_s": 60.0}))


def test_beta_ablation_rows_table_and_picture(tmp_path):
    work, out = tmp_path / "work", tmp_path / "results" / "embedding_bench.md"
    out.parent.mkdir()
    _invocation(work / embedding_bench.slug("CCD β=1"), -0.05, "holds", 0.01)
    embedding_bench.render(work, out)
    assert not (out.parent / "embedding_beta.png").exists()  # one β: no ablation to draw
    assert "**The β ablation** (" not in out.read_text()

    _invocation(work / embedding_bench.slug("CCD β=0"), -0.07, "does not hold", -0.04)
    embedding_bench.render(work, out)
    text = out.read_text()
    one = next(ln for ln in text.splitlines() if ln.startswith("| CCD β=1 lowers cced_heldout"))
    zero = next(ln for ln in text.splitlines() if ln.startswith("| CCD β=0 lowers cced_heldout"))
    assert one.startswith("| CCD β=1 lowers cced_heldout vs original | -5.0 [-6.0, -4.0] | **holds** | — | 7.8 → 2.8 |")
    assert "**does not hold**" in zero
    table = [ln for ln in text.splitlines() if ln.startswith(("| 0 |", "| 1 |"))]
    assert len(table) == 2 and "-7.0 [-8.0, -6.0] does not hold" in table[0] and "-4.0 [-5.0, -3.0]" in table[0]
    assert (out.parent / "embedding_beta.png").stat().st_size > 10_000 and "(embedding_beta.png)" in text


def test_the_methods_are_the_grids():
    assert embedding_bench.GRID["protocols"] == ["cda_minilm"]
    assert embedding_bench.METHODS["CCD β=1 ρ=variance"]["init_args"] == {"beta": 1.0, "rho_estimate": "variance"}
    assert embedding_bench.METHODS["untouched (null)"]["class"] == "faircl.methods.ccd.OriginalEncoder"


def test_method_names_select_exactly(monkeypatch, tmp_path):
    ran: list[str] = []
    monkeypatch.setattr(embedding_bench, "run_all", lambda commands: ran.extend(commands) or {})
    monkeypatch.setattr(embedding_bench, "render", lambda *a, **k: None)
    for names, expected in (("CCD β=1", ["CCD β=1"]), ("CCD", ["CCD β=1", "CCD β=0", "CCD β=0.5", "CCD β=1.5", "CCD β=1 ρ=variance"]),
                            ("untouched", ["untouched (null)"])):
        ran.clear()
        monkeypatch.setattr(sys, "argv", ["embedding_bench.py", "--methods", names, "--work", str(tmp_path)])
        embedding_bench.main()
        assert ran == expected, names


def test_a_partial_regeneration_keeps_the_rows_reasons_and_ablation_it_did_not_run(tmp_path):
    work, out = tmp_path / "work", tmp_path / "results" / "embedding_bench.md"
    out.parent.mkdir()
    _invocation(work / embedding_bench.slug("CCD β=1"), -0.05, "holds", 0.01)
    _invocation(work / embedding_bench.slug("CCD β=0"), -0.07, "does not hold", -0.04)
    embedding_bench.render(work, out)
    before = out.read_text().splitlines()
    again = tmp_path / "again"  # a later regeneration that ran only ρ = variance
    _invocation(again / embedding_bench.slug("CCD β=1 ρ=variance"), 0.0, "does not hold", 0.0)
    embedding_bench.render(again, out)
    after = out.read_text().splitlines()
    kept = [ln for ln in before if ln.startswith(("| CCD β=1 lowers", "| CCD β=0 lowers", "- CCD β=1 · ", "| 0 |",
                                                 "| 1 |", "![The β ablation"))]
    assert kept and all(ln in after for ln in kept)
    assert any(ln.startswith("| CCD β=1 ρ=variance lowers cced_heldout") for ln in after)
    assert "Rows of CCD β=1, CCD β=0 are those of the previous regeneration" in out.read_text()
