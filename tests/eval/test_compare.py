"""faircl.eval.verdicts: the statistics against independent references, and planted cases with known verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from faircl.eval import verdicts as C
from faircl.metrics.functional import eo_gap, tpr_gap_rms


# ------------------------------------------------------------------------------------------ planted data
def biased_preds(y: np.ndarray, a: np.ndarray, bias: float, rng: np.random.Generator, acc: float = 0.85
                 ) -> np.ndarray:
    """Correct with probability ``acc + bias/2`` where a = y and ``acc − bias/2`` otherwise (TPR gap ≈ bias).

    Rows have a difficulty shared by every seed and model (correlation 0.9 of the latent scores), as trained
    classifiers err mostly on the same rows."""
    p = np.where(a == y, acc + bias / 2, acc - bias / 2)
    hard = np.random.default_rng(len(y) + int(y.sum())).standard_normal(len(y))   # fixed per split
    u = stats.norm.cdf(0.9 * hard + math.sqrt(1 - 0.81) * rng.standard_normal(len(y)))
    return np.where(u < p, y, 1 - y)


def split(n: int, rng: np.random.Generator, majority: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    y = (rng.random(n) >= majority).astype(np.int64)  # class 0 has share ``majority``
    return y, rng.integers(0, 2, n)


def seeds_of(y, a, bias, n_seeds, rng, **kw) -> np.ndarray:
    return np.stack([biased_preds(y, a, bias, rng, **kw) for _ in range(n_seeds)])


def planted_claim(name, base_bias, meth_bias, n_seeds=5, n=1000, seed=0, permute=False, paper=-0.045,
                  meth_acc=0.85):
    rng = np.random.default_rng(seed)
    (yt, at), (yv, av) = split(n, rng), split(n, rng)
    bt, mt = seeds_of(yt, at, base_bias, n_seeds, rng), seeds_of(yt, at, meth_bias, n_seeds, rng, acc=meth_acc)
    bv = seeds_of(yv, av, base_bias, n_seeds, rng)
    if permute:  # the control: the attribute carries no information about the errors
        at, av = rng.permutation(at), rng.permutation(av)
    return C.claim_from_predictions(name, C.SplitPredictions(yt, at, bt), C.SplitPredictions(yt, at, mt),
                                    C.SplitPredictions(yv, av, bv), paper_effect=paper, n_permutations=1000,
                                    n_bootstrap=500, seed=seed)


# ------------------------------------------------------------------------------------------ references
def test_gaps_from_counts_match_the_metrics_module():
    rng = np.random.default_rng(1)
    for c, g in ((2, 2), (3, 3)):
        y, p, a = rng.integers(0, c, 400), rng.integers(0, c, 400), rng.integers(-1, g, 400)
        counts = C.confusion_from_rows(y, p, a, c, g)
        t = [torch.as_tensor(v) for v in (p, y, a)]
        assert C.gap_from_confusion(counts, "tpr_gap_rms") == pytest.approx(float(tpr_gap_rms(*t, c, g)))
        assert C.gap_from_confusion(counts, "eo_gap") == pytest.approx(float(eo_gap(*t, c, g)))
        assert C.gap_from_confusion(counts, "accuracy") == pytest.approx(np.mean(p == y))
        from sklearn.metrics import balanced_accuracy_score
        assert C.gap_from_confusion(counts, "balanced_accuracy") == pytest.approx(balanced_accuracy_score(y, p))
    # weighted counts (bootstrap) equal the counts of the repeated rows
    y, p, a = rng.integers(0, 2, 50), rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    w = rng.multinomial(50, np.full(50, 1 / 50), size=3).astype(float)
    got = C.confusion_from_rows(y, p, a, 2, 2, weights=w)
    for b in range(3):
        rows = np.repeat(np.arange(50), w[b].astype(int))
        assert np.array_equal(got[b], C.confusion_from_rows(y[rows], p[rows], a[rows], 2, 2))
    # one group present: no gap
    assert math.isnan(float(C.gap_from_confusion(C.confusion_from_rows(y, p, np.zeros(50, int), 2, 2), "eo_gap")))


def test_permutation_null_matches_a_literal_loop():
    rng = np.random.default_rng(2)
    y, a = split(300, rng)
    preds = seeds_of(y, a, 0.2, 2, rng)
    got = C.permutation_null(y, preds, a, "tpr_gap_rms", n_permutations=2000, n_bootstrap=0, seed=3)
    ref_rng, null = np.random.default_rng(99), []
    for _ in range(2000):  # literal loop: permute a among the rows of each label, average the seeds' GAPs
        ap = a.copy()
        for c in (0, 1):
            rows = np.flatnonzero(y == c)
            ap[rows] = ref_rng.permutation(a[rows])
        null.append(np.mean([float(tpr_gap_rms(*(torch.as_tensor(v) for v in (p, y, ap)), 2, 2)) for p in preds]))
    obs = np.mean([float(tpr_gap_rms(*(torch.as_tensor(v) for v in (p, y, a)), 2, 2)) for p in preds])
    assert got.observed == pytest.approx(obs)
    assert got.null_q95 == pytest.approx(np.quantile(null, 0.95), abs=0.01)
    assert got.null_mean == pytest.approx(np.mean(null), abs=0.004)
    assert got.real and got.p_value == pytest.approx(1 / 2001)


def test_permutation_keeps_each_label_s_attribute_counts():
    rng = np.random.default_rng(4)
    y, a = rng.integers(0, 3, 200), rng.integers(-1, 2, 200)
    from faircl.eval.statistics import _permuted_within_label
    perm = _permuted_within_label(y, a, 50, rng)
    for c in range(3):
        for g in (-1, 0, 1):
            assert (((y == c) & (perm == g)).sum(1) == ((y == c) & (a == g)).sum()).all()
    assert (perm[:, a < 0] == -1).all()


def test_paired_seed_comparison_is_the_paired_t_test():
    base, meth = [0.30, 0.28, 0.35, 0.31, 0.29], [0.25, 0.27, 0.30, 0.24, 0.28]
    e = C.paired_seed_comparison(base, meth)
    ref = stats.ttest_rel(meth, base)
    d = np.subtract(meth, base)
    lo, hi = stats.t.interval(0.95, 4, loc=d.mean(), scale=stats.sem(d))
    assert e.p_value == pytest.approx(ref.pvalue) and e.mean == pytest.approx(d.mean())
    assert (e.lo, e.hi) == pytest.approx((lo, hi))
    one = C.paired_seed_comparison([0.3], [0.2])
    assert one.lo == -math.inf and one.p_value == 1.0 and C.minimum_detectable_effect(one) == math.inf
    with pytest.raises(ValueError, match="paired"):
        C.paired_seed_comparison([0.1], [0.1, 0.2])


def test_paired_bootstrap_without_rows_is_the_paired_t_test_and_with_rows_matches_a_loop():
    rng = np.random.default_rng(5)
    y, a = split(400, rng)
    base, meth = seeds_of(y, a, 0.3, 4, rng), seeds_of(y, a, 0.15, 4, rng)
    gaps = [[float(tpr_gap_rms(*(torch.as_tensor(v) for v in (p, y, a)), 2, 2)) for p in m] for m in (base, meth)]
    seeds_only = C.paired_bootstrap(y, a, base, meth, resample_rows=False)
    d = np.subtract(gaps[1], gaps[0])
    ref = stats.ttest_rel(gaps[1], gaps[0])
    assert seeds_only.mean == pytest.approx(d.mean()) and seeds_only.se == pytest.approx(stats.sem(d))
    assert seeds_only.p_value == pytest.approx(ref.pvalue) and seeds_only.df == 3
    nested = C.paired_bootstrap(y, a, base, meth, n_bootstrap=1000, seed=1)
    loop_rng, stat = np.random.default_rng(7), []
    for _ in range(400):  # literal row bootstrap: rows shared by both models and every seed, one change per seed
        rows = loop_rng.integers(0, 400, 400)
        t = [torch.as_tensor(v) for v in (y[rows], a[rows])]
        stat.append([float(tpr_gap_rms(torch.as_tensor(meth[s][rows]), *t, 2, 2))
                     - float(tpr_gap_rms(torch.as_tensor(base[s][rows]), *t, 2, 2)) for s in range(4)])
    cov = np.cov(np.array(stat), rowvar=False)                    # [4, 4] over the resamples
    shared = (cov.sum() - np.trace(cov)) / (4 * 3)                # mean covariance of two different seeds
    v_seed = d.var(ddof=1) / 4
    assert shared > 0 and nested.se == pytest.approx(math.sqrt(v_seed + shared), rel=0.1)
    assert nested.df == 3                                          # S - 1, whatever the rows add
    assert nested.se > seeds_only.se  # the rows' shared noise is added; each seed's own row noise is in v_seed


def test_shared_row_variance_is_the_mean_covariance_and_recovers_a_planted_decomposition():
    from faircl.eval.statistics import shared_row_variance

    rng = np.random.default_rng(11)
    x = rng.standard_normal((300, 5)) @ rng.standard_normal((5, 5))
    cov = np.cov(x, rowvar=False)
    assert shared_row_variance(x) == pytest.approx(max(0.0, (cov.sum() - np.trace(cov)) / 20))
    # d[b, s] = beta_b + gamma_bs: shared variance 0.04, each seed's own 0.09 -> 0.04 (and not 0.04 + 0.09 / S)
    planted = 0.2 * rng.standard_normal((20000, 1)) + 0.3 * rng.standard_normal((20000, 3))
    assert shared_row_variance(planted) == pytest.approx(0.04, rel=0.06)
    assert shared_row_variance(0.3 * rng.standard_normal((20000, 3))) == pytest.approx(0.0, abs=0.002)
    with_nan = np.vstack([planted[:500], [[np.nan, 0.0, 0.0]]])
    assert shared_row_variance(with_nan) == pytest.approx(shared_row_variance(planted[:500]))
    assert shared_row_variance(planted[:, :1]) == 0.0


def test_each_noise_is_counted_once_across_replicates():
    """Planted seeds x rows protocols (no seed shift): the effect's reported se matches its spread across replicates.
    The former rule added the whole row-bootstrap variance to the seeds' spread and gave sd/se about 0.7."""
    rng, means, ses = np.random.default_rng(12), [], []
    for r in range(120):
        y, a = split(600, rng)
        base, meth = seeds_of(y, a, 0.2, 4, rng, acc=0.8), seeds_of(y, a, 0.2, 4, rng, acc=0.8)
        e = C.paired_bootstrap(y, a, base, meth, n_bootstrap=150, seed=r)
        means.append(e.mean), ses.append(e.se)
    ratio = np.std(means, ddof=1) / math.sqrt(np.mean(np.square(ses)))
    assert 0.85 < ratio < 1.2, ratio

