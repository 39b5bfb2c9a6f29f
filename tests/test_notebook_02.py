"""The text-fairness notebook runs top to bottom on small data and shows ConFair's mitigation."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NB = Path(__file__).resolve().parents[1] / "notebooks" / "02_text_fairness.ipynb"


@pytest.mark.slow
def test_text_fairness_notebook_executes(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRCL_NB_EPOCHS", "3")
    monkeypatch.setenv("FAIRCL_NB_ROWS", "800")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NB, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "GAP lowered: True" in outputs
    gaps = re.search(r"tpr_gap_rms\s+CE ([0-9.]+)\s+ConFair ([0-9.]+)", outputs)
    assert gaps is not None and float(gaps.group(2)) < float(gaps.group(1))
    assert any(o.get("output_type") == "display_data" for c in nb.cells if c.cell_type == "code"
               for o in c.get("outputs", []))  # the trade-off plot was drawn
