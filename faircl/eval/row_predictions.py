"""Per-row predictions of a ``faircl test`` run (``rows.npz``) and the record of the fit behind its checkpoint.

``faircl test`` writes ``rows.npz`` beside ``report.json``: one NumPy archive (``numpy.load``), compressed, with these
arrays for each split ``S`` in ``test`` and ``val`` (rows in the order of their row id):

| key | shape, dtype | meaning |
|---|---|---|
| ``S.idx`` | ``[n]`` int64 | row id within the split (the datamodule's ``idx``) |
| ``S.y`` | ``[n]`` int64 | true class |
| ``S.a`` | ``[n]`` int64 | protected attribute (``-1``: unknown) |
| ``S.pred`` | ``[n]`` int64 | predicted class (argmax of the logits) |
| ``S.proba`` | ``[n, C]`` float32 | class probabilities (softmax of the logits) |
| ``S.leak_h`` | ``[n]`` int64 | the Leakage@h probe's prediction of the attribute (``-1``: no probe) |
| ``S.leak_yhat`` | ``[n]`` int64 | the Leakage@ŷ probe's prediction of the attribute (``-1``: no probe) |

plus ``format`` (the format version, now 1). The leakage probes are those of the report (a linear SVM fit on the
train split's representations); a split's leakage is ``mean(S.leak_h == S.a)`` over its rows with a known attribute,
so the report's ``leakage_h`` is the test split's.

The *fit record* says what trained the checkpoint: its seed, the method and the data (class and arguments), and the
flattened configuration of the ``fit`` command. The checkpoint carries it (key ``faircl_fit``), ``faircl test``
copies it into ``report.json`` (``meta.fit``), and ``faircl compare`` pairs and groups runs by it, never by the
``test`` command's own configuration.

Example::

    from faircl.eval.row_predictions import read_rows
    rows = read_rows("runs/ce/lightning_logs/version_1/rows.npz")
    test = rows["test"]                      # {"idx", "y", "a", "pred", "proba", "leak_h", "leak_yhat"}
    accuracy = (test["pred"] == test["y"]).mean()
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from faircl.eval.tradeoff import Run

__all__ = ["FIELDS", "FORMAT", "LOADER_ARGS", "SPLITS", "data_identity", "fairness_of", "flatten_config",
           "leakage_of", "read_rows", "rows_fingerprint", "write_rows"]

FORMAT = 1
SPLITS = ("test", "val")
FIELDS = ("idx", "y", "a", "pred", "proba", "leak_h", "leak_yhat")
#: datamodule arguments that change how rows are batched, never which rows there are
LOADER_ARGS = ("batch_size", "num_workers", "sampler", "samples_per_class", "spc_by", "two_views",
               "eval_batch_size", "predict_split")


def write_rows(rows: Mapping[str, Mapping[str, np.ndarray]], directory: str | Path) -> Path:
    """Write ``rows`` (split → field → array, as documented above) to ``directory/rows.npz``; returns the path.

    Raises:
        ValueError: a split lacks a field, or its fields disagree on the number of rows.
    """
    arrays: dict[str, np.ndarray] = {"format": np.asarray([FORMAT], dtype=np.int64)}
    for split, fields in rows.items():
        if split not in SPLITS:
            raise ValueError(f"rows: unknown split {split!r}; expected one of {SPLITS}")
        missing = [f for f in FIELDS if f not in fields]
        if missing:
            raise ValueError(f"rows[{split!r}] lacks {', '.join(missing)}")
        n = len(fields["idx"])
        for f in FIELDS:
            arr = np.asarray(fields[f], dtype=np.float32 if f == "proba" else np.int64)
            if arr.shape[0] != n or (f == "proba") != (arr.ndim == 2):
                raise ValueError(f"rows[{split!r}][{f!r}] has shape {arr.shape}; expected {n} rows")
            arrays[f"{split}.{f}"] = arr
    path = Path(directory) / "rows.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:  # a file handle: savez would append ".npz" to a name of its own
        np.savez_compressed(fh, **arrays)
    return path


def read_rows(path: str | Path) -> dict[str, dict[str, np.ndarray]]:
    """Read a ``rows.npz`` back: split → field → array.

    Raises:
        ValueError: not a rows file of a known format (the message names the file).
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a readable rows file ({err})") from None
    version = int(arrays.pop("format", np.asarray([0]))[0])
    if version != FORMAT:
        raise ValueError(f"{path}: rows format {version}, this faircl reads format {FORMAT}")
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, arr in arrays.items():
        split, _, field = key.partition(".")
        out.setdefault(split, {})[field] = arr
    for split, fields in out.items():
        missing = [f for f in FIELDS if f not in fields]
        if missing:
            raise ValueError(f"{path}: split {split!r} lacks {', '.join(missing)}")
    return out


