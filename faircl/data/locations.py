"""Where datamodules find their files when ``data_dir`` is not given: ``$FAIRCL_DATA/<dataset folder>``."""

from __future__ import annotations

import os
from pathlib import Path

#: environment variable naming the folder that holds the data set folders
DATA_ENV = "FAIRCL_DATA"


def default_data_dir(data_dir: str | Path | None, folder: str | None) -> Path | None:
    """``data_dir`` when given, else ``$FAIRCL_DATA/<folder>`` (``None`` when neither is known)."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    root = os.environ.get(DATA_ENV)
    if not root or folder is None:
        return None
    return Path(root).expanduser() / folder


def missing_data_dir(owner: str, folder: str | None) -> str:
    """The message for a datamodule that got no ``data_dir`` and cannot default it."""
    where = f"the folder holding {folder}/" if folder else "the folder holding the data sets"
    return (f"{owner} needs data_dir, its data folder: pass --data.data_dir <folder> (data.init_args.data_dir in a "
            f"config) or set {DATA_ENV} to {where}")