@pytest.mark.parametrize("seed", range(4))
def test_equal_seed_differences_with_round_off_are_a_zero_spread(seed):
    """Per-seed differences equal up to a few ulps (``x · (1 + k·eps)``, ``|k| <= 4``: another CPU's summation) have
    a spread of round-off, which counts as zero: the same point interval as exactly equal differences. With nothing
    to find (equal values) the p-value is 1; a real spread keeps its t interval."""
    from faircl.eval import item_nulls, statistics

    rng = np.random.default_rng(seed)
    eps = np.finfo(np.float64).eps
    base = np.full(4, 0.3)
    meth = 0.5 * (1 + rng.integers(-4, 5, 4) * eps)
    exact = C.paired_seed_comparison(base, np.full(4, 0.5))
    noisy = C.paired_seed_comparison(base, meth)
    for e in (exact, noisy):
        assert e.se == 0.0 and e.lo == e.hi == e.mean and e.p_value == 0.0
    assert noisy.mean == pytest.approx(0.2, rel=1e-14)
    same = C.paired_seed_comparison(base, base * (1 + rng.integers(-4, 5, 4) * eps))
    assert same.p_value == 1.0 and same.lo <= 0 <= same.hi
    real = C.paired_seed_comparison(base, [0.5, 0.52, 0.49, 0.51])
    assert real.se > 0 and real.lo < real.mean < real.hi
    # the t interval that rows and items share (seed_row_effect): a round-off spread is zero too
    tiny = statistics.seed_row_effect(0.2 * (1 + rng.integers(-4, 5, 4) * eps), np.zeros((50, 4)), n_rows=10)
    assert tiny.se == 0.0 and tiny.lo == tiny.hi == tiny.mean
    spread = np.array([0.19, 0.21, 0.2, 0.2])
    assert statistics.seed_row_effect(spread).se == pytest.approx(spread.std(ddof=1) / 2)
    assert not hasattr(item_nulls, "_t_effect")   # one rule: items use the rows' function