def rows_fingerprint(fields: Mapping[str, np.ndarray]) -> str:
    """A short hash of a split's ``idx``, ``y`` and ``a``: equal fingerprints = the same rows."""
    h = hashlib.sha1()
    for f in ("idx", "y", "a"):
        h.update(np.ascontiguousarray(np.asarray(fields[f], dtype=np.int64)).tobytes())
    return h.hexdigest()[:16]


def leakage_of(fields: Mapping[str, np.ndarray], probe: str = "leak_h") -> float:
    """A split's leakage: the probe's accuracy for the attribute over the rows with a known attribute and a probe
    prediction (NaN when there is none)."""
    a, guess = np.asarray(fields["a"]), np.asarray(fields[probe])
    known = (a >= 0) & (guess >= 0)
    return float(np.mean(guess[known] == a[known])) if known.any() else float("nan")


def fairness_of(fields: Mapping[str, np.ndarray], num_groups: int) -> dict[str, float]:
    """A split's accuracy and group gaps from its per-row predictions (:class:`faircl.metrics.GroupFairness` over
    ``pred``, ``y`` and ``a``; rows of unknown attribute count in accuracy only), plus its leakage.

    These are the numbers of the predictions the rows hold: for a run whose rows come from a 1-NN or a probe on its
    embeddings (``row_predictions: knn | probe``) they differ from the report's, which are its logits'.
    """
    import torch  # deferred: reading and writing rows files needs no torch

    from faircl.metrics import GroupFairness  # deferred: torchmetrics is slow to import

    proba = np.asarray(fields["proba"])
    metric = GroupFairness(max(2, proba.shape[1] if proba.ndim == 2 else 2), max(1, int(num_groups)))
    if len(fields["y"]):
        metric.update(torch.as_tensor(np.asarray(fields["pred"], dtype=np.int64)),
                      torch.as_tensor(np.asarray(fields["y"], dtype=np.int64)),
                      torch.as_tensor(np.asarray(fields["a"], dtype=np.int64)))
    out = {k: float(v) for k, v in metric.compute().items() if v.numel() == 1 and k != "n_unknown_group"}
    out["leakage_h"] = leakage_of(fields, "leak_h")
    out["leakage_yhat"] = leakage_of(fields, "leak_yhat")
    return {k: v for k, v in out.items() if not (k.startswith("leakage") and np.isnan(v))}


def flatten_config(node: Any, prefix: str = "") -> dict[str, Any]:
    """A nested configuration as ``{"model": "CE", "model.lr": 0.001, "data": "BiasedFeatures", ...}``: a
    ``class_path`` node becomes its class's short name, its ``init_args`` keys hang below it."""
    out: dict[str, Any] = {}
    if isinstance(node, Mapping):
        if "class_path" in node and prefix:
            out[prefix.rstrip(".")] = str(node["class_path"]).rsplit(".", 1)[-1]
            for k, v in (node.get("init_args") or {}).items():
                out.update(flatten_config(v, f"{prefix}{k}."))
            return out
        for k, v in node.items():
            out.update(flatten_config(v, f"{prefix}{k}."))
        return out
    out[prefix.rstrip(".")] = node
    return out


def data_identity(config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The data set of a flattened configuration: the data class and every data argument but the loader's
    (:data:`LOADER_ARGS`); two runs with different identities were trained or scored on different rows."""
    keep = []
    for k, v in config.items():
        if k == "data" or (k.startswith("data.") and k.split(".", 1)[1] not in LOADER_ARGS):
            keep.append((k, repr(v)))
    return tuple(sorted(keep))


#: one split's per-row predictions (field → array, as :func:`read_rows` gives them)
Fields = dict[str, np.ndarray]


def read_runs_rows(runs: Iterable[Run], known: Mapping[str, dict[str, Fields]] | None = None
                   ) -> dict[str, dict[str, Fields]]:
    """The per-row predictions of every run that kept them: ``Run.rows`` (the file) → split → field → array. Runs
    without rows are left out; files already in ``known`` are not read again."""
    out: dict[str, dict[str, Fields]] = {}
    for r in runs:
        if r.rows and r.rows not in out:
            out[r.rows] = known[r.rows] if known is not None and r.rows in known else read_rows(r.rows)
    return out
