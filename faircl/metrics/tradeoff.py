"""Summaries over a table of runs: Shen et al.'s Tradeoff score, fairlib's DTO, and Pareto fronts.

All inputs are plain numbers (floats, numpy arrays, lists, or rows of a report table); every score is a fraction in
``[0, 1]`` (accuracy 0.83, GAP 0.12, leakage 0.55), not a percentage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["dto", "pareto_front", "tradeoff_score"]


def _column(rows: Sequence[Mapping[str, float]], key: str) -> np.ndarray:
    try:
        values = np.array([float(row[key]) for row in rows], dtype=np.float64)
    except KeyError:
        missing = next(i for i, row in enumerate(rows) if key not in row)
        raise ValueError(f"row {missing} has no {key!r} entry (keys: {sorted(rows[missing])})") from None
    if np.isnan(values).any():
        raise ValueError(f"column {key!r} contains NaN at row {int(np.argmax(np.isnan(values)))}")
    if ((values < 0) | (values > 1)).any():
        row = int(np.argmax((values < 0) | (values > 1)))
        raise ValueError(f"column {key!r} must hold fractions in [0, 1], got {values[row]} at row {row}")
    return values


def _normalise(values: np.ndarray, name: str) -> np.ndarray:
    best = values.max()
    if best <= 0:
        raise ValueError(f"cannot normalise {name}: its best value over the runs is {best}")
    return values / best


def tradeoff_score(rows: Sequence[Mapping[str, float]], accuracy: str = "accuracy", gap: str = "gap",
                   leakage_h: str = "leakage_h", leakage_y: str = "leakage_y") -> np.ndarray:
    """Shen et al. (2021) Tradeoff of each run, relative to the runs compared.

    ``Tradeoff = ½ N(Acc) + ¼ N(1 − GAP) + ⅛ N(1 − Leak@h) + ⅛ N(1 − Leak@ŷ)``, where ``N`` divides a column by its
    maximum over the rows. 1 means the run is best on every measure.

    Args:
        rows: one mapping per run (e.g. test reports, or ``DataFrame.to_dict("records")``).
        accuracy, gap, leakage_h, leakage_y: the keys of the four measures in each row (fractions in [0, 1]).

    Returns:
        float64 array ``[len(rows)]``.

    Examples:
        >>> from faircl.metrics.tradeoff import tradeoff_score
        >>> runs = [{"accuracy": 0.80, "gap": 0.10, "leakage_h": 0.60, "leakage_y": 0.55},
        ...         {"accuracy": 0.75, "gap": 0.02, "leakage_h": 0.52, "leakage_y": 0.51}]
        >>> tradeoff_score(runs).round(4)
        array([0.9486, 0.9688])
    """
    rows = list(rows)
    if not rows:
        raise ValueError("rows must hold at least one run")
    acc = _normalise(_column(rows, accuracy), accuracy)
    fair = _normalise(1 - _column(rows, gap), f"1 - {gap}")
    lh = _normalise(1 - _column(rows, leakage_h), f"1 - {leakage_h}")
    ly = _normalise(1 - _column(rows, leakage_y), f"1 - {leakage_y}")
    return 0.5 * acc + 0.25 * fair + 0.125 * lh + 0.125 * ly


def dto(performance: Sequence[float], fairness: Sequence[float], utopia_performance: float | None = None,
        utopia_fairness: float | None = None) -> np.ndarray:
    """fairlib's distance to the optimum (DTO) of each run; lower is better.

    Each measure is divided by its utopia value (by default the best over the runs), and DTO is the Euclidean
    distance of ``(performance, fairness)`` to ``(1, 1)``.

    Args:
        performance: higher-is-better performance per run ``[R]`` (e.g. accuracy or macro F1).
        fairness: higher-is-better fairness per run ``[R]``, usually ``1 − GAP``.
        utopia_performance, utopia_fairness: reference optimum; default the column maximum.

    Returns:
        float64 array ``[R]``.

    Examples:
        >>> from faircl.metrics.tradeoff import dto
        >>> dto([0.8, 0.9], [0.9, 0.7])   # accuracy, 1 − GAP of two runs, each divided by its best value
        array([0.11111111, 0.22222222])
    """
    p = np.asarray(performance, dtype=np.float64).ravel()
    f = np.asarray(fairness, dtype=np.float64).ravel()
    if p.shape != f.shape or p.size == 0:
        raise ValueError(f"performance and fairness must be non-empty and of equal length, got {p.size} and {f.size}")
    up = p.max() if utopia_performance is None else float(utopia_performance)
    uf = f.max() if utopia_fairness is None else float(utopia_fairness)
    if up <= 0 or uf <= 0:
        raise ValueError(f"utopia values must be > 0, got performance {up} and fairness {uf}")
    return np.sqrt((p / up - 1) ** 2 + (f / uf - 1) ** 2)


def pareto_front(points: Sequence[Sequence[float]] | np.ndarray,
                 maximize: bool | Sequence[bool] = True) -> np.ndarray:
    """Mask of the non-dominated runs.

    A run is dominated when another run is at least as good on every objective and strictly better on one
    (Shen et al. 2021, footnote 3, for two objectives such as accuracy ↑ and Leakage@h ↓).

    Args:
        points: ``[R, M]`` objective values per run.
        maximize: one flag per objective (or one for all): True if higher is better.

    Returns:
        bool array ``[R]``, True for runs on the Pareto front. Exact duplicates are all kept.

    Examples:
        >>> from faircl.metrics.tradeoff import pareto_front
        >>> pareto_front([[0.8, 0.9], [0.9, 0.7], [0.7, 0.6]])   # the third run is dominated by both others
        array([ True,  True, False])
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[0] == 0:
        raise ValueError(f"points must have shape [R, M] with R >= 1, got {pts.shape}")
    if np.isnan(pts).any():
        raise ValueError(f"points contains NaN at row {int(np.argwhere(np.isnan(pts))[0, 0])}")
    flags = np.broadcast_to(np.asarray(maximize, dtype=bool), (pts.shape[1],))
    gain = np.where(flags, pts, -pts)                       # higher is better everywhere
    ge = (gain[:, None, :] >= gain[None, :, :]).all(2)      # ge[i, j]: i at least as good as j everywhere
    gt = (gain[:, None, :] > gain[None, :, :]).any(2)
    dominated = (ge & gt).any(0)
    return ~dominated
