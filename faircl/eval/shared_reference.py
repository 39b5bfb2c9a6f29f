"""The reference distribution of a t-like statistic whose variance adds a part estimated from the seeds and a part
shared by every seed, estimated with its own precision (:class:`SharedNoiseReference`): the calibrated reference of
the item-level claims (:mod:`faircl.eval.item_nulls`), read by :class:`faircl.eval.statistics.Effect`."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

__all__ = ["SharedNoiseReference"]


@functools.lru_cache(maxsize=64)
def _quantile_nodes(df: float, n: int, squared: bool) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights for ``E f(X)``, ``X ~ χ²_df / df``, over the quantile ``u ∈ (0, 1)`` (``u = y²``
    with ``squared``: smooth where ``f`` goes as ``u^{1/df}`` near 0)."""
    x, w = np.polynomial.legendre.leggauss(n)
    y, w = (x + 1) / 2, w / 2
    u, w = (y * y, 2 * y * w) if squared else (y, w)
    return special.chdtri(df, 1 - u) / df, w


@functools.lru_cache(maxsize=256)
def _reference_nodes(share: float, df_seed: float, df_shared: float) -> tuple[np.ndarray, np.ndarray]:
    """Scales ``√(λ / W + (1 − λ) / V)`` and weights of :class:`SharedNoiseReference`'s normal mixture (256 nodes for
    ``W``, 32 for ``V``; ``V = 1`` for ``ν = ∞``): its tails to 0.1% of their value at α/10."""
    w, ww = _quantile_nodes(df_seed, 256, True)
    v, wv = (np.ones(1), np.ones(1)) if not math.isfinite(df_shared) else _quantile_nodes(df_shared, 32, False)
    return np.sqrt(share / w[:, None] + (1 - share) / v[None, :]).ravel(), (ww[:, None] * wv[None, :]).ravel()


@dataclass(frozen=True)
class SharedNoiseReference:
    """The reference distribution of ``t = mean / se`` when ``se²`` adds a part estimated from the seeds and a part
    that every seed shares, each with its own precision: ``T = Z · √(λ / W + (1 − λ) / V)`` with ``Z ~ N(0, 1)``,
    ``W ~ χ²_k / k``, ``V ~ χ²_ν / ν`` independent (``λ = 1``: Student-t on ``k`` df; ``λ = 0``: Student-t on ``ν``
    df). It is what :func:`faircl.eval.item_nulls.paired_item_bootstrap` reads its p-value and intervals from (see
    that module for ``λ`` and the validation).

    Attributes:
        share: ``λ`` in [0, 1].
        df_seed: ``k`` (seeds − 1).
        df_shared: ``ν`` (``math.inf``: the shared part is known).
    """

    share: float
    df_seed: float
    df_shared: float = math.inf

    def sf(self, t: float) -> float:
        """Two-sided tail ``P(|T| ≥ t)`` (Gauss–Legendre quadrature over the quantiles of ``W`` and ``V``)."""
        scales, weights = _reference_nodes(float(self.share), float(self.df_seed), float(self.df_shared))
        return float(weights @ special.erfc(abs(t) / scales / math.sqrt(2)))

    def quantile(self, level: float) -> float:
        """``q`` with ``P(|T| ≤ q) = level``: the two-sided ``level`` interval is ``mean ± q · se``."""
        if not 0 < level < 1:
            raise ValueError(f"level must lie in (0, 1), got {level}")
        return _reference_quantile(self, float(level))

    def t_df(self, level: float = 0.95) -> float:
        """The Student-t degrees of freedom whose two-sided ``level`` quantile is this reference's (1e9 where it is
        the normal's)."""
        q = self.quantile(level)

        def gap(df: float) -> float:
            return float(special.stdtrit(df, 0.5 + level / 2)) - q

        if gap(1e9) >= 0:
            return 1e9
        return float(optimize.brentq(gap, 0.5, 1e9)) if gap(0.5) > 0 else 0.5


@functools.lru_cache(maxsize=1024)
def _reference_quantile(ref: SharedNoiseReference, level: float) -> float:
    hi = float(special.stdtrit(min(ref.df_seed, ref.df_shared), 0.5 + level / 2)) + 1.0
    return float(optimize.brentq(lambda q: ref.sf(q) - (1 - level), 0.0, hi, xtol=1e-10))
