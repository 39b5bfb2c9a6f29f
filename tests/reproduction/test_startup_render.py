"""``benchmarks/startup.py``'s load notes: a busy protocol is named, and the quiet line never claims every figure when
one protocol was busy."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def _quiet(load: float) -> str:
    return ("The machine was quiet for every figure: never more runnable tasks than its 2 core(s), load average at "
            f"most {load:.2f}.")


def test_busy_protocol_is_named_and_the_quiet_line_says_other_protocols():
    from startup import load_notes

    busy = "**1 of 3 figures were taken on a busy machine** (marked busy: …)."
    out = load_notes([("ce, 1 epoch", busy, 1.12), ("confair", _quiet(1.37), 1.37),
                      ("ce, 5 epochs", _quiet(9.5), 9.5), ("text", _quiet(10.2), 10.2)])
    assert out[0] == f"ce, 1 epoch: {busy}"
    assert len(out) == 2
    assert "every figure of the other protocols" in out[1] and out[1].endswith("10.20.")  # by value: 9.50 sorts last as text


def test_all_quiet_gives_one_line_for_every_figure():
    from startup import load_notes

    out = load_notes([("a", _quiet(0.5), 0.5), ("b", _quiet(1.2), 1.2)])
    assert out == [_quiet(1.2)]
    assert load_notes([("a", "", 0.3)]) == []


def test_the_median_interval_covers_the_median_at_its_level_and_falls_back_to_the_range():
    """Planted: samples of a known median (0) from a skewed and a symmetric law; the interval covers it in at least
    ~95% of draws, and is not wider than it needs (below 99% for n = 40). With n = 7 no order statistics reach 95%
    but the range."""
    import numpy as np
    from startup import median_interval

    rng = np.random.default_rng(0)
    for draw in (lambda n: rng.standard_normal(n), lambda n: rng.exponential(1.0, n) - np.log(2)):
        hits = sum(lo <= 0 <= hi for lo, hi in (median_interval(list(draw(40))) for _ in range(3000)))
        assert 0.94 <= hits / 3000 <= 0.99
    assert median_interval(list(range(40))) == (13, 26)  # 1 − 2·P(Bin(40, ½) ≤ 13) = 0.962; k = 14 gives 0.919
    assert median_interval([5, 1, 4, 2, 3, 7, 6]) == (1, 7)  # n = 7: the range (k = 0: 0.984; k = 1: 0.875)
    assert median_interval([3.0]) == (3.0, 3.0)
