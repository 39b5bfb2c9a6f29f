"""The looks of ``faircl bench --max-seeds``: more seeds only for protocols with an open claim, a claim's verdict from
the look that decided it, the levels of :func:`faircl.eval.sequential.look_levels`, runs reused across looks; and
``--against`` adds claims against another method in the same family."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

import faircl.bench.looks as looks
from faircl.cli.bench import _with_against
from faircl.bench.results import ClaimRow
from faircl.bench.runner import MethodSpec
from faircl.bench.spec import Claim, Protocol
from faircl.eval.sequential import look_levels


def _protocol(name: str, seeds: int = 3) -> Protocol:
    return Protocol(name=name, version=1, input_kind="features", data={"class_path": "BiasedFeatures"}, model={},
                    trainer={"max_epochs": 1}, baselines={"CE": {"class_path": "CE"}},
                    claims=[Claim("tpr_gap_rms", "CE")], seeds=seeds)


@dataclass(frozen=True)
class _Verdict:  # what the looks read of a verdict
    verdict: str
    reason: str

    @property
    def final(self) -> bool:
        return self.verdict != "inconclusive"


def _row(protocol: str, seeds: int, verdict: str) -> ClaimRow:
    v = _Verdict(verdict, f"{verdict} at {seeds}")
    return ClaimRow(protocol, False, f"M lowers tpr_gap_rms vs CE on {protocol}", "tpr_gap_rms", "CE", "M",
                    list(range(seeds)), 0.1, 0.1, 0.8, 0.8, v)


@pytest.fixture
def faked(monkeypatch, tmp_path):
    """The looks over three protocols whose claims a stand-in rule decides from the seeds they have: ``early`` at
    its first look, ``late`` from 12 seeds on, ``never`` never; no run trains."""
    ran: list[tuple[str, int]] = []
    levels: list[float] = []
    closed: list[set[str]] = []
    rule = {"early": lambda n: "reproduces", "late": lambda n: "no fall shown" if n >= 12 else "inconclusive",
            "never": lambda n: "inconclusive"}

    def run_tasks(tasks, **kwargs):
        ran.extend((t.protocol.name, t.seed) for t in tasks)
        return []

    def decide_bench(protocols, tasks, label, alpha, horizon=None, **kwargs):
        levels.append(alpha)
        closed.append(set(horizon or {}))
        out = []
        for p in protocols:
            n = len({t.seed for t in tasks[p.name]})
            # a decided claim would read otherwise later: its first verdict must stand
            verdict = "inconclusive" if p.name == "early" and n > 3 else rule[p.name](n)
            out.append(_row(p.name, n, verdict))
        return out

    monkeypatch.setattr(looks, "run_tasks", run_tasks)
    monkeypatch.setattr(looks, "decide_bench", decide_bench)
    said: list[str] = []
    found = looks.run_looks([_protocol("early"), _protocol("late"), _protocol("never")], MethodSpec("M", "CE"),
                            {"early": 3, "late": 3, "never": 3}, 20, tmp_path / "out", tmp_path / "cache",
                            say=said.append)
    return found, ran, levels, said, closed


def test_only_protocols_with_an_open_claim_get_more_seeds(faked):
    found, ran, levels, _, _ = faked
    assert [k.seeds["never"] for k in found.looks] == [3, 6, 12, 20]
    assert found.seeds == {"early": 3, "late": 12, "never": 20}
    assert max(s for p, s in ran if p == "early") == 2  # decided at the first look: seeds 0-2 only
    assert max(s for p, s in ran if p == "late") == 11 and max(s for p, s in ran if p == "never") == 19
    # the words of the protocols still open look ahead to their cap (none at the last look)
    assert faked[4] == [{"early", "late", "never"}, {"late", "never"}, {"late", "never"}, set()]


def test_a_verdict_comes_from_the_look_that_decided_it_at_that_looks_level(faked):
    found, _, levels, _, _ = faked
    assert levels == look_levels(4, 0.05) and math.isclose(sum(levels), 0.05)
    by = {r.protocol: r for r in found.rows}
    assert by["early"].verdict.verdict == "reproduces" and by["early"].extra["look"] == 1
    assert "decided at look 1 of 4 (3 seeds, level 0.025)" in by["early"].verdict.reason
    assert by["late"].verdict.verdict == "no fall shown" and by["late"].extra["look"] == 3
    assert by["never"].verdict.verdict == "inconclusive" and "still open after look 4 of 4 (20 seeds" in \
        by["never"].verdict.reason


def test_progress_says_which_protocols_wait_for_which_seeds(faked):
    said = faked[3]
    first = next(s for s in said if s.startswith("faircl bench: after look 1"))
    assert "1 of 3 claims final" in first and "late (1 claims) waits for seeds 3–5" in first
    assert "early" not in first.split("open:")[1]
    assert said[-1] == "faircl bench: after look 4, 2 of 3 claims final; 1 stay open at the cap"


def test_without_a_cap_the_design_is_fixed(monkeypatch, tmp_path):
    monkeypatch.setattr(looks, "run_tasks", lambda tasks, **kw: [])
    monkeypatch.setattr(looks, "decide_bench", lambda protocols, tasks, label, alpha, **kw: [
        _row(p.name, len({t.seed for t in tasks[p.name]}), "inconclusive") for p in protocols])
    found = looks.run_looks([_protocol("a", 5)], MethodSpec("M", "CE"), {"a": 5}, None, tmp_path, tmp_path)
    assert len(found.looks) == 1 and found.looks[0].level == 0.05 and found.seeds == {"a": 5}
    assert found.rows[0].verdict.reason == "inconclusive at 5"  # no look said in a fixed design


def test_against_adds_the_claims_against_another_method_as_a_cached_baseline():
    p = _protocol("a")
    p.claims.append(Claim("dp_gap", "CE", paper_effect=-0.1, leakage=True))
    said: list[str] = []
    q = _with_against(p, ["ConFair", "CE"], said.append)
    assert q.baselines["ConFair"] == {"class_path": "faircl.methods.confair.ConFair"}
    added = q.claims[2:]
    assert [(c.gap, c.baseline, c.paper_effect, c.leakage, c.against) for c in added] == [
        ("tpr_gap_rms", "ConFair", None, False, True), ("dp_gap", "ConFair", None, True, True)]  # leakage kept
    assert "a claims against it already" in said[-1]
    assert p.claims[:2] == q.claims[:2] and "ConFair" not in p.baselines  # the protocol itself is not changed
    views = _with_against(p, ["FairSamplingSimCLR"], said.append)  # needs views this protocol has not
    assert views.claims == p.claims and "needs two augmented views" in said[-1]


def test_against_an_unknown_method_is_one_line_naming_the_option():
    from faircl.runs.user_error import UserError

    with pytest.raises(UserError, match=r"^bench: --against 'Nope' is not a faircl method \(Adversarial"):
        _with_against(_protocol("a"), ["Nope"], print)
