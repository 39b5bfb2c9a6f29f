"""What a :class:`~faircl.methods.base.FairModule` keeps of a test beyond its report: the per-row predictions of the
test and validation splits (with the leakage probes' guesses of the attribute), and the record of the fit that
trained its weights. The file format is :mod:`faircl.eval.rows`'s; this module only computes the arrays."""

from __future__ import annotations

import inspect
import math
import os
from typing import Any

import numpy as np
import torch
from lightning.fabric.utilities.apply_func import move_data_to_device

from faircl.utils import gather_rows

__all__ = ["default_fit_record", "json_safe", "split_outputs", "test_rows"]


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
            row = {k: out[k].detach().float().cpu() for k in ("h", "logits") if k in out}
            row.update({k: batch[k].long().cpu() for k in ("y", "a", "idx") if isinstance(batch.get(k), torch.Tensor)})
            parts.append(row)
    finally:
        module.train(was_training)
    return gather_rows(parts, module.world_size())


def _fields(outputs: dict[str, torch.Tensor], probes: dict[str, Any]) -> dict[str, np.ndarray]:
    idx = outputs["idx"].numpy().astype(np.int64)
    _, first = np.unique(idx, return_index=True)  # a padded distributed shard repeats rows: keep each once
    logits = outputs["logits"][torch.as_tensor(first)]
    fields = {"idx": idx[first], "y": outputs["y"].numpy()[first], "a": outputs["a"].numpy()[first],
              "pred": logits.argmax(-1).numpy(), "proba": torch.softmax(logits, -1).numpy().astype(np.float32)}
    for key, name in (("h", "leak_h"), ("logits", "leak_yhat")):
        probe = probes.get(key)
        if probe is not None and key in outputs:
            fields[name] = np.asarray(probe.predict(outputs[key].numpy()[first]), dtype=np.int64)
        else:
            fields[name] = np.full(len(first), -1, dtype=np.int64)
    return fields


def test_rows(module: Any, test_outputs: dict[str, torch.Tensor], probes: dict[str, Any]
              ) -> dict[str, dict[str, np.ndarray]]:
    """Per-row test and validation predictions (:mod:`faircl.eval.rows` fields) of a module after its test epoch.

    Args:
        module: the tested :class:`~faircl.methods.base.FairModule`, attached to its datamodule.
        test_outputs: the gathered test outputs (``logits``, ``y``, ``a``, ``idx``, ``h``).
        probes: the fitted leakage probes by representation (``"h"``, ``"logits"``); absent: ``-1`` guesses.

    Returns:
        ``{"test": fields, "val": fields}``; ``{}`` when the module gives no logits (no class predictions).
    """
    if "logits" not in test_outputs or "idx" not in test_outputs:
        return {}
    rows = {"test": _fields(test_outputs, probes)}
    dm = module.attached_datamodule
    if dm is not None and "val" in dm.splits:
        val = split_outputs(module, "val")
        if "logits" in val:
            rows["val"] = _fields(val, probes)
    return rows
