"""Claims on a statistic of the test report with no attribute (cluster dominance): parsed from a protocol, paired by
seed, decided in the bench's Holm family; planted effects are found and a method with the baseline's values never
reads holds."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from faircl.bench import results
from faircl.bench.results import decide_bench
from faircl.bench.spec import load_suite
from faircl.runs.user_error import UserError

BASE = """\
name: base
version: 1
input_kind: features
data: {class_path: BiasedFeatures, init_args: {n_train: 200}}
model: {lr: 0.01}
trainer: {max_epochs: 2}
seeds: 6
baselines: {SimCLR: {class_path: SimCLR}}
claims:
  - {gap: tpr_gap_rms, baseline: SimCLR}
  - {statistic: cluster_dominance, baseline: SimCLR, paper_effect: -0.0171}
"""


def _protocol(tmp_path: Path, text: str = BASE):
    (tmp_path / "base.yaml").write_text(textwrap.dedent(text))
    return load_suite(str(tmp_path))[0]


def test_a_statistic_claim_is_read_and_the_shipped_probe_protocols_make_it(tmp_path):
    gap, stat = _protocol(tmp_path).claims
    assert (gap.gap, gap.statistic) == ("tpr_gap_rms", "")
    assert (stat.gap, stat.statistic, stat.paper_effect) == ("cluster_dominance", "cluster_dominance", -0.0171)
    for p in load_suite("vision"):
        stats = [c.statistic for c in p.claims if c.statistic]
        assert stats == (["cluster_dominance"] if p.name.endswith("_probe") else []), p.name


@pytest.mark.parametrize("claim, says", [
    ("{statistic: cluster_dominance, gap: tpr_gap_rms, baseline: SimCLR}", "one of 'gap'"),
    ("{statistic: 'cluster dominance', baseline: SimCLR}", "statistic must name a scalar"),
    ("{statistic: cluster_dominance, baseline: CE}", "names baseline 'CE'"),
])
def test_a_bad_statistic_claim_is_refused(tmp_path, claim, says):
    text = BASE.replace("{statistic: cluster_dominance, baseline: SimCLR, paper_effect: -0.0171}", claim)
    with pytest.raises(UserError) as err:
        _protocol(tmp_path, text)
    assert says in str(err.value) and "base.yaml" in str(err.value)


def _task(setting: str, seed: int, baseline: bool) -> SimpleNamespace:
    return SimpleNamespace(setting=setting, seed=seed, baseline=baseline, done=True,
                           record=lambda: {"wall_s": 1.0, "report": f"{setting}-{seed}"}, folder=Path("."))


def _decide(monkeypatch, tmp_path, base_dom, method_dom, base_acc=None, method_acc=None, missing=()):
    """Decide the protocol's statistic claim from planted per-seed values (the gap claim has no runs with rows and is
    left out by giving the method no gap: only the statistic is exercised)."""
    p = _protocol(tmp_path, BASE.replace("  - {gap: tpr_gap_rms, baseline: SimCLR}\n", ""))
    seeds = range(len(base_dom))
    base_acc = [0.8] * len(base_dom) if base_acc is None else base_acc
    method_acc = [0.8] * len(base_dom) if method_acc is None else method_acc
    values = {}
    for s in seeds:
        values[("SimCLR", s)] = {"cluster_dominance": base_dom[s], "accuracy": base_acc[s]}
        values[("mine", s)] = {"cluster_dominance": method_dom[s], "accuracy": method_acc[s]}
    for key in missing:
        values[key].pop("cluster_dominance")
    tasks = [_task(n, s, n == "SimCLR") for s in seeds for n in ("SimCLR", "mine")]
    def read_run(path):  # the planted report of the task's run
        setting, seed = Path(path).name.rsplit("-", 1)
        return SimpleNamespace(seed=int(seed), test=values[(setting, int(seed))])

    monkeypatch.setattr(results, "read_run", read_run)
    undecided: list[str] = []
    rows = decide_bench([p], {p.name: tasks}, "mine", undecided=undecided)
    return rows, undecided


def test_a_planted_fall_holds_a_planted_rise_is_contradicted(monkeypatch, tmp_path):
    rng = np.random.default_rng(0)
    base = 0.40 + 0.01 * rng.standard_normal(6)
    rows, undecided = _decide(monkeypatch, tmp_path, base, base - 0.05 + 0.002 * rng.standard_normal(6))
    assert not undecided and len(rows) == 1
    (row,) = rows
    assert row.verdict.verdict == "reproduces", row.verdict.reason
    assert row.gap == "cluster_dominance" and row.seeds == list(range(6))
    assert math.isclose(row.verdict.effect.mean, row.method_gap - row.baseline_gap, abs_tol=1e-12)
    assert row.verdict.effect.mean == pytest.approx(-0.05, abs=0.005)
    assert "no attribute null" in row.extra["bias_text"]
    rows, _ = _decide(monkeypatch, tmp_path, base, base + 0.05 + 0.002 * rng.standard_normal(6))
    assert rows[0].verdict.verdict == "contradicted"


def test_the_baselines_own_values_never_read_holds(monkeypatch, tmp_path):
    rng = np.random.default_rng(1)
    base = 0.40 + 0.01 * rng.standard_normal(6)
    for same in (base.copy(), base + 1e-13 * rng.standard_normal(6)):  # exactly and up to round-off
        rows, _ = _decide(monkeypatch, tmp_path, base, same)
        assert rows[0].verdict.verdict in ("no change", "no fall shown", "inconclusive"), rows[0].verdict
    noise = base + 0.01 * rng.standard_normal(6)  # a method no different from the baseline but for seed noise
    rows, _ = _decide(monkeypatch, tmp_path, base, noise)
    assert rows[0].verdict.verdict in ("no change", "no fall shown", "inconclusive"), rows[0].verdict


def test_a_fall_that_costs_utility_does_not_hold(monkeypatch, tmp_path):
    base = np.full(6, 0.40) + np.linspace(0, 0.01, 6)
    rows, _ = _decide(monkeypatch, tmp_path, base, base - 0.05, method_acc=[0.70] * 6)
    assert rows[0].verdict.verdict == "utility lost" and "utility lost" in rows[0].verdict.reason


def test_a_statistic_no_run_reports_is_said_not_decided(monkeypatch, tmp_path):
    base = np.full(3, 0.4)
    missing = [("mine", 0), ("mine", 1), ("mine", 2)]
    rows, undecided = _decide(monkeypatch, tmp_path, base, base - 0.05, missing=missing)
    assert rows == [] and len(undecided) == 1
    assert "cluster_dominance is in the test report of 3 of 3 SimCLR run(s) and 0 of 3 mine run(s)" in undecided[0]
    # one seed with both values is not a paired comparison either
    rows, undecided = _decide(monkeypatch, tmp_path, base, base - 0.05, missing=missing[1:])
    assert rows == [] and "needs 2 seeds" in undecided[0]
