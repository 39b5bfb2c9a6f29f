"""Is there a bias to remove, and did a method change it — for bias scores measured on benchmark *items*.

:mod:`faircl.eval.verdicts` decides claims about classifiers from per-row predictions. Embedding-bias benchmarks
score an encoder on items instead: sentence pairs (CrowS-Pairs, StereoSet), target words (SEAT), queries
(Bias-IR). This module gives their nulls — what the score looks like when the encoder carries no preference — and
the paired change with the item bootstrap nested in the seeds. Results are :class:`~faircl.eval.verdicts.BiasTest`
and :class:`~faircl.eval.verdicts.Effect`, so :func:`faircl.eval.verdicts.decide` takes them unchanged.

Nulls (each compared with the observed score at its 95th percentile):

* :func:`binomial_preference_null` — a *preference share* (% of pairs where the stereotyping sentence wins; 50 =
  fair), judged by ``|share − 0.5|``: under "no preference" each pair is a fair coin (the sign-flip null of the
  per-pair score difference), so ``|K/n − 0.5|`` with ``K ~ Binomial(n, 0.5)``, computed exactly.
* :func:`seat_permutation_null` — SEAT / WEAT: the mean ``|d|`` over several tests against re-partitions of each
  test's target set ``X ∪ Y`` (SEAT's own permutation test). Template sentences made from the same target word are
  not exchangeable, so the unit permuted (and bootstrapped) is the *word*: all of its sentences move together.
* :func:`grouped_label_null` — retrieval shares (Bias-IR): the male share ``#M / (#M + #F)`` of each query's top k,
  averaged per stratum (category), judged by the mean ``|share − 0.5|``. Documents come in groups that differ only in
  their gender wording; the null permutes the gender labels *within each group*, i.e. a retriever that ranks a
  document's male and female wording at random: the retrieved members of a group get labels drawn without
  replacement from the group's labels.

:func:`paired_item_bootstrap`: the change ``method − baseline`` per seed on the same items, with the standard error
of the rows' rule (:func:`faircl.eval.statistics.seed_row_effect`): ``se² = var_s(d) / S + c̄``, the seeds' spread
(training noise and each seed's own item noise) plus the item noise every seed shares (``c̄``, the mean covariance
between seeds over one resample of the items, stratified, shared by every seed and both models), each noise once. All
values are fractions (``|d|`` as it is); a reduction is negative.

**The calibrated item test: why not Student-t on S − 1 df.** Rows and items share that standard error but not its
reference distribution. One fixed baseline encoder scores the same items for every seed, so its item noise is shared
by all of them: ``c̄`` is a large part of ``se²`` (a third at 3 seeds with 4-point seed shifts on the calibration's
item design) and is known from hundreds of items, not from ``S − 1`` df. With ``λ`` the seeds' share of ``se²``,
``t = mean / se`` is under "no change" ``Z / √(λW + 1 − λ)`` (``W ~ χ²_{S−1} / (S − 1)``): much lighter-tailed than
``t_{S−1}``. On that design (3 seeds, 4-point shifts) its 95% quantile is 2.57 against t₂'s 4.30, and Student-t on
``S − 1`` df gave p < 0.05 in 0.7% of no-effect claims, with a power of 2.7% against a 4-point fall where a test of
the same size calibrated to the null has 18.5%. Plugging the estimate ``λ̂`` in — a parametric bootstrap at the fitted
components, or Satterthwaite's df — is anti-conservative (Satterthwaite: 7.0% at 0.05 on that design; the plug-in
bootstrap up to 9% with 3 seeds): ``λ̂`` is small exactly when the seeds' spread is small by chance, which is when
``|t|`` is large.

**The reference** (:func:`shared_noise_effect`, :class:`~faircl.eval.statistics.SharedNoiseReference`): the fiducial
(generalised pivotal) distribution of the standardised mean, ``T = Z · √(λ* / W + (1 − λ*) / V)``: the seeds' variance
drawn as ``s² / W``, the shared part as ``c̄ / V`` with ``V ~ χ²_ν / ν`` its own precision (``ν = 2c̄² / var(c̄)``,
the jackknife over the resamples: :func:`shared_variance_df`), at the seed share ``λ* = λ̂^{3/2}``. The p-value and
the interval at every level (:meth:`~faircl.eval.statistics.Effect.interval`, the verdict rule's ``1 − α/(2m)``) are
read off it, so they agree; ``Effect.df`` is the Student-t df with the same 95% quantile. At ``λ̂ = 1`` (no shared
noise) it is Student-t on ``S − 1`` df exactly. The fiducial reference at ``λ̂`` itself is conservative (2.4–4.3% at
0.05 with 3 seeds); the exponent 3/2 comes from the exact size (quadrature over ``W``) over true shares 0.05–0.97:
0.71–1.06 × α at α = 0.05 and 0.49–1.64 × α at α/10 with 3 seeds, 0.87–1.01 and 0.83–1.28 with 5, 0.93–1.00 and
0.95–1.14 with 8 (on the item design, 1.4 gave 3.4% at 3 seeds without shifts, 1.6 gave 1.03% at α/10 with 8-point
shifts). Validation on the calibration's item designs (no effect, seed shifts of 0, 4 and 8 points, 3, 5 and 8 seeds;
``benchmarks/calibration/results/calibration.md``, 2,000 claims a cell, 100 resamples): p < α in 3.0, 4.2 and 5.5% of
claims at 3 seeds, 4.3, 4.2 and 5.2% at 5, 5.6, 5.5 and 5.2% at 8 (shifts 0, 4, 8), p < α/10 in 0.1–0.9%; Student-t
on ``S − 1`` df on the same claims 0.1–3.5% and 0.0–0.1%. Power against a 4-point fall with 4-point shifts: 16.0%
against 2.0% at 3 seeds, 23.7% against 12.7% at 5, 34.5% against 26.0% at 8. At 3 seeds without shifts (the smallest
seed share, λ ≈ 0.4) the size stays under 3.5% (3.0% there, 3.7% in another 4,000 claims): with 2 df for the seeds no
exponent lifts it without taking α/10 above 1% at 8-point shifts.

Example (CrowS-Pairs-style preferences of a deterministic baseline encoder and of three trained seeds)::

    from faircl.eval.verdicts import ClaimEvidence, decide, paired_seed_comparison
    from faircl.eval.item_nulls import binomial_preference_null, paired_item_bootstrap, preference_deviation

    bias = (binomial_preference_null(base_prefs[test], split="test"),
            binomial_preference_null(base_prefs[val], split="validation"))
    stat = lambda prefs, w: preference_deviation(prefs[test], w)
    effect = paired_item_bootstrap(stat, [base_prefs] * 3, method_prefs_by_seed, strata=[0] * len(test))
    verdict, = decide([ClaimEvidence("M moves the score toward 50", effect,
                                     paired_seed_comparison(base_acc, method_acc), -0.096, bias)])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from faircl.eval.statistics import (BiasTest, Effect, SharedNoiseReference, paired_differences, seed_row_effect,
                                    shared_row_variance)

__all__ = ["SHARE_EXPONENT", "SeatItems", "binomial_preference_null", "grouped_label_null", "paired_item_bootstrap",
           "preference_deviation", "seat_mean_abs_effect", "seat_permutation_null", "seat_units", "share_deviation",
           "shared_noise_effect", "shared_variance_df", "stratified_weights"]


def stratified_weights(strata: Sequence, n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap counts ``[B, U]``: each row resamples the units of every stratum with replacement (same sizes)."""
    strata = np.asarray(strata)
    w = np.zeros((n_bootstrap, len(strata)))
    for s in np.unique(strata):
        idx = np.flatnonzero(strata == s)
        w[:, idx] = rng.multinomial(len(idx), np.full(len(idx), 1.0 / len(idx)), size=n_bootstrap)
    return w