def test_holm_against_the_textbook_procedure():
    p = [0.01, 0.04, 0.03, 0.005, math.nan]
    got = C.holm(p)
    assert got[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02]) and math.isnan(got[4])
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.random(6) ** 3
        order, ref, run = np.argsort(q), np.empty(6), 0.0
        for i, j in enumerate(order):  # literal step-down
            run = max(run, min(1.0, (6 - i) * q[j]))
            ref[j] = run
        assert C.holm(q) == pytest.approx(ref)


def test_minimum_detectable_effect_has_the_stated_power():
    e = C.paired_seed_comparison([0.3, 0.28, 0.35, 0.31, 0.29], [0.25, 0.27, 0.30, 0.24, 0.28])
    mde = C.minimum_detectable_effect(e, 0.05, 0.8)
    crit = stats.t.ppf(0.975, e.df)
    power = stats.nct.sf(crit, e.df, mde / e.se) + stats.nct.cdf(-crit, e.df, mde / e.se)
    assert power == pytest.approx(0.8, abs=0.03)


def test_leakage_is_measured_against_the_majority_group():
    # 70% leakage with a 68% majority group is no leakage; the same 70% against balanced groups is
    unb = C.leakage_null([0.70, 0.71, 0.69], majority_rate=0.68, n_rows=500)
    bal = C.leakage_null([0.70, 0.71, 0.69], majority_rate=0.50, n_rows=500)
    assert not unb.real and bal.real
    assert unb.null_q95 == pytest.approx(stats.binom.ppf(0.95, 500, 0.68) / 500)
    assert not C.bias_is_real(bal, unb) and C.bias_is_real(bal)


