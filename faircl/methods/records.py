"""What a :class:`~faircl.methods.base.FairModule` keeps of a test beyond its report: the per-row predictions of the
test and validation splits (with the leakage probes' guesses of the attribute), and the record of the fit that
trained its weights. The file format is :mod:`faircl.eval.row_predictions`'s; this module only computes the arrays."""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from lightning.fabric.utilities.apply_func import move_data_to_device
from torch.nn import functional as F

from faircl.metrics.probes import fit_probe
from faircl.utils import gather_rows

__all__ = ["ROW_PREDICTIONS", "default_fit_record", "embedding_predictor", "json_safe", "split_outputs", "test_rows"]

#: where a test's per-row predictions come from (:class:`~faircl.methods.base.FairModule`'s ``row_predictions``)
ROW_PREDICTIONS = ("logits", "knn", "probe")
#: test rows compared with the whole training gallery at once by the 1-NN predictor
_KNN_CHUNK = 1024


def json_safe(value: Any) -> Any:
    """``value`` as plain JSON data (str, int, float, bool, None, lists, dicts); anything else as its ``repr``."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    return repr(value)


def _init_args(obj: Any) -> dict[str, Any]:
    """The constructor arguments of ``obj`` that it keeps under the same attribute name (or in ``hparams``)."""
    out = {}
    hparams = getattr(obj, "hparams", None) or {}
    for cls in type(obj).__mro__:
        if cls is object or "__init__" not in vars(cls):
            continue
        for name, p in inspect.signature(cls.__init__).parameters.items():
            if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or name in out:
                continue
            if name in hparams:
                out[name] = json_safe(hparams[name])
                continue
            try:
                value = getattr(obj, name)
            except Exception:  # a property that cannot answer yet (e.g. before setup): not recorded
                continue
            if not callable(value):
                out[name] = json_safe(value)
    return out


def default_fit_record(module: Any, datamodule: Any = None) -> dict[str, Any]:
    """The fit record of a run started without the ``faircl`` command (a plain ``lightning.Trainer``): the global
    seed Lightning set (``PL_GLOBAL_SEED``; ``None`` if unseeded), the method's saved hyper-parameters and the
    datamodule's constructor arguments as far as it keeps them."""
    seed = os.environ.get("PL_GLOBAL_SEED")
    config: dict[str, Any] = {"model": type(module).__name__}
    config.update({f"model.{k}": json_safe(v) for k, v in dict(getattr(module, "hparams", {}) or {}).items()})
    if datamodule is not None:
        config["data"] = type(datamodule).__name__
        config.update({f"data.{k}": v for k, v in _init_args(datamodule).items()})
    return {"seed": None if seed is None else int(seed), "source": "lightning.Trainer", "config": config}


@torch.no_grad()
def split_outputs(module: Any, split: str) -> dict[str, torch.Tensor]:
    """``h``, ``logits``, ``y``, ``a`` and ``idx`` of every row of ``split`` (the module's ``step_outputs`` in eval
    mode, un-augmented, gathered from every process and ordered by ``idx``)."""
    was_training = module.training
    module.eval()
    parts = []
    try:
        for batch in module.plain_loader(split):
            batch = move_data_to_device(batch, module.device)
            out = module.step_outputs(batch)
            row = {k: out[k].detach().float().cpu() for k in ("h", "z", "logits") if k in out}
            row.update({k: batch[k].long().cpu() for k in ("y", "a", "idx") if isinstance(batch.get(k), torch.Tensor)})
            parts.append(row)
    finally:
        module.train(was_training)
    return gather_rows(parts, module.world_size())


Predictor = Callable[[dict[str, torch.Tensor]], tuple[np.ndarray, np.ndarray]]


def _logits_predictor(outputs: dict[str, torch.Tensor]) -> tuple[np.ndarray, np.ndarray]:
    logits = outputs["logits"]
    return logits.argmax(-1).numpy(), torch.softmax(logits, -1).numpy()


