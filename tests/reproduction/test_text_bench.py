"""benchmarks/reproduction/text_bench.py: the grid comes from ``faircl/bench/grids/text.yaml``, its invocations name
shipped protocols with each part's two-stage budget (the protocols' share of their epochs), and the results file has one
row per claim of a method's protocol, its control beside it."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from faircl.bench.spec import load_suite

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks" / "reproduction"))

import _bench_grid  # noqa: E402
import text_bench  # noqa: E402


def test_the_grid_is_the_yaml_file():
    import yaml

    data = yaml.safe_load((_bench_grid.GRIDS / "text.yaml").read_text())
    assert list(text_bench.METHODS) == list(data["methods"]) and "Con_*^ft" in text_bench.METHODS
    assert text_bench.PARTS["b1024"] == ("synthbios_minilm_b1024",)
    assert text_bench.PARTS["shen_dto"] == ("synthbios_minilm_dto",)  # no twin of the permuted control


def test_a_bad_grid_is_one_line_naming_the_file_and_key(tmp_path):
    with pytest.raises(SystemExit, match=r"nothing\.yaml: no such grid"):
        _bench_grid.load_grid("nothing", folder=tmp_path)
    (tmp_path / "g.yaml").write_text("parts: {}\n")
    with pytest.raises(SystemExit, match=r"g\.yaml: missing key 'methods'"):
        _bench_grid.load_grid("g", folder=tmp_path)
    (tmp_path / "g.yaml").write_text("methods:\n  CE: {init_args: {}}\n")
    with pytest.raises(SystemExit, match=r"g\.yaml: methods\.CE: expected a mapping with a 'class' key"):
        _bench_grid.load_grid("g", folder=tmp_path)


def _protocol(name, share, epochs):
    return SimpleNamespace(name=name, source=f"{name}.yaml", stage1_share=share, trainer={"max_epochs": epochs})


def test_the_stage1_rule_is_the_protocols():
    """A two-stage method's stage-1 budget is its protocols' rule (``stage1_share`` × ``max_epochs``), not the
    front-end's: a protocol without the rule, or protocols of one invocation with different budgets, stop the script
    naming them."""
    method = {"class": "TwoStageCL", "init_args": {"lambda_cs": 1.0}, "stage1_from_share": True}
    assert _bench_grid.stage1_epochs(method, [_protocol("a", 0.6, 15), _protocol("b", 0.6, 15)]) == {
        "lambda_cs": 1.0, "stage1_epochs": 9}
    assert _bench_grid.stage1_epochs(method, [_protocol("a", 0.5, 15)])["stage1_epochs"] == 8  # round(0.5 × 15)
    with pytest.raises(SystemExit, match=r"a\.yaml: no stage1_share"):
        _bench_grid.stage1_epochs(method, [_protocol("a", None, 15)])
    with pytest.raises(SystemExit, match="different stage-1 budgets"):
        _bench_grid.stage1_epochs(method, [_protocol("a", 0.6, 15), _protocol("b", 0.6, 60)])
    plain = {"class": "OneStageCL", "init_args": {}}
    assert _bench_grid.stage1_epochs(plain, [_protocol("a", None, 15)]) == {}


def test_the_shipped_protocols_carry_the_stage1_share(monkeypatch):
    assert text_bench.PROTOCOLS["synthbios_minilm"].stage1_share == 0.6
    assert text_bench.PROTOCOLS["synthbios_minilm_b1024_dto"].stage1_share == 0.6  # inherited through extends
    for name in ("synthbios_minilm", "synthbios_minilm_permuted"):
        monkeypatch.setitem(text_bench.PROTOCOLS, name, replace(text_bench.PROTOCOLS[name], stage1_share=0.5))
    runs = text_bench.invocations(["TwoStageCL"], ["shen", "b1024_dto"])
    assert runs["TwoStageCL"][3]["stage1_epochs"] == 8  # round(0.5 × 15)
    assert "stage1_epochs" not in text_bench.invocations(["OneStageCL"], ["shen"])["OneStageCL"][3]


def test_invocations_name_shipped_protocols_and_set_each_parts_stage_budget():
    shipped = {p.name for p in load_suite("text")}
    runs = text_bench.invocations([], [])
    for _, _, protocols, _, _ in runs.values():
        assert set(protocols) <= shipped
    assert runs["TwoStageCL"][3]["stage1_epochs"] == 9  # part shen: the earlier runs' folder and arguments
    assert runs["INLP"][3]["stage1_epochs"] == 9 and runs["INLP"][3]["n_clf"] == 20
    assert runs["TwoStageCL · bios_chi"][3]["stage1_epochs"] == 18
    assert runs["Con_*^ft · b1024"][3]["stage1_epochs"] == 36
    assert "stage1_epochs" not in runs["OneStageCL · chi"][3]
    assert list(text_bench.invocations(["INLP"], ["bios"])) == ["INLP · bios"]
    # the DTO twins: the parent part's arguments on the `_dto` protocols (no control); part shen_dto for Adv / INLP
    assert runs["Con_*^ft · b1024_dto"][2:4] == (["synthbios_minilm_b1024_dto"], runs["Con_*^ft · b1024"][3])
    assert "INLP · shen_dto" in runs and "TwoStageCL · shen_dto" not in runs
    assert runs["INLP · shen_dto"][2] == ["synthbios_minilm_dto"]


def test_render_writes_each_claim_with_its_control(tmp_path, bench_out):
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
    assert gap == ("| Con_* (l2 h, Shen) lowers tpr_gap_rms vs CE | synthbios_minilm | -17.2 [-23.8, -10.6] | "
                   "**holds** | — | untestable | 2.0 min |")
    assert "-0.1 [-0.4, +0.1]" in leak and "**inconclusive**" in leak
    adv = next(ln for ln in out.read_text().splitlines() if ln.startswith("| Adv lowers eo_gap"))
    assert "| bios_samples_chi | -50.0 [-200.0, +100.0] | **inconclusive** | — |" in adv
    # a partial regeneration (here: nothing run) keeps every row of the file as it stands, and says so
    text_bench.render(tmp_path / "empty", out, {})
    again = out.read_text().splitlines()
    assert [ln for ln in again if ln.startswith(f"| {label} lowers")] == lines and adv in again
    assert "Every row is from the previous regeneration" in out.read_text()


def test_the_hate_speech_part_runs_both_confair_variants():
    for label in ("Con_* (l2 h, Shen)", "Con_* (raw tanh h, fairlib)"):
        inv = text_bench.invocations([label], ["hate"])
        ((_, cls, protocols, args, _),) = inv.values()
        assert cls == "ConFair" and protocols == ["hate_speech_embed"] and "normalize" in args


def test_open_claims_say_the_seeds_they_need_and_their_cpu_cost(tmp_path):
    """The open-claims section: a claim with seeds_needed costs (needed − run) × the CPU per seed of its protocol's
    runs (method and baselines); one that no number of seeds decides says why; decided claims and controls are left
    out."""
    import csv
    import json

    from _bench_grid import open_claims

    folder = tmp_path / "inv"
    folder.mkdir()
    cols = ["claim", "protocol", "verdict", "seeds", "seeds_needed", "rows_needed", "reason"]
    with open(folder / "results.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        w.writerow(["M lowers gap vs CE", "p", "inconclusive", "0 1 2 3", "10", "", "no significant change; 10 seeds "
                    "would decide it with 80% power"])
        w.writerow(["M lowers leakage_h vs CE", "p", "inconclusive", "0 1 2 3", "", "",
                    "no significant change; no number of seeds decides this on these rows"])
        w.writerow(["M lowers dp_gap vs CE", "p", "inconclusive", "0 1 2 3", "16", "9095", "no number of seeds "
                    "decides this on these 280 rows; about 9,095 rows and 16 seeds would"])
        w.writerow(["M lowers gap vs CE", "p_permuted", "inconclusive", "0 1 2 3", "9", "", "x"])
        w.writerow(["M lowers gap vs DML", "p", "holds", "0 1 2 3", "", "", "the gap falls"])
    runs = [{"protocol": "p", "seed": s, "cpu_s": 900.0} for s in range(4) for _ in range(2)]  # 1800 s a seed
    (folder / "bench.json").write_text(json.dumps({"runs": runs}))
    lines = open_claims({"M": folder})
    table = [ln for ln in lines if ln.startswith("| M lowers")]
    assert table == ["| M lowers gap vs CE | p | 4 | 10 | 3.00 |",
                     "| M lowers leakage_h vs CE | p | 4 | — (no number of seeds decides this on these rows) | — |",
                     "| M lowers dp_gap vs CE | p | 4 | 16 on 9,095 test rows | — (more rows than the protocol's) |"]
    assert open_claims({"none": tmp_path / "missing"}) == []


def test_a_partial_regeneration_keeps_rows_and_open_claims_of_invocations_not_run(tmp_path, bench_out):
    """A row kept from the file keeps its cells (a seeds count included); one written before the seeds column gets
    "—" there; the open-claims rows of an invocation not run again stay in that section, not among the verdicts."""
    out = tmp_path / "text_bench.md"
    out.write_text("\n".join([
        "| claim | protocol | Δ [95% CI] | verdict | seeds | control | bench wall time |", "|---|---|---|---|---|---|---|",
        "| Adv lowers tpr_gap_rms vs CE | bios_samples | -3.4 [-8.9, +2.0] | **inconclusive** | 16 (look 2) | — | 0.9 min |",
        "| Adv lowers leakage_h vs CE | bios_samples | -0.2 [-2.2, +1.7] | **inconclusive** | — | 0.9 min |",
        "", "## Open claims: what would decide them", "", "| claim | protocol | seeds run | seeds needed | CPU hours for "
        "the rest |", "|---|---|---|---|---|", "| Adv lowers tpr_gap_rms vs CE | bios_samples | 16 | 40 | 0.50 |", ""]))
    bench_out(tmp_path / "work" / text_bench.slug("INLP"), [
        ("synthbios_minilm", "tpr_gap_rms", "CE", "holds", -0.172, -0.238, -0.106)], 60.0)
    text_bench.render(tmp_path / "work", out, {})
    text = out.read_text()
    verdicts, _, open_section = text.partition("## Open claims")
    adv = [ln for ln in verdicts.splitlines() if ln.startswith("| Adv lowers")]
    assert adv == ["| Adv lowers tpr_gap_rms vs CE | bios_samples | -3.4 [-8.9, +2.0] | **inconclusive** | 16 (look 2) | "
                   "— | 0.9 min |",
                   "| Adv lowers leakage_h vs CE | bios_samples | -0.2 [-2.2, +1.7] | **inconclusive** | — | — | 0.9 min |"]
    assert "| Adv lowers tpr_gap_rms vs CE | bios_samples | 16 | 40 | 0.50 |" in open_section.splitlines()
    assert "previous regeneration" in open_section
