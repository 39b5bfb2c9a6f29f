"""Whole-split passes of a :class:`~faircl.methods.base.FairModule` (clustering, INLP, probes, leakage)."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from lightning.fabric.utilities.apply_func import move_data_to_device
from torch import nn

from faircl.utils import gather_rows

__all__ = ["collect"]


@torch.no_grad()
def collect(model: nn.Module, loader: Iterable, keys: tuple[str, ...] = ("h", "y", "a"),
            max_rows: int | None = None, world_size: int = 1) -> dict[str, torch.Tensor]:
    """Run ``model`` over ``loader`` in eval mode, without grad; gather from all processes, ordered by ``idx``.

    Args:
        model: maps ``batch["x"]`` to a dict of outputs (``h``, ``z``, ``logits``); it has a ``device``.
        loader: yields batch dicts (e.g. ``model.plain_loader("train")``).
        keys: output or batch keys to keep.
        max_rows: stop after about this many rows on this process (seeded loaders give a fixed subset).
        world_size: number of processes to gather from (:func:`faircl.utils.gather_rows`).
    """
    was_training = model.training
    model.eval()
    parts: list[dict[str, torch.Tensor]] = []
    seen = 0
    try:
        for batch in loader:
            batch = move_data_to_device(batch, model.device)
            out = model(batch["x"])
            row = {k: (out[k] if k in out else batch[k]).detach().float().cpu() for k in keys
                   if k in out or k in batch}
            row["idx"] = batch["idx"].cpu()
            for k in ("y", "a"):
                if k in row:
                    row[k] = row[k].long()
            parts.append(row)
            seen += len(row["idx"])
            if max_rows is not None and seen >= max_rows:
                break
    finally:
        model.train(was_training)
    return gather_rows(parts, world_size)