def embedding_predictor(how: str, train: dict[str, torch.Tensor], num_classes: int, seed: int = 0) -> Predictor:
    """A per-row predictor read off a frozen representation, fitted on the training split's rows ``train`` (``h``,
    ``z`` if the method has one, ``y``).

    Args:
        how: ``knn`` — the label of the nearest training embedding by cosine similarity, over ``z`` when present,
            else ``h`` (ties go to the lower training row; probabilities are the one-hot of that label); ``probe`` — a
            logistic regression on the standardised training ``h`` (:func:`faircl.metrics.probes.fit_probe`).
        train: the training split's outputs.
        num_classes: the width of the probabilities.
        seed: the probe's seed.

    Returns:
        ``outputs → (pred [n], proba [n, num_classes])`` for the outputs of another split.
    """
    if how == "knn":
        key = "z" if "z" in train else "h"
        gallery = F.normalize(train[key].float(), dim=-1)
        labels = train["y"].long()

        def knn(outputs: dict[str, torch.Tensor]) -> tuple[np.ndarray, np.ndarray]:
            query = F.normalize(outputs[key].float(), dim=-1)
            nearest = torch.cat([(part @ gallery.T).argmax(-1) for part in query.split(_KNN_CHUNK)]) \
                if len(query) else torch.zeros(0, dtype=torch.long)
            pred = labels[nearest]
            return pred.numpy(), F.one_hot(pred, num_classes).float().numpy()
        return knn
    if how == "probe":
        seen = torch.unique(train["y"])
        if len(seen) < 2:  # one class in train: nothing to fit, every row gets that class
            only = int(seen[0]) if len(seen) else 0

            def constant(outputs: dict[str, torch.Tensor]) -> tuple[np.ndarray, np.ndarray]:
                n = len(outputs["h"])
                return np.full(n, only, dtype=np.int64), np.eye(num_classes, dtype=np.float32)[np.full(n, only)]
            return constant
        probe = fit_probe(train["h"], train["y"], "logistic", seed=seed, max_iter=1000, name="train labels")
        classes = np.asarray(probe.classes_, dtype=np.int64)

        def linear(outputs: dict[str, torch.Tensor]) -> tuple[np.ndarray, np.ndarray]:
            h = outputs["h"].numpy()
            proba = np.zeros((len(h), num_classes), dtype=np.float32)
            if len(h):
                proba[:, classes] = probe.predict_proba(h)
            return np.asarray(probe.predict(h), dtype=np.int64), proba
        return linear
    raise ValueError(f"row_predictions: expected one of {ROW_PREDICTIONS}, got {how!r}")


def _fields(outputs: dict[str, torch.Tensor], probes: dict[str, Any], predictor: Predictor = _logits_predictor
            ) -> dict[str, np.ndarray]:
    idx = outputs["idx"].numpy().astype(np.int64)
    _, first = np.unique(idx, return_index=True)  # a padded distributed shard repeats rows: keep each once
    kept = {k: v[torch.as_tensor(first)] for k, v in outputs.items() if isinstance(v, torch.Tensor)}
    pred, proba = predictor(kept)
    fields = {"idx": idx[first], "y": outputs["y"].numpy()[first], "a": outputs["a"].numpy()[first],
              "pred": np.asarray(pred, dtype=np.int64), "proba": np.asarray(proba, dtype=np.float32)}
    for key, name in (("h", "leak_h"), ("logits", "leak_yhat")):
        probe = probes.get(key)
        if probe is not None and key in outputs:
            fields[name] = np.asarray(probe.predict(outputs[key].numpy()[first]), dtype=np.int64)
        else:
            fields[name] = np.full(len(first), -1, dtype=np.int64)
    return fields


def test_rows(module: Any, test_outputs: dict[str, torch.Tensor], probes: dict[str, Any]
              ) -> dict[str, dict[str, np.ndarray]]:
    """Per-row test and validation predictions (:mod:`faircl.eval.row_predictions` fields) of a module after its test epoch.

    Args:
        module: the tested :class:`~faircl.methods.base.FairModule`, attached to its datamodule.
        test_outputs: the gathered test outputs (``logits``, ``y``, ``a``, ``idx``, ``h``).
        probes: the fitted leakage probes by representation (``"h"``, ``"logits"``); absent: ``-1`` guesses.

    Returns:
        ``{"test": fields, "val": fields}``; ``{}`` when the module's ``row_predictions`` is ``logits`` and it gives
        none (no class predictions). Predictions come from the logits, or (``knn`` / ``probe``) from a predictor
        fitted on the training split's representations (:func:`embedding_predictor`).
    """
    how = (getattr(module, "hparams", None) or {}).get("row_predictions", "logits")
    if "idx" not in test_outputs or (how == "logits" and "logits" not in test_outputs):
        return {}
    dm = module.attached_datamodule
    predictor: Predictor = _logits_predictor
    if how != "logits":
        if dm is None or "train" not in dm.splits:
            raise RuntimeError(f"row_predictions={how!r} fits its predictor on the training split: attach a "
                               "datamodule that has one")
        predictor = embedding_predictor(how, split_outputs(module, "train"), module.num_classes)
    rows = {"test": _fields(test_outputs, probes, predictor)}
    if dm is not None and "val" in dm.splits:
        val = split_outputs(module, "val")
        if how != "logits" or "logits" in val:
            rows["val"] = _fields(val, probes, predictor)
    return rows
