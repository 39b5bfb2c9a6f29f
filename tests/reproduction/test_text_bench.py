"""benchmarks/text_bench.py: every method and part of the grid finds its script rows in the committed
text_fairness.md, its invocations name shipped protocols with each part's two-stage budget, and the results file
pairs each bench claim with the script's claim of the same method, protocol cell and kind."""

from __future__ import annotations

import sys
from pathlib import Path

from faircl.bench.spec import load_suite

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import text_bench  # noqa: E402


def test_every_method_and_part_has_its_script_rows():
    """Each (method, part), the DTO twins included, finds exactly one script row per claim of its protocol, and the
    DTO parts together use every row of the script's second family."""
    rows = text_bench.before_rows()
    protocols = {p.name: p for p in load_suite("text")}
    used = set()
    for label, (_, _, prefix, _) in text_bench.METHODS.items():
        for part in text_bench.method_parts(label):
            cell = text_bench.PARTS[part][2]
            gap = protocols[text_bench.PARTS[part][0][0]].claims[0].gap
            mine = [r for r in rows if text_bench._matches(r, prefix, cell, gap)]
            if part == "shen" and label.split()[0] in ("TwoStageCL", "OneStageCL", "DiverseAdv"):
                assert not mine, label  # Chi's methods have no row at Shen's rule in the script
                continue
            if part == "grid" and label not in ("TwoStageCL λ=1 τ=0.1", "TwoStageCL λ=10 τ=0.1"):
                continue  # the script's summary carries two of the grid's claims
            assert len(mine) == 1 and mine[0]["effect"] and mine[0]["verdict"], (label, part)
            assert mine[0]["protocol"].endswith("dto selection") == part.endswith("_dto"), (label, part)
            used.update((r["claim"], r["protocol"]) for r in mine)
    second = [r for r in rows if r["protocol"].endswith("dto selection")]
    assert len(second) == 32
    assert {(r["claim"], r["protocol"]) for r in second if "Leak@h" not in r["claim"]} <= used
    shen = [r for r in rows if text_bench._matches(r, "Shen: Con_* (l2 h, Shen)", text_bench.SYNTH_SHEN, "leakage_h")]
    assert len(shen) == 1 and "Leak@h" in shen[0]["claim"]
    # Shen's and Chi's claims share a DTO cell: the measure tells them apart
    dto_cell = text_bench.PARTS["chi_dto"][2]
    assert dto_cell == text_bench.PARTS["shen_dto"][2] == "SynthBios two-class, MiniLM; dto selection"
    gap = [r["claim"] for r in rows if text_bench._matches(r, "(baseline): INLP", dto_cell, "tpr_gap_rms")]
    eo = [r["claim"] for r in rows if text_bench._matches(r, "(baseline): INLP", dto_cell, "eo_gap")]
    assert gap == ["Shen (baseline): INLP lowers GAP vs CE"] and eo == ["Chi (baseline): INLP lowers the EO gap vs CE"]


def test_invocations_name_shipped_protocols_and_set_each_parts_stage_budget():
    shipped = {p.name for p in load_suite("text")}
    runs = text_bench.invocations([], [])
    for _, _, protocols, _, _ in runs.values():
        assert set(protocols) <= shipped
    assert runs["TwoStageCL"][3]["stage1_epochs"] == 9  # part shen: the earlier runs' folder and arguments
    assert runs["TwoStageCL · bios_chi"][3]["stage1_epochs"] == 18
    assert runs["Con_*^ft · b1024"][3]["stage1_epochs"] == 36
    assert "stage1_epochs" not in runs["OneStageCL · chi"][3]
    assert list(text_bench.invocations(["INLP"], ["bios"])) == ["INLP · bios"]
    # the DTO twins: the parent part's arguments on the `_dto` protocols (no control); part shen_dto for Adv / INLP
    assert runs["Con_*^ft · b1024_dto"][2:4] == (["synthbios_minilm_b1024_dto"], runs["Con_*^ft · b1024"][3])
    assert "INLP · shen_dto" in runs and "TwoStageCL · shen_dto" not in runs
    assert runs["INLP · shen_dto"][2] == ["synthbios_minilm_dto"]


def test_render_pairs_before_and_after(tmp_path, bench_out):
    label = "Con_* (l2 h, Shen)"
    bench_out(tmp_path / "work" / text_bench.slug(label), [
        ("synthbios_minilm", "tpr_gap_rms", "CE", "holds", -0.172, -0.238, -0.106),
        ("synthbios_minilm", "leakage_h", "CE", "inconclusive", -0.001, -0.004, 0.001),
        ("synthbios_minilm_permuted", "tpr_gap_rms", "CE", "untestable", 0.007, -0.005, 0.02),
        ("synthbios_minilm_permuted", "leakage_h", "CE", "untestable", 0.004, -0.012, 0.02)], 120.0)
    bench_out(tmp_path / "work" / text_bench.slug("Adv · bios_chi"), [
        ("bios_samples_chi", "eo_gap", "CE", "inconclusive", -0.5, -2.0, 1.0)], 120.0)
    out = tmp_path / "text_bench.md"
    text_bench.render(tmp_path / "work", out, {})
    lines = [ln for ln in out.read_text().splitlines() if ln.startswith(f"| {label} lowers")]
    assert len(lines) == 2  # the main protocol's two claims; the control goes into its own column
    gap, leak = lines
    assert "-7.6 [-11.8, -3.4]" in gap and "inconclusive" in gap and "-17.2 [-23.8, -10.6]" in gap
    assert "**holds**" in gap and "| untestable |" in gap and "2.0 min" in gap
    assert "-0.1 [-0.4, +0.1]" in leak and "**inconclusive**" in leak
    adv = next(ln for ln in out.read_text().splitlines() if ln.startswith("| Adv lowers eo_gap"))
    assert "| bios_samples_chi | -92.4 [-271.5, +86.7] | inconclusive |" in adv and "-50.0 [-200.0, +100.0]" in adv
    # a partial regeneration (here: nothing run) keeps every row of the file as it stands, and says so
    text_bench.render(tmp_path / "empty", out, {})
    again = out.read_text().splitlines()
    assert [ln for ln in again if ln.startswith(f"| {label} lowers")] == lines and adv in again
    assert "Every row is from the previous regeneration" in out.read_text()


def test_the_hate_speech_part_finds_the_scripts_rows():
    rows = text_bench.before_rows()
    for label in ("Con_* (l2 h, Shen)", "Con_* (raw tanh h, fairlib)"):
        inv = text_bench.invocations([label], ["hate"])
        ((_, _, protocols, args, _),) = inv.values()
        assert protocols == ["hate_speech_embed"] and "normalize" in args
        prefix, cell = text_bench.METHODS[label][2], text_bench.PARTS["hate"][2]
        assert len([r for r in rows if text_bench._matches(r, prefix, cell, "leakage_h")]) == 1