def _interval(boot: np.ndarray) -> tuple[float, float]:
    boot = boot[np.isfinite(boot)]
    if boot.size == 0:
        return math.nan, math.nan
    lo, hi = np.quantile(boot, [0.025, 0.975])
    return float(lo), float(hi)


def _p_value(null: np.ndarray, observed: float) -> float:
    null = null[np.isfinite(null)]
    return float((1 + np.sum(null >= observed - 1e-12)) / (1 + len(null)))


# ------------------------------------------------------------------------------------------ preference shares
def preference_deviation(preferred, weights: np.ndarray | None = None) -> np.ndarray:
    """``|share − 0.5|`` of 0/1 preferences ``[n]`` (per weight row ``[B, n]``; ``[1]`` without weights)."""
    x = np.asarray(preferred, dtype=np.float64)
    w = np.ones((1, len(x))) if weights is None else np.atleast_2d(weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs((w * x).sum(-1) / w.sum(-1) - 0.5)


def binomial_preference_null(preferred, level: float = 0.95, n_bootstrap: int = 1000, seed: int = 0,
                             split: str = "test") -> BiasTest:
    """A preference share against "no preference" (each item a fair coin), judged by ``|share − 0.5|``.

    Args:
        preferred: 1 where the item's stereotyping member wins, else 0 (``[n]``, one scorer).
        level: the null quantile a real bias must exceed.
        n_bootstrap: item resamples for the observed value's interval (0: none).
        seed: random seed of the resamples.
        split: name printed with the result.

    Returns:
        A :class:`BiasTest` whose ``observed`` is ``|share − 0.5|``; the null is exact (``K ~ Binomial(n, ½)``) and
        the p-value is ``P(|K/n − ½| ≥ observed)``.
    """
    x = np.asarray(preferred, dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.isin(x, (0.0, 1.0)).all():
        raise ValueError(f"preferences must be a non-empty 1-d array of 0/1, got shape {x.shape}")
    n = len(x)
    k = np.arange(n + 1)
    pmf = stats.binom.pmf(k, n, 0.5)
    dev = np.abs(k / n - 0.5)
    order = np.argsort(dev, kind="stable")
    cdf = np.cumsum(pmf[order])
    q = float(dev[order][min(np.searchsorted(cdf, level - 1e-12), n)])
    observed = float(abs(x.mean() - 0.5))
    p = float(pmf[dev >= observed - 1e-12].sum())
    lo = hi = math.nan
    if n_bootstrap:
        w = stratified_weights(np.zeros(n), n_bootstrap, np.random.default_rng(seed))
        lo, hi = _interval(preference_deviation(x, w))
    return BiasTest(observed, q, float((pmf * dev).sum()), min(p, 1.0), lo, hi, split, 1 - level)


# ------------------------------------------------------------------------------------------ SEAT
@dataclass(frozen=True)
class SeatItems:
    """One SEAT test's target items: association ``s(w, A, B)`` per item, whether it is in X, and its unit (the
    target word it was made from; items of one unit are permuted and resampled together)."""

    s: np.ndarray
    in_x: np.ndarray
    cluster: np.ndarray

    def __post_init__(self) -> None:
        s = np.asarray(self.s, dtype=np.float64)
        in_x = np.asarray(self.in_x).astype(bool)
        cl = np.asarray(self.cluster)
        if not (s.ndim == 1 and s.shape == in_x.shape == cl.shape) or in_x.all() or not in_x.any():
            raise ValueError(f"a SEAT test needs s, in_x, cluster of one length with items in X and in Y; got "
                             f"{s.shape}, {in_x.shape}, {cl.shape}")
        ids, inv = np.unique(cl, return_inverse=True)
        unit_x = np.zeros(len(ids), dtype=bool)
        unit_x[inv[in_x]] = True
        if (unit_x[inv] != in_x).any():
            raise ValueError("a SEAT unit (target word) must lie wholly in X or wholly in Y")
        object.__setattr__(self, "s", s)
        object.__setattr__(self, "in_x", in_x)
        object.__setattr__(self, "cluster", inv)
        object.__setattr__(self, "_unit_x", unit_x)

    @property
    def unit_in_x(self) -> np.ndarray:
        """Per unit (``0 … K−1``): whether it is in X."""
        return self._unit_x


def seat_units(tests: Sequence[SeatItems]) -> np.ndarray:
    """Stratum of every unit of ``tests`` (in order): ``2·test + (unit in Y)``, for :func:`stratified_weights`."""
    return np.concatenate([2 * i + (~t.unit_in_x).astype(int) for i, t in enumerate(tests)])


def _weighted_d(s: np.ndarray, in_x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Effect size ``(mean_X s − mean_Y s) / std_{X∪Y} s`` per weight row ``[B, n]`` (weighted, ddof 1)."""
    wx, wy = w * in_x, w * ~in_x
    with np.errstate(invalid="ignore", divide="ignore"):
        mx, my = (wx * s).sum(-1) / wx.sum(-1), (wy * s).sum(-1) / wy.sum(-1)
        tot = w.sum(-1)
        m = (w * s).sum(-1) / tot
        var = (w * (s - m[:, None]) ** 2).sum(-1) / (tot - 1)
        return np.where(var > 0, (mx - my) / np.sqrt(var), np.nan)


def seat_mean_abs_effect(tests: Sequence[SeatItems], unit_weights: np.ndarray | None = None) -> np.ndarray:
    """Mean ``|d|`` over ``tests`` (per row of unit weights ``[B, U]``, units ordered as :func:`seat_units`)."""
    out, off = [], 0
    for t in tests:
        k = len(t.unit_in_x)
        if unit_weights is None:
            w = np.ones((1, len(t.s)))
        else:
            w = np.atleast_2d(unit_weights)[:, off:off + k][:, t.cluster]
        out.append(np.abs(_weighted_d(t.s, t.in_x, w)))
        off += k
    return np.nanmean(np.stack(out), axis=0)


def seat_permutation_null(tests: Sequence[SeatItems], n_permutations: int = 10000, level: float = 0.95,
                          n_bootstrap: int = 1000, seed: int = 0, split: str = "test") -> BiasTest:
    """The mean ``|d|`` over SEAT tests against re-partitions of every test's target units into X and Y.

    Each permutation re-draws, independently per test, which units (target words, with all their sentences) form
    X (as many as X has); the attribute sets stay fixed, so each sentence keeps its association ``s``.

    Args:
        tests: the tests' items.
        n_permutations: re-partitions drawn.
        level: the null quantile a real bias must exceed.
        n_bootstrap: unit resamples (within X and within Y of every test) for the observed value's interval.
        seed: random seed.
        split: name printed with the result.

    Returns:
        A :class:`BiasTest` of the mean ``|d|``.
    """
    if not tests:
        raise ValueError("seat_permutation_null needs at least one test")
    rng = np.random.default_rng(seed)
    observed = float(seat_mean_abs_effect(tests)[0])
    nulls = []
    for t in tests:
        k, kx = len(t.unit_in_x), int(t.unit_in_x.sum())
        pick = np.argsort(rng.random((n_permutations, k)), axis=1)[:, :kx]
        unit_x = np.zeros((n_permutations, k), dtype=bool)
        np.put_along_axis(unit_x, pick, True, axis=1)
        x = unit_x[:, t.cluster]                                                     # [P, n]
        with np.errstate(invalid="ignore", divide="ignore"):
            mx = (x * t.s).sum(1) / x.sum(1)
            my = (~x * t.s).sum(1) / (~x).sum(1)
        sd = t.s.std(ddof=1)
        nulls.append(np.abs(mx - my) / sd if sd > 0 else np.full(n_permutations, np.nan))
    null = np.nanmean(np.stack(nulls), axis=0)
    lo = hi = math.nan
    if n_bootstrap:
        lo, hi = _interval(seat_mean_abs_effect(tests, stratified_weights(seat_units(tests), n_bootstrap, rng)))
    return BiasTest(observed, float(np.nanquantile(null, level)), float(np.nanmean(null)), _p_value(null, observed),
                    lo, hi, split, 1 - level)


# ------------------------------------------------------------------------------------------ retrieval shares
def share_deviation(male, female, strata: Sequence, weights: np.ndarray | None = None) -> np.ndarray:
    """Mean over strata of ``|mean over its items of #M / (#M + #F) − 0.5|`` (items with neither are skipped).

    Args:
        male, female: counts per item ``[..., n]`` (e.g. ``[P, n]`` null draws).
        strata: stratum per item ``[n]`` (e.g. the query's category).
        weights: item weights ``[B, n]`` (bootstrap); default 1.

    Returns:
        ``[...]`` (or ``[B]``) values.
    """
    m, f = np.asarray(male, dtype=np.float64), np.asarray(female, dtype=np.float64)
    strata = np.asarray(strata)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = m / (m + f)
    defined = np.isfinite(ratio)
    w = np.ones(ratio.shape[-1]) if weights is None else np.asarray(weights, dtype=np.float64)
    w = w * defined
    r = np.where(defined, ratio, 0.0)
    devs = []
    for s in np.unique(strata):
        idx = strata == s
        with np.errstate(invalid="ignore", divide="ignore"):
            devs.append(np.abs((w[..., idx] * r[..., idx]).sum(-1) / w[..., idx].sum(-1) - 0.5))
    return np.nanmean(np.stack(devs), axis=0)


def grouped_label_null(male, female, cells: Sequence[Sequence[tuple[str, int]]], strata: Sequence,
                       n_permutations: int = 2000, level: float = 0.95, n_bootstrap: int = 1000, seed: int = 0,
                       split: str = "test") -> BiasTest:
    """Retrieval shares against gender labels permuted within each group of wordings of one document.

    Args:
        male, female: the observed male / female documents in each query's top k ``[n]``.
        cells: per query, one ``(labels, drawn)`` per document group met in its top k: the group's labels (one
            character per member: ``M``, ``F`` or anything else for neither) and how many members are in the top k.
        strata: stratum per query (its category).
        n_permutations: null draws.
        level: the null quantile a real bias must exceed.
        n_bootstrap: query resamples (within strata) for the observed value's interval.
        seed: random seed.
        split: name printed with the result.

    Returns:
        A :class:`BiasTest` of :func:`share_deviation`.
    """
    m_obs, f_obs = np.asarray(male, dtype=np.int64), np.asarray(female, dtype=np.int64)
    if not (len(m_obs) == len(f_obs) == len(cells) == len(strata)) or len(cells) == 0:
        raise ValueError(f"need one male count, female count, cell list and stratum per query; got {len(m_obs)}, "
                         f"{len(f_obs)}, {len(cells)}, {len(strata)}")
    rng = np.random.default_rng(seed)
    m = np.zeros((n_permutations, len(cells)))
    f = np.zeros((n_permutations, len(cells)))
    for q, groups in enumerate(cells):
        fixed_m = fixed_f = 0
        for labels, drawn in groups:
            lab = np.array(list(labels))
            if not 0 <= drawn <= len(lab):
                raise ValueError(f"query {q}: {drawn} members drawn from a group of {len(lab)}")
            if drawn == len(lab) or len(set(labels)) == 1:
                got = lab[:drawn] if len(set(labels)) == 1 else lab
                fixed_m += int((got == "M").sum())
                fixed_f += int((got == "F").sum())
                continue
            pick = lab[np.argsort(rng.random((n_permutations, len(lab))), axis=1)[:, :drawn]]
            m[:, q] += (pick == "M").sum(1)
            f[:, q] += (pick == "F").sum(1)
        m[:, q] += fixed_m
        f[:, q] += fixed_f
    null = share_deviation(m, f, strata)
    observed = float(share_deviation(m_obs, f_obs, strata))
    lo = hi = math.nan
    if n_bootstrap:
        lo, hi = _interval(share_deviation(m_obs, f_obs, strata, stratified_weights(strata, n_bootstrap, rng)))
    return BiasTest(observed, float(np.nanquantile(null, level)), float(np.nanmean(null)), _p_value(null, observed),
                    lo, hi, split, 1 - level)


# ------------------------------------------------------------------------------------------ paired change
#: the reference's seed share is the estimated share raised to this power (module docstring)
SHARE_EXPONENT = 1.5


def shared_variance_df(resampled: np.ndarray) -> float:
    """The precision of the shared noise ``c̄`` (:func:`~faircl.eval.statistics.shared_row_variance`) of resamples
    ``[B, S]`` as degrees of freedom ``ν = 2 c̄² / var(c̄)``, ``var(c̄)`` the jackknife over the ``B`` resamples (their
    Monte Carlo noise; ``math.inf`` where it is 0, 1 with fewer than 3 resamples, NaN with one seed)."""
    x = np.asarray(resampled, dtype=np.float64)
    x = x[~np.isnan(x).any(axis=1)]
    b, s = x.shape
    if s < 2:
        return math.nan
    if b < 3:
        return 1.0

    def loo_var(y: np.ndarray) -> np.ndarray:       # leave-one-out variances of the columns of y [B, ...]
        tot, sq = y.sum(0), (y * y).sum(0)
        return (sq - y * y - (tot - y) ** 2 / (b - 1)) / (b - 2)

    c = (s * loo_var(x.mean(axis=1)) - loo_var(x).mean(axis=1)) / (s - 1)        # [B]
    var = (b - 1) / b * float(np.sum((c - c.mean()) ** 2))
    shared = shared_row_variance(x)
    return math.inf if var <= 0 else 2 * shared * shared / var


def shared_noise_effect(d, resampled: np.ndarray | None, level: float = 0.95, n_rows: int = 0) -> Effect:
    """The change ``mean(d)`` with ``se² = var_s(d) / S + c̄`` (:func:`~faircl.eval.statistics.seed_row_effect`),
    decided against :class:`~faircl.eval.statistics.SharedNoiseReference` with seed share ``λ̂^{3/2}`` (``λ̂ = (var_s(d)
    / S) / se²``), ``k = S − 1`` and ``ν`` of :func:`shared_variance_df` (module docstring): its p-value, its
    ``level`` interval and :meth:`~faircl.eval.statistics.Effect.interval` at any other level.

    Returns:
        An :class:`Effect` with that ``reference`` and ``df`` its 95%-matching Student-t df; the Student-t effect of
        :func:`~faircl.eval.statistics.seed_row_effect` itself where there is no shared noise (exact then), no seed
        variance estimate (one seed: infinite interval, p = 1) or no spread at all (the point, p 0 or 1).
    """
    t_effect = seed_row_effect(d, resampled, level, n_rows)
    if t_effect.df < 1 or not math.isfinite(t_effect.se) or t_effect.se <= 0 or t_effect.shared <= 0:
        return t_effect
    share = 1.0 - t_effect.shared / t_effect.se ** 2
    ref = SharedNoiseReference(min(max(share, 0.0), 1.0) ** SHARE_EXPONENT, t_effect.df,
                               shared_variance_df(resampled))
    half = ref.quantile(level) * t_effect.se
    return Effect(t_effect.mean, t_effect.mean - half, t_effect.mean + half, ref.sf(t_effect.mean / t_effect.se),
                  t_effect.se, ref.t_df(0.95), t_effect.n_seeds, n_rows, t_effect.shared, ref)


def paired_item_bootstrap(stat: Callable[[object, np.ndarray | None], np.ndarray], baseline: Sequence,
                          method: Sequence, strata: Sequence, n_bootstrap: int = 2000, level: float = 0.95,
                          seed: int = 0, resample_items: bool = True, calibrated: bool = True) -> Effect:
    """Seed-paired change of an item-level score, with the items' bootstrap nested in the seeds.

    Args:
        stat: ``stat(data, weights)`` → the score per weight row (``weights`` ``[B, U]`` over the resampling units,
            or ``None`` for the observed score, returned as ``[1]``).
        baseline, method: one ``data`` per seed each (same seeds, same items and units).
        strata: stratum of every unit ``[U]`` (units are resampled within strata).
        n_bootstrap: item resamples.
        level: interval level.
        seed: random seed of the resamples.
        resample_items: add the items' noise that every seed shares (``False``: the paired t-test of the per-seed
            scores).
        calibrated: decide against the reference of the shared item noise (:func:`shared_noise_effect`); ``False``:
            Student-t on ``S − 1`` df (the rows' rule, conservative here: module docstring).

    Returns:
        An :class:`Effect` of ``method − baseline`` (``n_rows`` = units).
    """
    if len(baseline) != len(method) or not baseline:
        raise ValueError(f"paired runs need as many method as baseline seeds (≥ 1), got {len(method)} and "
                         f"{len(baseline)}")
    d = paired_differences([float(stat(m, None)[0]) for m in method], [float(stat(b, None)[0]) for b in baseline])
    if not np.isfinite(d).all():
        raise ValueError(f"the score is undefined for seed(s) {np.flatnonzero(~np.isfinite(d)).tolist()}")
    s, n_units = len(d), len(strata)
    resampled = None
    if resample_items and s > 1:
        w = stratified_weights(strata, n_bootstrap, np.random.default_rng(seed))
        resampled = np.stack([stat(m, w) - stat(b, w) for b, m in zip(baseline, method)], axis=1)   # [B, S]
    rule = shared_noise_effect if calibrated else seed_row_effect
    return rule(d, resampled, level, n_units if resample_items else 0)
