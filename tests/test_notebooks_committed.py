"""The committed notebooks import only the public API and carry the outputs of one top-to-bottom run
(``python notebooks/execute.py``), plots included, so they read on a code host without running them."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

# (notebook, a line its run prints, whether it draws a plot)
CASES = [
    ("01_quickstart.ipynb", "dp_gap: CE", False),
    ("02_text_fairness.ipynb", "GAP lowered:", True),
    ("03_metric_learning.ipynb", "recall@1:", True),
    ("04_fair_embeddings.ipynb", "cced: before", True),
    ("05_tradeoff.ipynb", "front: S", True),
]


@pytest.mark.parametrize("name, printed, plots", CASES)
def test_notebook_is_committed_executed_with_public_imports(name, printed, plots):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not any("faircl.testing" in c.source for c in code)
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert not any(o.get("output_type") == "error" for o in outputs)
    assert printed in "".join(o.get("text", "") for o in outputs)
    if plots:
        assert any("image/png" in o.get("data", {}) for o in outputs)  # the plot is visible
