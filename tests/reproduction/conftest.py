"""Shared by the tests of the benchmark grids (``text_bench.py``, ``vision_bench.py``)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def bench_out() -> Callable[..., None]:
    """``bench_out(folder, rows, wall_s)``: a bench invocation's ``results.csv`` (``rows``: (protocol, gap, baseline,
    verdict, effect, effect_lo, effect_hi)) and ``bench.json`` (its wall time) in a new ``folder``."""
    def write(folder: Path, rows: list[tuple], wall_s: float) -> None:
        folder.mkdir(parents=True)
        with open(folder / "results.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["protocol", "gap", "baseline", "verdict", "effect", "effect_lo", "effect_hi"])
            w.writerows(rows)
        (folder / "bench.json").write_text(json.dumps({"wall_s": wall_s}))
    return write
