"""Notebook 04 (CDA tuples, CCD training, CCED/SEAT before and after, t-SNE, export) runs top to bottom on a tiny
random BERT and small data."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from faircl.data.counterfactual import AttributeLexicon, CDA, read_texts
from faircl.eval.embedding_bias import save_random_bert

NB = Path(__file__).resolve().parents[1] / "notebooks" / "04_fair_embeddings.ipynb"


def test_fair_embeddings_notebook_executes(tmp_path, monkeypatch, data_dir):
    # A tiny BERT whose vocabulary covers the GAP test sentences and their counterfactual versions.
    cda = CDA(AttributeLexicon.gender(data_dir, "adept+names"))
    texts = read_texts(data_dir / "gap_coreference" / "gap-test.tsv")[:300]
    model_dir = save_random_bert(tmp_path / "bert", [v for t in texts for v in cda(t)], hidden_size=32)
    monkeypatch.setenv("FAIRCL_DATA", str(data_dir))
    monkeypatch.setenv("FAIRCL_NB_MODEL", str(model_dir))
    monkeypatch.setenv("FAIRCL_NB_TUPLES", "120")
    monkeypatch.setenv("FAIRCL_NB_STEPS", "6")
    monkeypatch.setenv("FAIRCL_NB_SEAT", "8")
    nb = nbformat.read(NB, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "polarity check: kept" in outputs
    assert re.search(r"cced: before [0-9.]+, after [0-9.]+", outputs)
    assert "t-SNE figure saved" in outputs and (tmp_path / "ccd_tsne.png").stat().st_size > 0
    diff = float(re.search(r"max difference after reload: ([0-9.e-]+)", outputs).group(1))
    assert diff < 1e-4
