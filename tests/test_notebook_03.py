"""Notebook 03 (PARADE subclass, t-SNE of both heads) runs top to bottom on small settings."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NB = Path(__file__).resolve().parents[1] / "notebooks" / "03_metric_learning.ipynb"


def test_metric_learning_notebook_executes(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRCL_NB_EPOCHS", "1")
    monkeypatch.setenv("FAIRCL_NB_ROWS", "120")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # tiny models: one thread in the kernel is fastest
    nb = nbformat.read(NB, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "correlation per epoch:" in outputs
    assert "recall@1:" in outputs
    assert "t-SNE figure of both heads saved" in outputs
    assert (tmp_path / "parade_tsne.png").stat().st_size > 0
