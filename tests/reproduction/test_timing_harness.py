"""The benchmarks' timing harness (``benchmarks/performance/_timing.py``): rotated interleaved rounds, warm-up not counted,
self-timed contenders, medians and paired ratios, and the busy mark from the load beside every figure."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "performance"))
import _timing as T


def test_rounds_rotate_warmup_is_not_counted_and_self_timed_results_are_used(monkeypatch):
    monkeypatch.setattr(T, "load_sample", lambda: (0.5, 1))
    order = []
    contenders = {"a": lambda: order.append("a"), "b": lambda: (order.append("b"), (2.0, 1.0))[1],
                  "c": lambda: order.append("c")}
    out = T.measure(contenders, rounds=3, warmup=1)
    assert order == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert [len(t.wall) for t in out.values()] == [3, 3, 3]
    assert out["b"].wall == [2.0] * 3 and out["b"].cpu == [1.0] * 3
    assert out["b"].median("cpu") == 1.0 and out["b"].spread("wall") == (2.0, 2.0)
    assert not out["a"].busy and out["a"].load_cell() == "0.5 / 1"
    with pytest.raises(ValueError):
        T.measure(contenders, rounds=0)


def test_busy_when_more_runnable_tasks_than_cores_or_load_above_cores(monkeypatch):
    samples = iter([(0.5, 1), (0.5, T.cores() + 1)] + [(0.5, 1)] * 10)
    monkeypatch.setattr(T, "load_sample", lambda: next(samples))
    out = T.measure({"x": lambda: None}, rounds=2, warmup=0)
    t = out["x"]
    assert t.runnable_max == T.cores() + 1 and t.busy and t.load_cell().endswith("**busy**")
    assert "1 of 1 figures were taken on a busy machine" in T.busy_note([t])
    quiet = T.Timing("q", wall=[1.0], cpu=[1.0], load=[0.1], runnable=[1], cores=2)
    loaded = T.Timing("l", wall=[1.0], cpu=[1.0], load=[2.5], runnable=[1], cores=2)
    assert not quiet.busy and loaded.busy
    assert T.busy_note([quiet]).startswith("The machine was quiet")


def test_paired_ratio_is_the_median_of_per_round_ratios():
    a = T.Timing("a", wall=[2.0, 3.0, 10.0], cpu=[1.0, 1.0, 1.0])
    b = T.Timing("b", wall=[1.0, 1.0, 10.0], cpu=[1.0, 2.0, 4.0])
    assert T.paired_ratio(a, b) == (2.0, 1.0, 3.0)
    assert T.paired_ratio(a, b, "cpu") == (0.5, 0.25, 1.0)
    with pytest.raises(ValueError):
        a.values("gpu")


def test_load_sample_reads_proc_loadavg():
    load, run = T.load_sample()
    assert load >= 0 and (run >= 1 or run == -1)
    m = T.machine()
    assert m["cores"] == T.cores() >= 1 and "load average" in T.machine_line(m, m)
