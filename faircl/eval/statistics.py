"""The statistics behind :mod:`faircl.eval.verdicts`: vectorised group-fairness gaps from confusion counts, the
attribute-permutation null, the seed × row paired bootstrap, Holm–Bonferroni and the gap test's minimum detectable
effect. All values are fractions (0.045 = 4.5 points). No verdict is decided here: the rule (and the seeds it would
need, :func:`faircl.eval.power.seeds_to_decide`) is :mod:`faircl.eval.verdicts`.

**The paired effect's variance: a two-way decomposition of the seeds × rows design.** The change of seed ``s``
measured on the test rows is ``d_s = μ + α_s + β + γ_s``: ``α_s`` is the seed's training noise (what another seed
would change on infinitely many rows, variance ``σ²_α``); ``β`` is the test rows' sampling error that every seed shares
(the same rows score every seed and both models, variance ``σ²_β``); ``γ_s`` is the rows' sampling error specific to
the seed (which rows *this* pair of models gets right, variance ``σ²_γ``). The reported change is the seed mean
``D = mean_s d_s``, so ``Var(D) = σ²_α / S + σ²_β + σ²_γ / S``, each noise once. The seeds' spread ``s²_d`` estimates
``σ²_α + σ²_γ`` (``β`` is common to all seeds and cancels), so ``s²_d / S`` already holds each seed's own row noise;
a bootstrap of the rows (one resample shared by every seed and both models) measures ``σ²_β + σ²_γ`` per seed and
``σ²_β`` as the *covariance* of two seeds' resampled changes. The variance is therefore
``s²_d / S + c̄`` with ``c̄`` the mean covariance between seeds over the row resamples (≥ 0), not ``s²_d / S`` plus the
whole bootstrap variance of the seed mean, which counts ``σ²_γ / S`` twice.

**Degrees of freedom: S − 1.** The row part ``c̄`` is known from thousands of rows; the seed part from ``S`` values.
Satterthwaite's df ``(v_seed + v_rows)² / (v_seed² / (S − 1))`` rises exactly when the ``S − 1``-df seed variance is
small by chance, which is when ``|t|`` is large: with 3 seeds and real seed-to-seed shifts its tail at α/10 ran at 3–5×
nominal. Student-t on ``S − 1`` df is exact when the rows add nothing and conservative otherwise (for
``T = Z / √(λW + 1 − λ)``, ``W ~ χ²_{S−1} / (S − 1)``, the tail ``E[2Φ̄(t√x)]`` is convex in ``x``, so any share ``λ``
of seed variance gives a tail no heavier than ``λ = 1``, the t distribution), at every level Holm uses. The minimum
detectable effects use the same df, so the price (a wide interval with 3 seeds) is printed beside each verdict.
Item claims, where one fixed baseline encoder makes the shared part a large share of ``se²``, are far from ``λ = 1``
and read a calibrated reference instead (:class:`SharedNoiseReference`, :mod:`faircl.eval.item_nulls`), carried by
the :class:`Effect` itself (:attr:`Effect.reference`) so that its intervals at every level agree with its p-value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats

from faircl.eval.shared_reference import SharedNoiseReference

__all__ = ["BiasTest", "Effect", "GAP_METRICS", "SharedNoiseReference", "bias_is_real", "confusion_from_rows",
           "gap_from_confusion", "holm", "leakage_null", "minimum_detectable_effect", "paired_bootstrap",
           "paired_seed_comparison", "permutation_null", "seed_row_effect", "shared_row_variance"]
GAP_METRICS = ("tpr_gap_rms", "eo_gap", "accuracy", "balanced_accuracy")


# ------------------------------------------------------------------------------------------ gaps from counts
def _as_rows(y, pred, a) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y, pred, a = (np.asarray(v, dtype=np.int64) for v in (y, pred, a))
    if not (y.shape == pred.shape[-1:] == a.shape[-1:]) or y.ndim != 1:
        raise ValueError(f"y, prediction and attribute need one value per row, got shapes {y.shape}, {pred.shape}, "
                         f"{a.shape}")
    return y, pred, a


def confusion_from_rows(y, pred, a, num_classes: int, num_groups: int, weights: np.ndarray | None = None
                        ) -> np.ndarray:
    """Per-group confusion counts ``[..., G + 1, C, C]`` (rows: true class; last group: unknown attribute ``-1``).

    Args:
        y: true class of each row, shape ``[n]``.
        pred: predicted class, shape ``[n]`` or ``[..., n]`` (e.g. one row per seed).
        a: attribute of each row (``-1`` unknown), shape ``[n]`` or ``[..., n]`` (e.g. one row per permutation).
        num_classes: ``C``.
        num_groups: ``G`` (known groups).
        weights: optional ``[B, n]`` row weights (bootstrap counts); the result then gains a leading ``B`` axis.

    Returns:
        float64 counts.
    """
    y, pred, a = _as_rows(y, pred, a)
    a = np.where(a < 0, num_groups, a)
    cell = (a * num_classes + y) * num_classes + pred              # broadcasts over leading axes
    k = (num_groups + 1) * num_classes * num_classes
    lead = cell.shape[:-1]
    if weights is None:
        flat = (np.arange(int(np.prod(lead)), dtype=np.int64).reshape(lead + (1,)) * k + cell).ravel()
        counts = np.bincount(flat, minlength=int(np.prod(lead)) * k).astype(np.float64)
        return counts.reshape(lead + (num_groups + 1, num_classes, num_classes))
    w = np.asarray(weights, dtype=np.float64)
    onehot = np.zeros(cell.shape + (k,))
    np.put_along_axis(onehot, cell[..., None], 1.0, axis=-1)      # [..., n, k]
    counts = np.tensordot(w, onehot, axes=([1], [onehot.ndim - 2]))  # [B, ..., k]: BLAS, not einsum's loops
    return counts.reshape(counts.shape[:-1] + (num_groups + 1, num_classes, num_classes))


def _rates(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One-vs-rest TPR and FPR ``[..., C]`` of counts ``[..., C, C]`` (NaN where undefined)."""
    tp = np.diagonal(m, axis1=-2, axis2=-1)
    pos, pred, n = m.sum(-1), m.sum(-2), m.sum((-2, -1))[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pos > 0, tp / pos, np.nan), np.where(n - pos > 0, (pred - tp) / (n - pos), np.nan)