def test_weighted_gaps_in_blocks_equal_one_pass():
    # many classes: the bootstrap is computed over blocks of resamples; the values are those of one pass
    from faircl.eval.statistics import _weighted_gaps, _weights

    rng = np.random.default_rng(3)
    y, a = rng.integers(0, 5, 60), rng.integers(-1, 2, 60)
    preds = rng.integers(0, 5, (3, 60))
    w = _weights(rng, 60, 37)
    one = C.gap_from_confusion(C.confusion_from_rows(y, preds, a, 5, 2, w), "tpr_gap_rms")
    for cells in (1, 500, 10 ** 9):
        np.testing.assert_allclose(_weighted_gaps(y, preds, a, 5, 2, w, "tpr_gap_rms", max_cells=cells), one)
    # a weighted confusion is the unweighted one of the rows repeated by their weights
    rep = np.repeat(np.arange(60), w[0].astype(int))
    np.testing.assert_allclose(C.confusion_from_rows(y, preds, a, 5, 2, w[:1])[0],
                               C.confusion_from_rows(y[rep], preds[:, rep], a[rep], 5, 2))


def test_leakage_bias_needs_the_test_and_the_validation_split():
    # test: 300 known rows, 60% majority (unknown rows -1 are not counted); validation: 200 rows, balanced
    test_a = np.r_[np.zeros(180), np.ones(120), -np.ones(50)].astype(int)
    val_a = np.r_[np.zeros(100), np.ones(100)].astype(int)
    t, v = C.leakage_bias_tests([0.80, 0.82], test_a, [0.51, 0.50], val_a)
    assert (t.split, v.split) == ("test", "validation")
    assert t.null_q95 == pytest.approx(stats.binom.ppf(0.95, 300, 0.6) / 300) and t.null_mean == pytest.approx(0.6)
    assert v.null_q95 == pytest.approx(stats.binom.ppf(0.95, 200, 0.5) / 200)
    assert t.real and not v.real and not C.bias_is_real(t, v)
    # the probe beats chance on test only: the leakage claim is untestable, whatever the method did
    ev = C.ClaimEvidence("leak", C.paired_seed_comparison([0.80, 0.82, 0.81], [0.55, 0.56, 0.54]),
                         C.paired_seed_comparison([0.8, 0.8, 0.8], [0.8, 0.8, 0.8]), -0.1, (t, v))
    verdict, = C.decide([ev])
    assert verdict.verdict == "untestable" and "validation 50.5" in verdict.reason
    both = C.leakage_bias_tests([0.80, 0.82], test_a, [0.90, 0.88], val_a)
    assert C.bias_is_real(*both) and len(C.leakage_bias_tests([0.8], test_a)) == 1
    with pytest.raises(ValueError, match="validation"):
        C.leakage_bias_tests([0.8], test_a, [0.8], -np.ones(5, dtype=int))
    with pytest.raises(ValueError, match="val_a"):
        C.leakage_bias_tests([0.8], test_a, [0.8])


def test_degenerate_is_judged_against_the_split_s_own_majority():
    assert C.degenerate_seed(0.94, 0.60, majority_rate=0.86) is not None       # 94% > 86% + 7
    assert C.degenerate_seed(0.90, 0.70, majority_rate=0.86) is None
    assert C.degenerate_seed(0.55, 0.52, majority_rate=0.50) is not None       # chance balanced accuracy
    assert C.degenerate_seed(0.94, 0.80, majority_rate=0.94) is None           # the split is 94% one class


# ------------------------------------------------------------------------------------------ planted verdicts
def verdict_of(*claims, **kw):
    return C.decide(list(claims), **kw)


