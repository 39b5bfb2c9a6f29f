"""A row order that depends only on the rows' values, so results do not depend on how rows were gathered."""

from __future__ import annotations

import numpy as np


def canonical_order(x: np.ndarray, *tie_breakers: np.ndarray) -> np.ndarray:
    """Indices sorting the rows of ``x`` ``[N, D]`` by a fixed random projection, then by ``tie_breakers``.

    Rows with equal projections are (up to a measure-zero coincidence) identical rows; the tie-breakers (e.g. the
    labels) order those. Permuting the input rows permutes the output indices accordingly, so ``x[order]`` is the
    same matrix whatever the input order (up to the order of exactly identical rows).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.shape[0] == 0:
        return np.arange(0)
    direction = np.random.default_rng(12345).standard_normal(x.shape[1])
    proj = (x * direction).sum(1)  # row by row, so a row's value does not depend on its position
    # np.lexsort: the last key is the primary one
    return np.lexsort(tuple(reversed(tie_breakers)) + (proj,) if tie_breakers else (proj,))
