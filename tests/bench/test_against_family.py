"""``--against`` answers its own question: its claims form a family of their own, so adding them leaves every
verdict against the protocol's baseline unchanged; their utility is judged against the protocol's baseline; and an
other method with no bias left says so."""

from __future__ import annotations

import numpy as np

from faircl.bench import results
from faircl.bench.results import ClaimRow, decide_bench
from faircl.bench.spec import Claim, Protocol
from faircl.eval.statistics import BiasTest
from faircl.eval.verdicts import ClaimEvidence, paired_seed_comparison


def _protocol() -> Protocol:
    return Protocol(name="p", version=1, input_kind="features", data={"class_path": "BiasedFeatures"}, model={},
                    trainer={"max_epochs": 1}, baselines={"CE": {"class_path": "CE"}, "Other": {"class_path": "X"}},
                    claims=[Claim("tpr_gap_rms", "CE"), Claim("tpr_gap_rms", "Other", against=True)], seeds=5)


def _row(baseline: str, against: bool) -> ClaimRow:
    return ClaimRow("p", False, "", "tpr_gap_rms", baseline, "M", list(range(5)), 0.2, 0.1, 0.8, 0.8, None,
                    extra={"against": against})


def _fake(monkeypatch, claims):
    monkeypatch.setattr(results, "read_protocol_runs", lambda p, tasks, label: None)
    monkeypatch.setattr(results, "_evidence", lambda p, read, *a: claims)


def test_adding_against_claims_leaves_the_primary_verdicts_unchanged(monkeypatch):
    z = np.zeros(5)
    util_ce = paired_seed_comparison(z + 0.8, z + 0.8 + np.array([-0.01, 0.0, 0.01, 0.0, 0.005]))
    borderline = paired_seed_comparison(z, np.array([-0.03, -0.01, -0.025, -0.02, -0.015]))
    primary = (_row("CE", False), ClaimEvidence("M lowers tpr_gap_rms vs CE", borderline, util_ce, -0.045), 0.02)
    _fake(monkeypatch, [primary])
    alone = decide_bench([_protocol()], {}, "M")
    strong = paired_seed_comparison(z, np.array([-0.2, -0.21, -0.19, -0.2, -0.2]))
    lost = paired_seed_comparison(z + 0.8, z + 0.75)  # a utility change against Other that the rule must not use
    against = [(_row("Other", True), ClaimEvidence(f"M lowers tpr_gap_rms vs Other {k}", strong, lost), 0.02)
               for k in range(5)]
    _fake(monkeypatch, [(_row("CE", False), primary[1], 0.02)] + against)
    both = decide_bench([_protocol()], {}, "M")
    a, b = alone[0].verdict, both[0].verdict
    assert (a.verdict, a.direction, a.size, a.confidence, a.effect.lo) == (b.verdict, b.direction, b.size,
                                                                          b.confidence, b.effect.lo)
    assert a.confidence == 1 - 0.05 / 2            # a family of one, not of six
    for row in both[1:]:  # judged with the utility against CE (kept), not against Other (lost)
        assert row.verdict.utility_axis == "kept" and row.extra["utility_vs"] == "CE"


def test_an_other_method_with_no_bias_left_says_so(monkeypatch):
    z = np.zeros(5)
    u = paired_seed_comparison(z + 0.8, z + 0.8)
    e = paired_seed_comparison(z, z - 0.01)
    none = BiasTest(0.0, 0.01, 0.005, 1.0)
    _fake(monkeypatch, [(_row("CE", False), ClaimEvidence("vs CE", e, u), 0.02),
                        (_row("Other", True), ClaimEvidence("vs Other", e, u, bias=(none,)), 0.02)])
    rows = decide_bench([_protocol()], {}, "M")
    assert rows[1].verdict.verdict == "untestable"
    assert rows[1].verdict.reason.startswith("Other has no bias beyond chance left to improve on")