def _dev_sum(per_group: np.ndarray, overall: np.ndarray) -> np.ndarray:
    """``Σ_a |R_{a,y} − R_y|`` over the groups whose rate is defined; NaN when none is."""
    dev = np.abs(per_group - overall[..., None, :])                 # [..., G, C]
    defined = ~np.isnan(dev)
    return np.where(defined.any(-2), np.where(defined, dev, 0.0).sum(-2), np.nan)


def gap_from_confusion(counts: np.ndarray, metric: str) -> np.ndarray:
    """A metric of confusion counts ``[..., G + 1, C, C]`` (as :func:`confusion_from_rows`), vectorised.

    Args:
        counts: the counts; the last group holds rows of unknown attribute (left out of the gaps).
        metric: ``tpr_gap_rms`` (Shen's GAP: RMS over classes of ``Σ_a |TPR_{a,y} − TPR_y|``), ``eo_gap`` (Chi's
            ΔEO, ``Σ_a |TPR_a − TPR| + |FPR_a − FPR|`` of the positive class for binary tasks, of every class
            otherwise), ``accuracy`` or ``balanced_accuracy`` (over every row).

    Returns:
        float64 array of shape ``counts.shape[:-3]``; gaps are NaN with fewer than two groups present.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if metric in ("accuracy", "balanced_accuracy"):
        m = counts.sum(-3)
        diag = np.diagonal(m, axis1=-2, axis2=-1)
        if metric == "accuracy":
            return diag.sum(-1) / m.sum((-2, -1))
        pos = m.sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.nanmean(np.where(pos > 0, diag / pos, np.nan), axis=-1)
    if metric not in GAP_METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {GAP_METRICS}")
    known = counts[..., :-1, :, :]
    present = (known.sum((-2, -1)) > 0).sum(-1) >= 2
    tpr_g, fpr_g = _rates(known)
    tpr, fpr = _rates(known.sum(-3))
    dt, df = _dev_sum(tpr_g, tpr), _dev_sum(fpr_g, fpr)
    with np.errstate(invalid="ignore"):
        if metric == "tpr_gap_rms":
            out = np.sqrt(np.nanmean(dt ** 2, axis=-1)) if dt.shape[-1] else np.full(dt.shape[:-1], np.nan)
        else:
            cls = slice(1, None) if dt.shape[-1] == 2 else slice(None)
            terms = np.concatenate([dt[..., cls], df[..., cls]], axis=-1)
            out = np.where(np.isnan(terms).all(-1), np.nan, np.nansum(terms, -1))
    return np.where(present, out, np.nan)


# ------------------------------------------------------------------------------------------ is there a bias?
@dataclass(frozen=True)
class BiasTest:
    """The baseline's gap against a null in which the attribute carries no information.

    Attributes:
        observed: the gap (mean over seeds).
        null_q95: the null's 95th percentile (or the ``level`` quantile).
        null_mean: the null's mean.
        p_value: ``(1 + #{null ≥ observed}) / (1 + B)``.
        lo, hi: bootstrap interval of the observed gap over test rows (NaN when not computed).
        split: which split it was measured on.
        alpha: the screen's level (1 − the quantile's level): a real bias has ``p_value ≤ alpha``.
    """

    observed: float
    null_q95: float
    null_mean: float
    p_value: float
    lo: float = math.nan
    hi: float = math.nan
    split: str = "test"
    alpha: float = 0.05

    @property
    def real(self) -> bool:
        """Whether the observed gap exceeds the null quantile **and** its p-value is at most ``alpha`` (1 − the
        quantile's level). The p-value ``(1 + #{null ≥ observed}) / (1 + B)`` makes the screen exact at ``alpha``
        for any number of permutations ``B``; the quantile alone lets a bias-free protocol through about
        ``alpha + 1 / B`` of the time (5.9% with 100 permutations)."""
        return bool(self.observed > self.null_q95 and self.p_value <= self.alpha * (1 + 1e-9))

    def describe(self) -> str:
        """``split gap x (null 95%: q)`` in points."""
        return f"{self.split} {100 * self.observed:.1f} (null 95%: {100 * self.null_q95:.1f})"


def _weights(rng: np.random.Generator, n: int, draws: int) -> np.ndarray:
    """Bootstrap counts ``[draws, n]`` (each row a multinomial resample of ``n`` items: the counts of ``n`` uniform
    draws with replacement, tallied in one ``bincount``)."""
    flat = (rng.integers(0, n, size=(draws, n)) + n * np.arange(draws)[:, None]).ravel()
    return np.bincount(flat, minlength=draws * n).reshape(draws, n).astype(np.float64)


def _weighted_gaps(y: np.ndarray, preds: np.ndarray, a: np.ndarray, c: int, g: int, weights: np.ndarray,
                   metric: str, max_cells: int = 4_000_000) -> np.ndarray:
    """``gap_from_confusion(confusion_from_rows(y, preds, a, c, g, weights), metric)``, computed over blocks of
    resamples so that memory stays bounded with many classes (28 classes: 2,352 cells per model and seed)."""
    per_draw = int(np.prod(preds.shape[:-1])) * (g + 1) * c * c
    block = max(1, max_cells // max(per_draw, 1))
    return np.concatenate([gap_from_confusion(confusion_from_rows(y, preds, a, c, g, weights[i:i + block]), metric)
                           for i in range(0, len(weights), block)])


def _permuted_within_label(y: np.ndarray, a: np.ndarray, n_perm: int, rng: np.random.Generator) -> np.ndarray:
    """``[n_perm, n]`` copies of ``a``, each permuted among the rows of every label (known attributes only)."""
    out = np.broadcast_to(a, (n_perm, len(a))).copy()
    for c in np.unique(y):
        rows = np.flatnonzero((y == c) & (a >= 0))
        if len(rows) > 1:
            order = np.argsort(rng.random((n_perm, len(rows))), axis=1)
            out[:, rows] = a[rows][order]
    return out


def permutation_null(y, preds_by_seed, a, metric: str = "tpr_gap_rms", *, num_classes: int | None = None,
                     num_groups: int | None = None, n_permutations: int = 1000, n_bootstrap: int = 1000,
                     level: float = 0.95, seed: int = 0, split: str = "test", strata=None) -> BiasTest:
    """The baseline's gap (mean over seeds) against the attribute-permuted null, plus a row bootstrap.

    Args:
        y: true class per row ``[n]`` (the same rows for every seed).
        preds_by_seed: predictions ``[S, n]`` (or ``[n]`` for one seed).
        a: attribute per row ``[n]`` (``-1`` unknown: left out of the gap and never permuted).
        metric: ``tpr_gap_rms`` or ``eo_gap``.
        num_classes, num_groups: default to the largest id + 1.
        n_permutations: permutations of the attribute within each label (≥ 1,000 recommended); every seed's
            predictions see the same permutation, so the null is that of the seed-mean gap.
        n_bootstrap: bootstrap resamples of the test rows for the observed gap's interval (0: none).
        level: the null quantile that a real bias must exceed.
        seed: random seed of the permutations and resamples.
        split: name printed with the result.
        strata: ``[n]`` integer stratum per row within which the attribute is permuted (default: the label ``y``;
            pooled splits pass label × split, so that the null keeps each split's attribute counts per label).

    Returns:
        A :class:`BiasTest`.
    """
    preds = np.atleast_2d(np.asarray(preds_by_seed, dtype=np.int64))
    y, preds, a = _as_rows(y, preds, a)
    strata = y if strata is None else np.asarray(strata, dtype=np.int64)
    if strata.shape != y.shape:
        raise ValueError(f"strata need one value per row, got shape {strata.shape} for {y.shape[0]} rows")
    c = int(num_classes or max(y.max(), preds.max()) + 1)
    g = int(num_groups or a.max() + 1)
    rng = np.random.default_rng(seed)
    observed = float(np.mean(gap_from_confusion(confusion_from_rows(y, preds, a, c, g), metric)))
    perm = _permuted_within_label(strata, a, n_permutations, rng)                 # [P, n]
    block = max(1, 2_000_000 // preds.size)                                        # bounded memory
    null = np.concatenate([gap_from_confusion(confusion_from_rows(y, preds[None], perm[i:i + block, None], c, g),
                                              metric).mean(-1) for i in range(0, n_permutations, block)])
    lo = hi = math.nan
    if n_bootstrap:
        boot = _weighted_gaps(y, preds, a, c, g, _weights(rng, len(y), n_bootstrap), metric).mean(-1)
        lo, hi = (float(q) for q in np.nanquantile(boot, [0.025, 0.975]))
    return BiasTest(observed, float(np.nanquantile(null, level)), float(np.nanmean(null)),
                    float((1 + np.sum(null >= observed)) / (1 + n_permutations)), lo, hi, split, 1 - level)


def leakage_null(leakage_by_seed: Sequence[float], majority_rate: float, n_rows: int, level: float = 0.95,
                 split: str = "test") -> BiasTest:
    """Leakage (a probe's accuracy for the attribute) against a constant guess of the majority group.

    A probe whose output ignores the attribute scores at most the majority-group rate ``p`` on average; its accuracy
    over ``n_rows`` test rows is then at most Binomial(n, p) / n, whose ``level`` quantile is the null quantile.

    Args:
        leakage_by_seed: the baseline's leakage per seed (fractions).
        majority_rate: share of the most frequent attribute value among the test rows with a known attribute.
        n_rows: number of such rows.
        level: quantile.
        split: name printed with the result.

    Returns:
        A :class:`BiasTest` (observed = mean leakage).
    """
    obs = float(np.mean(leakage_by_seed))
    q = float(stats.binom.ppf(level, n_rows, majority_rate)) / n_rows
    p = float(stats.binom.sf(math.ceil(obs * n_rows) - 1, n_rows, majority_rate))
    return BiasTest(obs, q, float(majority_rate), p, split=split, alpha=1 - level)


def bias_is_real(*tests: BiasTest) -> bool:
    """True only if the gap exceeds its null quantile on every split given (test **and** validation)."""
    if not tests:
        raise ValueError("bias_is_real needs at least one BiasTest (test and validation splits)")
    return all(t.real for t in tests)


# ------------------------------------------------------------------------------------------ did it change?
@dataclass(frozen=True)
class Effect:
    """A paired change (method − baseline) over seeds.

    Attributes:
        mean: the mean change over seeds (on all test rows).
        lo, hi: the two-sided ``level`` interval (infinite with one seed).
        p_value: two-sided p-value of "no change".
        se: standard error of the mean change.
        df: degrees of freedom (seeds − 1); with a :attr:`reference`, the Student-t df whose two-sided 95% quantile
            is the reference's (for code that reads a t quantile off ``df``; :meth:`interval` uses the reference).
        n_seeds: seeds.
        n_rows: test rows resampled (0: seed-level only, from summary numbers).
        shared: the part of ``se²`` that every seed shares (the rows' or items' noise ``c̄``; 0 from summary numbers):
            it does not shrink with more seeds, only with more rows (:func:`seed_row_effect`).
        reference: the distribution of ``mean / se`` under "no change" that :attr:`p_value`, :attr:`lo`,
            :attr:`hi` and :meth:`interval` come from (:class:`SharedNoiseReference`: the item claims'); ``None``:
            Student-t on :attr:`df`.
    """

    mean: float
    lo: float
    hi: float
    p_value: float
    se: float
    df: float
    n_seeds: int
    n_rows: int = 0
    shared: float = 0.0
    reference: SharedNoiseReference | None = None

    def quantile(self, level: float) -> float:
        """The two-sided ``level`` quantile of ``|mean − true| / se``: the reference's, else Student-t on
        :attr:`df`."""
        if self.reference is not None:
            return self.reference.quantile(level)
        return float(stats.t.ppf(0.5 + level / 2, self.df))

    def interval(self, level: float) -> tuple[float, float]:
        """The two-sided ``level`` interval of the change, ``mean ± quantile(level) · se`` (:meth:`quantile`: the
        :attr:`reference`, else Student-t on :attr:`df`): the interval the verdict rule reads its words from at a
        level other than the stored 95% one; it excludes 0 exactly when :attr:`p_value` < 1 − ``level``. ``(−∞, ∞)``
        without a variance estimate (one seed); the point itself when ``se`` is 0."""
        if self.df < 1 or not math.isfinite(self.se):
            return -math.inf, math.inf
        if self.se <= 0:
            return self.mean, self.mean
        half = self.quantile(level) * self.se
        return self.mean - half, self.mean + half

    def fmt(self, scale: float = 100.0, digits: int = 1) -> str:
        """``"mean [lo, hi]"`` in points."""
        if not math.isfinite(self.lo):
            return f"{scale * self.mean:+.{digits}f} [−∞, ∞]"
        return f"{scale * self.mean:+.{digits}f} [{scale * self.lo:+.{digits}f}, {scale * self.hi:+.{digits}f}]"


#: a spread this many machine epsilons of the mean (or less) is round-off, i.e. zero
ROUND_OFF = 8 * float(np.finfo(np.float64).eps)


def paired_differences(method, baseline) -> np.ndarray:
    """``method − baseline`` elementwise, where a difference within round-off of the compared values
    (``|d| <= 8·eps·max(|method|, |baseline|)``) is exactly 0: the same score computed by two summation orders (another
    CPU's kernels) is a tie, not an effect."""
    m, b = np.asarray(method, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    d = m - b
    return np.where(np.abs(d) <= ROUND_OFF * np.maximum(np.abs(m), np.abs(b)), 0.0, d)


def _t_effect(mean: float, se: float, df: float, level: float, n_seeds: int, n_rows: int,
              shared: float = 0.0) -> Effect:
    """The t interval and p-value of ``mean`` with standard error ``se``. A standard error within round-off of the
    mean (``se <= 8·eps·|mean|``: equal per-seed values, whose variance is exactly 0 or ``1e-17`` depending on the
    CPU's summation) is zero: the interval is the point and the p-value 0 (1 when the mean is 0)."""
    if df < 1 or not math.isfinite(se):
        return Effect(mean, -math.inf, math.inf, 1.0, math.inf, max(df, 0), n_seeds, n_rows, shared)
    if se <= ROUND_OFF * abs(mean):
        p = 1.0 if mean == 0 else 0.0
        return Effect(mean, mean, mean, p, 0.0, df, n_seeds, n_rows, shared)
    half = float(stats.t.ppf(0.5 + level / 2, df)) * se
    p = float(2 * stats.t.sf(abs(mean) / se, df))
    return Effect(mean, mean - half, mean + half, p, se, df, n_seeds, n_rows, shared)


def seed_row_effect(d, resampled: np.ndarray | None = None, level: float = 0.95, n_rows: int = 0) -> Effect:
    """The seeds × rows rule (module docstring), for rows and items alike: the mean of the per-seed changes ``d``
    with variance ``var_s(d) / S + c̄`` (``c̄``: :func:`shared_row_variance` of ``resampled``, the noise of the rows
    or items that every seed shares, each noise counted once) and Student-t on ``S − 1`` degrees of freedom.

    Args:
        d: per-seed changes ``[S]`` (method − baseline, on all rows / items).
        resampled: ``[B, S]`` per-seed changes on ``B`` resamples of the rows (or items) shared by every seed and both
            models; ``None``: the paired t-test of ``d``.
        level: interval level.
        n_rows: rows or items resampled (reported; 0 without ``resampled``).

    Returns:
        An :class:`Effect` (infinite interval with one seed: the seed variance is unknown).
    """
    d = np.asarray(d, dtype=np.float64)
    s = len(d)
    if s < 2:
        return _t_effect(float(d.mean()), math.inf, 0, level, s, n_rows)
    v_shared = 0.0 if resampled is None else shared_row_variance(resampled)
    return _t_effect(float(d.mean()), math.sqrt(float(d.var(ddof=1)) / s + v_shared), s - 1, level, s, n_rows,
                     v_shared)


def paired_seed_comparison(baseline_by_seed: Sequence[float], method_by_seed: Sequence[float],
                           level: float = 0.95) -> Effect:
    """The paired t-test of per-seed summary numbers (no per-row data), e.g. the test GAP of two run folders.

    Args:
        baseline_by_seed: the baseline's value per seed.
        method_by_seed: the method's value for the same seeds, in the same order.
        level: interval level.

    Returns:
        An :class:`Effect` of ``method − baseline`` (``n_rows`` 0).
    """
    b, m = np.asarray(baseline_by_seed, dtype=np.float64), np.asarray(method_by_seed, dtype=np.float64)
    if b.shape != m.shape or b.ndim != 1 or len(b) == 0:
        raise ValueError(f"paired runs need as many method as baseline values (1-d), got {m.shape} and {b.shape}")
    if not (np.isfinite(b).all() and np.isfinite(m).all()):
        raise ValueError(f"values must be finite, got baseline {b.tolist()} and method {m.tolist()}")
    return seed_row_effect(paired_differences(m, b), None, level)


def paired_bootstrap(y, a, baseline_preds, method_preds, metric: str = "tpr_gap_rms", *,
                     num_classes: int | None = None, num_groups: int | None = None, n_bootstrap: int = 2000,
                     level: float = 0.95, seed: int = 0, resample_rows: bool = True) -> Effect:
    """Seed-paired change of a metric, with the seed level and a test-row bootstrap nested inside it.

    The change is the mean over seeds of ``metric(method) − metric(baseline)`` on the test rows. Its variance counts
    each noise of the seeds × rows design once (module docstring): the seeds' spread ``var_s(d) / S`` (training noise
    and each seed's own row noise) plus the row noise that every seed shares, the mean covariance between seeds of
    the change over row resamples (one resample shared by every seed and both models, as they are scored on the same
    rows; :func:`shared_row_variance`). The interval and p-value are Student-t on ``S − 1`` degrees of freedom; with
    ``resample_rows=False`` (or rows whose noise no two seeds share) this is exactly the paired t-test of the
    per-seed values.

    Args:
        y: true class per row ``[n]``.
        a: attribute per row ``[n]`` (``-1`` unknown).
        baseline_preds, method_preds: predictions ``[S, n]`` paired by seed.
        metric: one of :data:`GAP_METRICS`.
        num_classes, num_groups: default to the largest id + 1.
        n_bootstrap: row resamples.
        level: interval level.
        seed: random seed of the resamples.
        resample_rows: include the test rows' sampling variance.

    Returns:
        An :class:`Effect` (infinite interval with one seed: the seed variance is unknown).
    """
    base, meth = (np.atleast_2d(np.asarray(p, dtype=np.int64)) for p in (baseline_preds, method_preds))
    if base.shape != meth.shape:
        raise ValueError(f"paired runs need the same seeds × rows, got {base.shape} and {meth.shape}")
    y, both, a = _as_rows(y, np.stack([base, meth]), a)
    c = int(num_classes or max(y.max(), both.max()) + 1)
    g = int(num_groups or a.max() + 1)
    s, n = base.shape
    per_seed = gap_from_confusion(confusion_from_rows(y, both, a, c, g), metric)          # [2, S]
    d = paired_differences(per_seed[1], per_seed[0])
    if np.isnan(d).any():
        raise ValueError(f"{metric} is undefined for seed(s) {np.flatnonzero(np.isnan(d)).tolist()} "
                         "(fewer than two groups or an empty class)")
    resampled = None
    if resample_rows and s > 1:
        rng = np.random.default_rng(seed)
        vals = _weighted_gaps(y, both, a, c, g, _weights(rng, n, n_bootstrap), metric)     # [B, 2, S]
        resampled = vals[:, 1] - vals[:, 0]
    return seed_row_effect(d, resampled, level, n if resample_rows else 0)


def shared_row_variance(resampled: np.ndarray) -> float:
    """The row noise that every seed shares: the mean covariance between two seeds' values over row resamples.

    Args:
        resampled: ``[B, S]`` per-seed values (e.g. paired changes) on ``B`` resamples of the rows shared by every
            seed (resamples with an undefined value are left out).

    Returns:
        ``(S · var_b(mean_s) − mean_s var_b) / (S − 1)``, the mean off-diagonal covariance, floored at 0 (a negative
        estimate is a shared noise of zero); 0 with fewer than two seeds or resamples.
    """
    x = np.asarray(resampled, dtype=np.float64)
    x = x[~np.isnan(x).any(axis=1)]
    b, s = x.shape
    if b < 2 or s < 2:
        return 0.0
    v_mean = float(np.var(x.mean(axis=1), ddof=1))
    v_each = float(np.mean(np.var(x, axis=0, ddof=1)))
    return max(0.0, (s * v_mean - v_each) / (s - 1))


def minimum_detectable_effect(effect: Effect, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true change a two-sided t-test at ``alpha`` detects with probability ``power``:
    ``(t_{1−α/2} + t_{power}) · se`` with the effect's degrees of freedom, or its :attr:`Effect.reference`'s quantiles
    where it has one (infinite with one seed)."""
    if effect.df < 1 or not math.isfinite(effect.se):
        return math.inf
    return float((effect.quantile(1 - alpha) + effect.quantile(2 * power - 1)) * effect.se)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (NaN entries are not part of the family and stay NaN)."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full_like(p, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    m = len(idx)
    if m == 0:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out[order] = adj
    return out
