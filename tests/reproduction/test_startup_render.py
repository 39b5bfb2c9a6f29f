"""``benchmarks/performance/startup.py``'s interval for the median overhead: it covers the median at its level and
falls back to the range when the rounds are too few."""

from __future__ import annotations

import sys
from pathlib import Path

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
