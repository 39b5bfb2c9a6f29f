"""The trade-off notebook runs top to bottom: a small sweep, compare, and the front."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NB = Path(__file__).resolve().parents[1] / "notebooks" / "05_tradeoff.ipynb"


@pytest.mark.slow
def test_tradeoff_notebook_executes(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRCL_NB_TRIALS", "2")
    monkeypatch.setenv("FAIRCL_NB_EPOCHS", "2")
    monkeypatch.setenv("FAIRCL_NB_SEEDS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    nb = nbformat.read(NB, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "faircl sweep exit status: 0" in outputs and "faircl compare exit status: 0" in outputs
    assert "front: S" in outputs
    assert (tmp_path / "compare" / "front.png").is_file()
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outs)
