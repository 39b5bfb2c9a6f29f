"""The records a ``faircl`` run leaves for ``faircl compare``: the fit record (seed and settings of the fit, carried
in its checkpoint) and, after ``faircl test``, the per-row predictions (``rows.npz``, :mod:`faircl.eval.row_predictions`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from faircl.eval.row_predictions import flatten_config, rows_fingerprint, write_rows
from faircl.methods.records import json_safe

__all__ = ["fit_record_of", "run_record"]

#: keys of the fit configuration that say nothing about what was trained
_DROP = ("config", "ckpt_path", "report_plot", "trainer.callbacks", "trainer.logger")


def fit_record_of(config: dict[str, Any]) -> dict[str, Any]:
    """The fit record of a ``faircl fit`` configuration: the seed Lightning used (``PL_GLOBAL_SEED``, else the
    configuration's ``seed_everything``) and the flattened configuration (``model``, ``model.lr``, ``data``, ...)."""
    flat = {k: json_safe(v) for k, v in flatten_config(config).items()
            if not any(k == d or k.startswith(d + ".") for d in _DROP)}
    seed = os.environ.get("PL_GLOBAL_SEED", flat.get("seed_everything"))
    seed = int(seed) if isinstance(seed, (int, str)) and str(seed).lstrip("-").isdigit() else None
    flat["seed_everything"] = seed
    return {"seed": seed, "source": "faircl fit", "config": flat}


def run_record(model: Any, datamodule: Any, rows: dict[str, dict[str, Any]], directory: Path) -> dict[str, Any]:
    """Write the test's ``rows.npz`` into ``directory`` and return the report's ``meta`` entries: ``fit`` (the fit
    record of the checkpoint) and ``rows`` (file, rows per split, the split's size, fingerprints).

    Prints how many rows of each split were kept; a split whose kept rows differ from its size is said, never
    hidden."""
    meta: dict[str, Any] = {"fit": getattr(model, "fit_record", None) or "unknown (the checkpoint has no fit record)"}
    if not rows:
        print("faircl: no per-row predictions kept (the method gives no class logits); `faircl compare` will not "
              "test this run's bias")
        return meta
    path = write_rows(rows, directory)
    splits = getattr(datamodule, "splits", {}) or {}
    how = (getattr(model, "hparams", None) or {}).get("row_predictions", "logits")
    info: dict[str, Any] = {"file": path.name, "predictions": how}
    for split, fields in rows.items():
        size = len(splits[split]) if split in splits else None
        info[split] = {"rows": int(len(fields["idx"])), "split_size": size, "fingerprint": rows_fingerprint(fields)}
        if size is not None and size != len(fields["idx"]):
            print(f"faircl: warning: {split} rows kept {len(fields['idx'])} of the split's {size}")
    meta["rows"] = info
    counts = ", ".join(f"{s} {v['rows']}" for s, v in info.items() if isinstance(v, dict))
    source = {"logits": "the logits", "knn": "the nearest training embedding (1-NN, cosine)",
              "probe": "a logistic-regression probe on the training h"}.get(how, how)
    print(f"faircl: per-row predictions ({counts} rows, from {source}) written to {path}")
    return meta