def test_permuted_attribute_is_untestable():
    v, = verdict_of(planted_claim("control", 0.3, 0.05, permute=True))
    assert v.verdict == "untestable" and "no bias beyond chance" in v.reason


def test_planted_reduction_holds_and_worsening_is_contradicted():
    held, worse = verdict_of(planted_claim("reduction", 0.3, 0.05, n=3000), planted_claim("worsening", 0.3, 0.5, seed=1))
    assert held.verdict == "holds" and held.effect.hi < 0 and held.paper_effect == -0.045
    assert worse.verdict == "contradicted" and worse.effect.lo > 0
    assert C.verdict_row(held).count("|") == 11 == C.VERDICT_HEADER[0].count("|") and "-4.5" in C.verdict_row(held)
    assert C.VERDICT_HEADER[1].count("|") == 11 and held.mde_holds >= held.mde
    assert held.seeds_needed is None and "| — |" in C.verdict_row(held)


def test_near_constant_method_on_an_86_percent_majority_split_is_degenerate():
    rng = np.random.default_rng(3)
    (yt, at), (yv, av) = split(1000, rng, 0.86), split(1000, rng, 0.86)
    bt, bv = seeds_of(yt, at, 0.3, 5, rng), seeds_of(yv, av, 0.3, 5, rng)
    mt = np.where(rng.random((5, 1000)) < 0.94, 0, yt)  # class 0 for 94% of rows (and right on the rest)
    ev = C.claim_from_predictions("constant", C.SplitPredictions(yt, at, bt), C.SplitPredictions(yt, at, mt),
                                  C.SplitPredictions(yv, av, bv), n_bootstrap=200)
    v, = verdict_of(ev)
    assert v.verdict == "degenerate" and "5/5 seeds" in v.reason


def test_tiny_effect_with_three_seeds_is_inconclusive():
    v, = verdict_of(planted_claim("tiny", 0.3, 0.29, n_seeds=3, n=120, seed=4))
    assert v.verdict == "inconclusive" and v.mde_holds > 0.045
    # the same tiny effect on 400 rows: "holds" would have had 80% power at the paper's 4.5 points
    v, = verdict_of(planted_claim("tiny", 0.3, 0.29, n_seeds=3, n=400, seed=4))
    assert v.verdict == "does not hold" and v.mde_holds <= 0.045


def test_holds_detectable_effect_has_the_stated_power():
    """A literal simulation of the rule at the holds-MDE: 5 seeds, per-seed changes N(-mde, sd), utility N(0, tau):
    "holds" (p < 0.05 and utility lower bound >= -2 points) in about 80% of replicates."""
    from faircl.eval.verdicts import holds_detectable_effect

    s, sd, tau = 5, 0.03, 0.012
    eff = C.paired_seed_comparison(np.zeros(s), sd * np.array([-1.2, -0.6, 0, 0.6, 1.2]) / math.sqrt(0.9))
    util = C.paired_seed_comparison(np.zeros(s), tau * np.array([-1.2, -0.6, 0, 0.6, 1.2]) / math.sqrt(0.9))
    assert eff.se == pytest.approx(sd / math.sqrt(s)) and util.se == pytest.approx(tau / math.sqrt(s))
    mde = holds_detectable_effect(eff, util, 0.05, 0.02, 0.8)
    assert C.minimum_detectable_effect(eff) < mde < math.inf
    rng = np.random.default_rng(13)
    d = -mde + sd * rng.standard_normal((20000, s))
    u = tau * rng.standard_normal((20000, s))
    crit = stats.t.ppf(0.975, s - 1)
    sig = np.abs(d.mean(1)) / (d.std(1, ddof=1) / math.sqrt(s)) > crit
    lo = u.mean(1) - crit * u.std(1, ddof=1) / math.sqrt(s)
    assert np.mean(sig & (d.mean(1) < 0) & (lo >= -0.02)) == pytest.approx(0.8, abs=0.05)
    # a utility interval that straddles the margin too often: "holds" cannot reach 80%, whatever the effect
    wide = C.paired_seed_comparison(np.zeros(s), 0.03 * np.array([-1.2, -0.6, 0, 0.6, 1.2]))
    assert holds_detectable_effect(eff, wide) == math.inf
    one = C.paired_seed_comparison([0.3], [0.2])
    assert holds_detectable_effect(one, util) == math.inf


