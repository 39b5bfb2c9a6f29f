"""Execute the notebooks in place, so that they are committed with their outputs (tables, prints and plots).

    .venv/bin/python notebooks/execute.py                  # every notebooks/*.ipynb
    .venv/bin/python notebooks/execute.py 02_text_fairness # some of them (names with or without .ipynb)

Each notebook runs top to bottom with the ``python3`` kernel of the interpreter running this script, in a scratch
working directory (the files a notebook writes, such as figures and exported encoders, stay out of the repository),
with the real-data folder ``$FAIRCL_DATA`` (default ``../shared/data`` beside the repository) and offline Hugging Face
settings. A failing cell stops the run with its traceback and leaves the notebook file unchanged.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def execute(path: Path, timeout: int = 3600) -> float:
    """Run ``path`` in a scratch directory and write it back with its outputs; returns the seconds it took."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"{path.stem}-") as work:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": work}}).execute()
    nbformat.write(nb, path)
    return time.perf_counter() - start


def main(names: list[str]) -> None:
    os.environ.setdefault("FAIRCL_DATA", str(HERE.parent.parent / "shared" / "data"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    paths = [HERE / (n if n.endswith(".ipynb") else f"{n}.ipynb") for n in names] or sorted(HERE.glob("*.ipynb"))
    for path in paths:
        print(f"{path.name}: running ...", flush=True)
        print(f"{path.name}: done in {execute(path):.0f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
