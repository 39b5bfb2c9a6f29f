"""Induced imbalance (finDML, Dullerud et al. 2022, §3.3) and row subsets of a :class:`FairDataset`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from faircl.data.base import FairDataset
from faircl.data.vision.images import _Cached

__all__ = ["imbalance_rows", "induce_imbalance", "subset"]


def imbalance_rows(
    labels: np.ndarray,
    *,
    num_values: int,
    n: int = 0,
    values: Sequence[int] | None = None,
    ratio: float = 0.9,
    seed: int = 0,
    draw: int = 0,
) -> tuple[np.ndarray, list[int]]:
    """Rows kept after shrinking some label values by ``ratio`` (finDML §3.3: 50 random classes reduced by 90 %).

    finDML also tops the other classes up to the size of the balanced control; with a fixed dataset there is nothing
    to top up from, so the imbalanced train split is smaller than the balanced one.

    Args:
        labels: ``[N]`` class ids or attribute ids (``-1`` rows are always kept).
        num_values: number of possible ids.
        n: how many ids to draw at random (ignored when ``values`` is given).
        values: the ids to shrink (e.g. the minority races); overrides the random draw.
        ratio: fraction of each chosen id's rows removed (rounded down, at least one row kept when any exist).
        seed: base seed; ``draw`` indexes independent draws of the chosen ids and removed rows.

    Returns:
        ``(kept row indices sorted [M], chosen ids)``.
    """
    labels = np.asarray(labels)
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"imbalance ratio must be in [0, 1), got {ratio}")
    rng = np.random.default_rng([int(seed), int(draw), 7919])
    if values is not None:
        chosen = sorted({int(v) for v in values})
        bad = [v for v in chosen if not 0 <= v < num_values]
        if bad:
            raise ValueError(f"imbalance values {bad} are outside [0, {num_values})")
    else:
        if not 0 <= n <= num_values:
            raise ValueError(f"cannot shrink {n} of {num_values} ids")
        chosen = sorted(int(v) for v in rng.choice(num_values, size=n, replace=False))
    keep = np.ones(len(labels), dtype=bool)
    for v in chosen:
        rows = np.flatnonzero(labels == v)
        n_drop = min(int(math.floor(ratio * len(rows))), max(len(rows) - 1, 0))
        if n_drop:
            keep[rng.choice(rows, size=n_drop, replace=False)] = False
    return np.flatnonzero(keep), chosen


def induce_imbalance(
    ds: FairDataset,
    *,
    by: str = "class",
    n: int = 0,
    values: Sequence[int] | None = None,
    ratio: float = 0.9,
    seed: int = 0,
    draw: int = 0,
) -> tuple[FairDataset, list[int]]:
    """A copy of ``ds`` where ``n`` random classes (``by="class"``) or attribute groups (``by="attribute"``), or the
    given ``values``, keep only ``1 − ratio`` of their rows. Returns ``(dataset, chosen ids)``."""
    if by not in ("class", "attribute"):
        raise ValueError(f"imbalance by={by!r} must be 'class' or 'attribute'")
    labels = (ds.y if by == "class" else ds.a).numpy()
    num = ds.num_classes if by == "class" else ds.num_groups
    rows, chosen = imbalance_rows(labels, num_values=num, n=n, values=values, ratio=ratio, seed=seed, draw=draw)
    return subset(ds, rows), chosen


def subset(ds: FairDataset, rows: np.ndarray) -> FairDataset:
    """The rows ``rows`` of ``ds`` as a new :class:`FairDataset` (same loader and transforms)."""
    rows = np.asarray(rows, dtype=np.int64)
    x = ds.x
    if isinstance(x, torch.Tensor):
        x_sub: Any = x[torch.from_numpy(rows)]
    elif isinstance(x, _Cached):
        x_sub = _Cached.__new__(_Cached)
        x_sub.paths = [x.paths[i] for i in rows]
        x_sub.data = x.data[torch.from_numpy(rows)]
    else:
        x_sub = [x[i] for i in rows]
    out = FairDataset(x_sub, ds.y[rows], ds.a[rows], num_classes=ds.num_classes, num_groups=ds.num_groups,
                      loader=ds.loader, transform=ds.transform, view_transform=ds.view_transform, source=ds.source)
    return out