def test_does_not_hold_follows_from_the_effect_not_the_utility():
    """A precise zero change against the paper's 4.5 points reads "does not hold" whatever the utility's noise (its
    interval lies above −4.5); a change as large as the paper's does not."""
    e = C.paired_seed_comparison([0.30, 0.28, 0.35, 0.31, 0.29], [0.30, 0.29, 0.34, 0.31, 0.30])  # no change
    tight = C.paired_seed_comparison([0.8] * 5, [0.8, 0.801, 0.8, 0.799, 0.8])
    wide = C.paired_seed_comparison([0.8] * 5, [0.80, 0.77, 0.83, 0.78, 0.82])
    for util in (tight, wide):
        v, = verdict_of(C.ClaimEvidence("zero", e, util, -0.045))
        assert v.verdict == "does not hold" and e.lo > -0.045 and v.p_smaller < 0.05
        assert "significantly smaller than the paper's 4.5 points" in v.reason and v.seeds_needed is None
    assert v.mde <= 0.045 and v.mde_holds == math.inf and "| ∞ |" in C.verdict_row(v)   # the old rule: inconclusive
    # no paper effect: the smallest effect of interest decides; neither: inconclusive
    v, = verdict_of(C.ClaimEvidence("zero", e, wide, None, smallest_effect=0.045))
    assert v.verdict == "does not hold" and "smallest effect of interest, 4.5" in v.reason
    v, = verdict_of(C.ClaimEvidence("zero", e, wide))
    assert v.verdict == "inconclusive" and math.isnan(v.p_smaller) and "no paper effect" in v.reason
    # an interval that reaches the paper's effect: not "does not hold"
    loose = C.paired_seed_comparison([0.30, 0.28, 0.35, 0.31, 0.29], [0.33, 0.24, 0.37, 0.25, 0.32])
    assert loose.lo < -0.045 < loose.hi
    v, = verdict_of(C.ClaimEvidence("loose", loose, tight, -0.045))
    assert v.verdict == "inconclusive" and v.p_smaller >= 0.05


def test_does_not_hold_is_rare_when_the_paper_is_right_and_found_when_it_is_not():
    """5 seeds, per-seed changes N(μ, 3 points²), utility N(0, 3 points²) (wide): with μ = the paper's −4.5 points
    "does not hold" comes out in at most α/2 of claims (one side of the 95% interval); with μ = 0 in most."""
    rng = np.random.default_rng(21)
    s, sd = 5, 0.03

    def rate(mu: float, reps: int = 1500) -> float:
        out = 0
        for _ in range(reps):
            e = C.paired_seed_comparison(np.zeros(s), mu + sd * rng.standard_normal(s))
            u = C.paired_seed_comparison(np.zeros(s), 0.03 * rng.standard_normal(s))
            out += verdict_of(C.ClaimEvidence("x", e, u, -0.045))[0].verdict == "does not hold"
        return out / reps

    right, wrong = rate(-0.045), rate(0.0, 400)
    assert right <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / 1500)
    assert wrong > 0.3


def test_seeds_needed_has_the_stated_power():
    """A literal simulation at the predicted number of seeds: per-seed changes N(μ, 3 points²), utility N(0,
    0.5 points²), paper effect −4.5 points: "holds" when μ = −4.5 and "does not hold" when μ = 0 each in ≥ 80% − noise of
    claims, and one seed fewer falls short on one of them."""
    sd, tau = 0.03, 0.005
    e = C.paired_seed_comparison(np.zeros(3), sd * np.array([-1.0, 0.0, 1.0]))
    u = C.paired_seed_comparison(np.zeros(3), tau * np.array([-1.0, 0.0, 1.0]))
    v, = verdict_of(C.ClaimEvidence("x", e, u, -0.045))
    assert v.verdict == "inconclusive" and v.seeds_needed is not None and f"{v.seeds_needed} seeds" in v.reason
    assert f"| {v.seeds_needed} | **inconclusive**" in C.verdict_row(v)
    n = v.seeds_needed
    assert n == C.seeds_to_decide(e, u, -0.045)[0] and n > 3
    rng = np.random.default_rng(22)

    def power(k: int, mu: float, want: str, reps: int = 1500) -> float:
        d = mu + sd * rng.standard_normal((reps, k))
        w = tau * rng.standard_normal((reps, k))
        hits = 0
        for di, wi in zip(d, w):
            ev = C.ClaimEvidence("x", C.paired_seed_comparison(np.zeros(k), di),
                                 C.paired_seed_comparison(np.zeros(k), wi), -0.045)
            hits += verdict_of(ev)[0].verdict == want
        return hits / reps

    at_n = (power(n, -0.045, "holds"), power(n, 0.0, "does not hold"))
    assert min(at_n) >= 0.8 - 0.035 and min(at_n) <= 0.92
    assert min(power(n - 1, -0.045, "holds"), power(n - 1, 0.0, "does not hold")) < 0.8 + 0.02


