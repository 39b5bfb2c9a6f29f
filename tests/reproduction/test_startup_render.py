"""``benchmarks/performance/startup.py``'s interval for the median overhead: it covers the median at its level and
falls back to the range when the rounds are too few; its fixed cost of a run (``--epochs``) recovers a planted line
and the parts of its intercept, and its section replaces the last one in the results file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "performance"))


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


def test_the_fixed_cost_recovers_a_planted_line_and_its_parts_and_its_section_replaces_the_last(tmp_path):
    """Planted: every variant's run takes intercept + 0.1 s an epoch plus noise, the intercepts built from known parts
    (fit 0.4, test 0.3, probe 0.05, picture 0.25 s); the fit finds them within their intervals. Writing the section
    twice leaves one, between the file's head and its History."""
    import json
    import random

    from startup import SECTION, VARIANTS, fixed_cost, line_fit, write_fixed

    assert line_fit([(1, 1.1), (5, 1.5), (15, 2.5)]) == pytest.approx((1.0, 0.1))
    parts = {"fit": 0.4, "no_probe": 0.7, "bench": 0.75, "plain": 1.0}
    rng, epochs = random.Random(1), [1, 5, 15]
    times = {v: {str(e): [parts[v] + 0.1 * e + rng.gauss(0, 0.02) for _ in range(12)] for e in epochs}
             for v in VARIANTS}
    raw = {"epochs": epochs, "rounds": 12, "times": times, "load_1min": [0.1] * 12}
    est = fixed_cost(raw, draws=400)
    for key, value in {"part.fit": 0.4, "part.test": 0.3, "part.probe": 0.05, "part.picture": 0.25,
                       "plain.intercept": 1.0, "bench.slope": 0.1}.items():
        lo, hi = est["interval"][key]
        assert lo <= value <= hi and abs(est["point"][key] - value) < 0.03, key
    out = tmp_path / "startup.md"
    out.write_text("# Head\n\n182 after (`faircl/runs/pool.py`, standard library only).\n\n## History\n\nold\n")
    full = {"epochs": raw, "estimates": est, "data_rounds": 1, "seconds": 1.0, "when": "today", "machine": "here",
            "data": [{"protocol": "text/x", "views": True, "off": [[1.0, 0.5]], "on": [[0.1, 0.05]]}]}
    write_fixed(out, full)
    write_fixed(out, full)
    text = out.read_text()
    assert text.startswith("# Head") and text.count(SECTION) == 1 and text.index(SECTION) < text.index("## History")
    assert "| text/x | on two views (EDA) | 1.50 [1.50, 1.50] | 0.15 [0.15, 0.15] |" in text
    assert "182 after" not in text and text.endswith("## History\n\nold\n")
    assert json.loads(out.with_suffix(".json").read_text())["fixed_cost"]["data_rounds"] == 1
