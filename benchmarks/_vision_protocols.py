"""The vision benchmark's protocols (``benchmarks/vision_fairness.py``): the data classes live in the library
(:mod:`faircl.data.vision.stereo`, used by the ``faircl bench vision`` protocols too); this module adds the report's
description of the realised splits."""

from __future__ import annotations

from typing import Any

import numpy as np

from faircl.data.base import FairDataset
from faircl.data.vision.stereo import StereoDigits, StereoUTKFace, exact_stereotype

__all__ = ["StereoDigits", "StereoUTKFace", "describe", "exact_stereotype"]


def describe(splits: dict[str, FairDataset], class_names: list[str], group_names: list[str]) -> dict[str, Any]:
    """The realised protocol: per split, rows, ``P(a = y)`` and the (label, group) counts."""
    info: dict[str, Any] = {}
    for name, ds in splits.items():
        y, a = ds.y.numpy(), ds.a.numpy()
        info[name] = {"rows": int(len(y)), "p_a_eq_y": float(np.mean(a == y)),
                      "counts": {f"{c}/{g}": int(np.sum((y == i) & (a == j)))
                                 for i, c in enumerate(class_names) for j, g in enumerate(group_names)}}
    return info