def test_shared_row_noise_that_seeds_cannot_shrink_asks_for_rows():
    e = C.Effect(0.0, -0.05, 0.05, 1.0, 0.025, 2, 3, 2000, shared=0.02 ** 2)   # the rows' part alone: 2 points
    u = C.paired_seed_comparison(np.zeros(3), 0.001 * np.array([-1.0, 0.0, 1.0]))
    n, why, rows = C.seeds_to_decide(e, u, -0.045)
    assert why.startswith("no number of seeds decides this on these 2,000 rows")
    assert rows > 2000 and f"about {rows:,} rows and {n} seeds would" in why  # the seeds are those on `rows` rows
    more = C.Effect(0.0, -0.05, 0.05, 1.0, 0.025, 2, 3, rows, shared=0.02 ** 2 * 2000 / rows)
    plan = C.seeds_to_decide(more, u, -0.045)
    assert plan.seeds is not None and plan.rows is None  # on those rows, seeds alone decide it
    assert C.seeds_to_decide(e, u, None)[0] is None
    v, = C.decide([C.ClaimEvidence("x", e, u, -0.045)])
    assert (v.verdict, v.seeds_needed, v.rows_needed) == ("inconclusive", n, rows)
    assert f"| {n} (on {rows:,} rows) | **inconclusive**" in C.verdict_row(v)


def test_pooled_bias_screen_is_one_test_over_test_and_validation_rows():
    rng = np.random.default_rng(14)
    (yt, at), (yv, av) = split(300, rng), split(200, rng)
    bt, bv = seeds_of(yt, at, 0.15, 3, rng), seeds_of(yv, av, 0.15, 3, rng)
    tsp, vsp = C.SplitPredictions(yt, at, bt), C.SplitPredictions(yv, av, bv)
    ev = C.claim_from_predictions("pooled", tsp, tsp, vsp, n_permutations=300, n_bootstrap=50)
    pooled, = ev.bias
    ys, as_, ps = np.r_[yt, yv], np.r_[at, av], np.concatenate([bt, bv], axis=1)
    ref = np.mean([float(tpr_gap_rms(*(torch.as_tensor(v) for v in (p, ys, as_)), 2, 2)) for p in ps])
    assert pooled.split == "test+validation" and pooled.observed == pytest.approx(ref)
    strata = ys + 2 * np.r_[[0] * 300, [1] * 200]                 # label x split
    same = C.permutation_null(ys, ps, as_, n_permutations=300, n_bootstrap=0, strata=strata)
    assert same.null_q95 == pytest.approx(pooled.null_q95) and same.real == pooled.real
    each = C.claim_from_predictions("each", tsp, tsp, vsp, n_permutations=300, n_bootstrap=50, screen="each")
    assert [t.split for t in each.bias] == ["test", "validation"]
    with pytest.raises(ValueError, match="screen"):
        C.claim_from_predictions("x", tsp, tsp, vsp, screen="both")
    with pytest.raises(ValueError, match="seeds"):
        C.claim_from_predictions("x", tsp, tsp, C.SplitPredictions(yv, av, bv[:2]))
    # the strata keep each split's attribute counts per label
    from faircl.eval.statistics import _permuted_within_label
    perm = _permuted_within_label(strata, as_, 20, rng)
    for k in np.unique(strata):
        assert ((perm[:, strata == k] == 1).sum(1) == (as_[strata == k] == 1).sum()).all()


def test_utility_is_judged_on_the_lower_bound():
    e = C.paired_seed_comparison([0.30, 0.28, 0.35, 0.31, 0.29], [0.20, 0.18, 0.25, 0.21, 0.19])
    util = C.paired_seed_comparison([0.80, 0.81, 0.79, 0.80, 0.82], [0.80, 0.71, 0.84, 0.78, 0.80])
    assert -0.02 < util.mean < 0 and util.lo < -0.02
    v, = verdict_of(C.ClaimEvidence("costly", e, util, -0.045))
    assert v.verdict == "inconclusive" and "utility" in v.reason
    v, = verdict_of(C.ClaimEvidence("costly", e, util, -0.045), margin=0.2)
    assert v.verdict == "holds"


