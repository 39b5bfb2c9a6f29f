"""The quick-start notebook runs top to bottom (so it can never rot)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NB = Path(__file__).resolve().parents[1] / "notebooks" / "01_quickstart.ipynb"


@pytest.mark.slow
def test_quickstart_notebook_executes(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRCL_NB_EPOCHS", "4")
    monkeypatch.setenv("FAIRCL_NB_ROWS", "2000")
    nb = nbformat.read(NB, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "dp_gap: CE" in outputs


def test_notebook_is_committed_executed_with_public_imports():
    """The committed notebook imports only the public API and carries the outputs of one top-to-bottom run
    (``notebooks/execute.py``)."""
    nb = nbformat.read(NB, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not any("faircl.testing" in c.source for c in code)
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert not any(o.get("output_type") == "error" for o in outputs)
    text = "".join(o.get("text", "") for o in outputs)
    assert 'dp_gap: CE' in text
