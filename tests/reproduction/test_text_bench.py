"""benchmarks/text_bench.py: the script's verdicts are found for every method of the grid in the committed
text_fairness.md, and the results file pairs each bench claim with the script's claim of the same method and kind."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import text_bench  # noqa: E402


def test_every_method_has_its_script_rows():
    rows = text_bench.before_rows()
    for label, (_, _, prefix) in text_bench.METHODS.items():
        assert prefix in rows, label
        assert all(r["claim"].startswith(prefix + " lowers") and r["effect"] and r["verdict"] for r in rows[prefix])
    shen = rows["Shen: Con_* (l2 h, Shen)"]  # GAP and leakage, first family only (not the DTO family's repeat)
    assert [("Leak@h" in r["claim"]) for r in shen] == [False, True]


def _bench_out(folder: Path, label: str) -> None:
    folder.mkdir(parents=True)
    fields = ["protocol", "gap", "verdict", "effect", "effect_lo", "effect_hi"]
    rows = [("synthbios_minilm", "tpr_gap_rms", "holds", -0.172, -0.238, -0.106),
            ("synthbios_minilm", "leakage_h", "inconclusive", -0.001, -0.004, 0.001),
            ("synthbios_minilm_permuted", "tpr_gap_rms", "untestable", 0.007, -0.005, 0.02),
            ("synthbios_minilm_permuted", "leakage_h", "untestable", 0.004, -0.012, 0.02)]
    with open(folder / "results.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(fields)
        w.writerows(rows)
    (folder / "bench.json").write_text(json.dumps({"wall_s": 120.0}))


def test_render_pairs_before_and_after(tmp_path):
    label = "Con_* (l2 h, Shen)"
    _bench_out(tmp_path / "work" / text_bench.slug(label), label)
    out = tmp_path / "text_bench.md"
    text_bench.render(tmp_path / "work", out, {})
    lines = [ln for ln in out.read_text().splitlines() if ln.startswith(f"| {label} lowers")]
    assert len(lines) == 2  # the main protocol's two claims; the control goes into its own column
    gap, leak = lines
    assert "-7.6 [-11.8, -3.4]" in gap and "inconclusive" in gap and "-17.2 [-23.8, -10.6]" in gap
    assert "**holds**" in gap and "| untestable |" in gap and "2.0 min" in gap
    assert "-0.1 [-0.4, +0.1]" in leak and "**inconclusive**" in leak