def test_holm_turns_a_borderline_holds_into_not():
    util = C.paired_seed_comparison([0.8] * 5, [0.8, 0.801, 0.8, 0.799, 0.8])
    border = C.paired_seed_comparison([0.30, 0.28, 0.35, 0.31, 0.29], [0.28, 0.27, 0.31, 0.29, 0.28])
    assert 0.01 < border.p_value < 0.05
    null = C.paired_seed_comparison([0.30, 0.28, 0.35, 0.31, 0.29], [0.31, 0.27, 0.35, 0.30, 0.30])
    alone, = verdict_of(C.ClaimEvidence("borderline", border, util, -0.045))
    assert alone.verdict == "holds"
    fam = verdict_of(C.ClaimEvidence("borderline", border, util, -0.045),
                     C.ClaimEvidence("other", null, util, -0.045), C.ClaimEvidence("third", null, util, -0.045))
    assert fam[0].verdict != "holds" and fam[0].p_holm == pytest.approx(3 * border.p_value)
    assert fam[0].verdict in ("does not hold", "inconclusive")


def test_a_method_that_predicts_as_the_baseline_does_not_hold():
    """CE under another name: the same predictions on every seed, a zero change with zero spread (no power question:
    the gap did not move at all)."""
    rng = np.random.default_rng(5)
    (yt, at), (yv, av) = split(800, rng), split(800, rng)
    bt, bv = seeds_of(yt, at, 0.3, 3, rng), seeds_of(yv, av, 0.3, 3, rng)
    ev = C.claim_from_predictions("renamed", C.SplitPredictions(yt, at, bt), C.SplitPredictions(yt, at, bt.copy()),
                                  C.SplitPredictions(yv, av, bv), n_bootstrap=200)
    v, = verdict_of(ev)
    assert v.verdict == "does not hold" and "baseline's value on every seed" in v.reason
    # a real (tiny) difference in one seed's predictions is not "unchanged"
    moved = bt.copy()
    moved[0, :3] = 1 - moved[0, :3]
    v, = verdict_of(C.claim_from_predictions("moved", C.SplitPredictions(yt, at, bt), C.SplitPredictions(yt, at, moved),
                                             C.SplitPredictions(yv, av, bv), n_bootstrap=200))
    assert "on every seed" not in v.reason


def test_rows_needed_at_fixed_seeds_scale_the_shared_row_noise_only():
    """A synthetic set can grow: at 8 seeds, the factor on the rows that decides a claim whose shared row noise is
    the limit is found (and, with those rows, the claim is decided); a claim limited by the seeds' own spread gets
    none."""
    from faircl.eval.power import _decides, rows_to_decide

    u = C.paired_seed_comparison(np.zeros(8), 0.001 * np.arange(-4, 4))
    e = C.Effect(0.0, -0.05, 0.05, 1.0, math.sqrt(0.004 ** 2 + 0.02 ** 2), 7, 8, 800, shared=0.02 ** 2)
    k = rows_to_decide(e, u, -0.045, 8)
    assert k is not None and 1 < k < 100
    assert _decides(8, e, u, -0.045, 0.05, 0.02, 0.8, rows=k) and not _decides(8, e, u, -0.045, 0.05, 0.02, 0.8,
                                                                                 rows=k / 1.05)
    spread = C.Effect(0.0, -0.2, 0.2, 1.0, 0.06, 7, 8, 800, shared=1e-8)   # the seeds' spread: 6 points
    assert rows_to_decide(spread, u, -0.045, 8) is None
    assert rows_to_decide(e, u, None, 8) is None and rows_to_decide(e, u, -0.045, 1) is None


def test_a_settled_claim_stays_in_the_family_with_p_values_one():
    """A claim settled at an earlier look of a sequential design counts in the family's size, never in its
    rejections: its p-values are 1, whatever its stopped evidence says."""
    strong = C.paired_seed_comparison(np.zeros(5), np.array([-0.2, -0.21, -0.19, -0.2, -0.2]))
    weak = C.paired_seed_comparison(np.zeros(5), np.array([-0.05, -0.02, -0.04, -0.03, -0.06]))
    u = C.paired_seed_comparison(np.zeros(5), np.zeros(5))
    claims = [C.ClaimEvidence("a", strong, u, -0.1), C.ClaimEvidence("b", weak, u, -0.1)]
    free, held = C.decide(claims), C.decide(claims, settled=[True, False])
    assert free[0].p_holm < 0.05 and held[0].p_holm == 1.0 and held[0].p_smaller == 1.0
    assert held[1].p_holm == min(1.0, 2 * weak.p_value)  # a family of two: the settled claim still counts
