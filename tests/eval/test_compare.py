"""faircl.eval.verdicts: the statistics against independent references, and planted cases with known verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from faircl.eval import verdicts as C
from faircl.eval.statistics import holm
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
    got = holm(p)
    assert got[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02]) and math.isnan(got[4])
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.random(6) ** 3
        order, ref, run = np.argsort(q), np.empty(6), 0.0
        for i, j in enumerate(order):  # literal step-down
            run = max(run, min(1.0, (6 - i) * q[j]))
            ref[j] = run
        assert holm(q) == pytest.approx(ref)


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


def _seed_effect(mean: float, spread: float, n: int = 5) -> C.Effect:
    """A paired t-test's effect of ``n`` per-seed changes ``mean + spread·z`` (z: fixed standardised values)."""
    z = np.linspace(-1, 1, n)
    z = z / z.std(ddof=1) if n > 1 else z
    return C.paired_seed_comparison(np.zeros(n), mean + spread * z)


def test_planted_reduction_reproduces_and_worsening_is_contradicted():
    held, worse = verdict_of(planted_claim("reduction", 0.3, 0.05, n=3000), planted_claim("worsening", 0.3, 0.5, seed=1))
    assert held.verdict == "reproduces" and (held.direction, held.size, held.utility_axis) == ("lowers", "reaches",
                                                                                             "kept")
    assert held.effect.hi < held.threshold < 0 and held.paper_effect == -0.045 and held.target == -0.045
    assert worse.verdict == "contradicted" and worse.effect.lo > 0 and worse.direction == "raises"
    row = C.verdict_row(held)
    assert row.count("|") == C.VERDICT_HEADER[0].count("|") == C.VERDICT_HEADER[1].count("|")
    assert "-4.5 (τ -2.2)" in row and "lowers · reaches · kept" in row
    assert held.seeds_needed is None and "| — |" in row


def test_the_axes_read_the_interval_at_the_family_level():
    """Each interval is at 1 − α/(2m): two per claim, m claims, so one claim's words are read at 97.5% and a family
    of three claims' at 1 − 0.05/6; the direction's p_adj is 2m·p."""
    e, u = _seed_effect(-0.03, 0.02), _seed_effect(0.0, 0.002)
    alone, = verdict_of(C.ClaimEvidence("x", e, u, -0.045))
    assert alone.confidence == pytest.approx(1 - 0.05 / 2)
    half = stats.t.ppf(1 - 0.05 / 4, e.df) * e.se
    assert (alone.effect.lo, alone.effect.hi) == pytest.approx((e.mean - half, e.mean + half))
    assert alone.p_adj == pytest.approx(min(1, 2 * e.p_value))
    fam = verdict_of(*[C.ClaimEvidence(n, e, u, -0.045) for n in "abc"])
    assert fam[0].confidence == pytest.approx(1 - 0.05 / 6) and fam[0].p_adj == pytest.approx(min(1, 6 * e.p_value))
    assert fam[0].effect.hi - fam[0].effect.lo > alone.effect.hi - alone.effect.lo


@pytest.mark.parametrize("mean, spread, util, word, axes", [
    (-0.06, 0.004, 0.0, "reproduces", ("lowers", "reaches", "kept")),
    (-0.010, 0.002, 0.0, "lowers, less than target", ("lowers", "smaller", "kept")),
    (-0.06, 0.004, -0.05, "utility lost", ("lowers", "reaches", "lost")),
    (-0.012, 0.002, -0.05, "utility lost", ("lowers", "smaller", "lost")),
    (0.03, 0.004, 0.0, "contradicted", ("raises", "smaller", "kept")),
    (-0.001, 0.003, 0.0, "no change", ("undetermined", "smaller", "kept")),
    (-0.03, 0.03, 0.0, "inconclusive", ("undetermined", "undetermined", "kept")),
    (-0.03, 0.004, -0.02, "inconclusive", ("lowers", "reaches", "undetermined")),
    (-0.022, 0.004, 0.0, "inconclusive", ("lowers", "undetermined", "kept")),
])
def test_each_word_is_its_axes(mean, spread, util, word, axes):
    v, = verdict_of(C.ClaimEvidence("x", _seed_effect(mean, spread), _seed_effect(util, 0.004), -0.045))
    assert (v.verdict, (v.direction, v.size, v.utility_axis)) == (word, axes)
    assert C.word(*axes, negligible=word == "no change") == word and v.verdict in C.WORDS


def test_no_fall_shown_is_smaller_than_the_threshold_outside_the_band_of_no_change():
    """A zero change whose interval lies above τ but reaches beyond the smallest effect of interest: no fall shown
    (not no change); inside the band: no change. Neither reads "does not hold": that word is gone."""
    e = _seed_effect(0.004, 0.006)
    v, = verdict_of(C.ClaimEvidence("x", e, _seed_effect(0, 0.002), -0.09, smallest_effect=0.005))
    assert v.effect.lo > v.threshold and v.effect.hi > 0.005 and v.verdict == "no fall shown"
    v, = verdict_of(C.ClaimEvidence("x", e, _seed_effect(0, 0.002), -0.09, smallest_effect=0.04))
    assert v.verdict == "no change" and "within ±4.0 points" in v.reason
    assert "does not hold" not in C.WORDS


def test_no_row_lowers_and_reads_a_negative_word():
    """Over a grid of planted effects and utilities, a claim whose direction is lowers never reads a word that says
    the gap did not fall; a raise always reads contradicted."""
    for mean in np.linspace(-0.08, 0.04, 13):
        for util in (0.0, -0.015, -0.05):
            for spread in (0.002, 0.01, 0.03):
                v, = verdict_of(C.ClaimEvidence("x", _seed_effect(mean, spread), _seed_effect(util, 0.004),
                                                -0.045))
                if v.direction == "lowers":
                    assert v.verdict in ("reproduces", "lowers, less than target", "utility lost", "inconclusive")
                if v.direction == "raises":
                    assert v.verdict == "contradicted"


def test_without_a_paper_effect_the_smallest_effect_then_the_margin_is_the_target():
    e, u = _seed_effect(-0.03, 0.004), _seed_effect(0, 0.002)
    v, = verdict_of(C.ClaimEvidence("x", e, u, None, smallest_effect=0.02))
    assert (v.target, v.threshold) == pytest.approx((-0.02, -0.01)) and "smallest effect of interest" in v.reason
    v, = verdict_of(C.ClaimEvidence("x", e, u), margin=0.03)
    assert v.target == pytest.approx(-0.03) and "the utility margin" in v.target_from


def test_one_paired_seed_gives_no_verdict():
    one = C.paired_seed_comparison([0.3], [0.2])
    v, = verdict_of(C.ClaimEvidence("x", one, C.paired_seed_comparison([0.8], [0.8]), -0.045))
    assert v.verdict == "inconclusive" and v.reason.startswith("no verdict: 1 paired seed")


def test_permuted_attribute_is_untestable_and_an_identical_method_reads_no_change():
    v, = verdict_of(planted_claim("control", 0.3, 0.05, permute=True))
    assert v.verdict == "untestable" and v.direction == "—"
    rng = np.random.default_rng(5)
    (yt, at), (yv, av) = split(800, rng), split(800, rng)
    bt, bv = seeds_of(yt, at, 0.3, 3, rng), seeds_of(yv, av, 0.3, 3, rng)
    ev = C.claim_from_predictions("renamed", C.SplitPredictions(yt, at, bt), C.SplitPredictions(yt, at, bt.copy()),
                                  C.SplitPredictions(yv, av, bv), n_bootstrap=200)
    v, = verdict_of(ev)
    assert v.verdict == "no change" and "baseline's value on every seed" in v.reason
    v, = verdict_of(ev, horizon=[(12, 0.0125)])  # under a sequential design: final at once (nothing can move)
    assert v.verdict == "no change" and v.final and "cannot be decided within the cap of 12 seeds" in v.reason
    moved = bt.copy()
    moved[0, :3] = 1 - moved[0, :3]
    v, = verdict_of(C.claim_from_predictions("moved", C.SplitPredictions(yt, at, bt), C.SplitPredictions(yt, at, moved),
                                             C.SplitPredictions(yv, av, bv), n_bootstrap=200))
    assert "baseline's value on every seed" not in v.reason


def test_a_word_is_final_only_when_no_open_axis_could_change_it():
    """Contradicted is final whatever the size and utility; a fall whose size is open is not final while the cap
    could decide it, and is once the cap could not (the reason says so); without a horizon every word is final."""
    u = _seed_effect(0, 0.002)
    up, = verdict_of(C.ClaimEvidence("x", _seed_effect(0.03, 0.004), _seed_effect(0, 0.05), -0.045),
                     horizon=[(20, 0.0125)])
    assert up.verdict == "contradicted" and up.final and up.utility_axis == "undetermined"
    open_size = C.ClaimEvidence("x", _seed_effect(-0.025, 0.01, n=3), u, -0.045)
    v, = verdict_of(open_size, horizon=[(24, 0.0125)])
    assert v.size == "undetermined" and not v.final
    v, = verdict_of(open_size, horizon=[(4, 0.0125)])   # one seed more cannot narrow it enough
    assert v.final and "size cannot be decided within the cap of 4 seeds" in v.reason
    assert verdict_of(open_size)[0].final
    # direction undetermined with the size smaller: "no fall shown" waits for the direction while it can be decided
    weak = C.ClaimEvidence("x", _seed_effect(-0.004, 0.004, n=3), u, -0.09)
    v, = verdict_of(weak, horizon=[(48, 0.0125)])
    assert v.size == "smaller" and v.direction == "undetermined" and not v.final


def test_unchecked_bias_never_reads_a_fall_as_reproduced():
    e, u = _seed_effect(-0.06, 0.004), _seed_effect(0, 0.002)
    v, = verdict_of(C.ClaimEvidence("x", e, u, -0.045, unchecked="bias not checked"))
    assert v.verdict == "inconclusive" and v.reason.startswith("bias not checked") and v.direction == "lowers"


def test_compatible_is_axis_by_axis():
    a, = verdict_of(C.ClaimEvidence("x", _seed_effect(-0.06, 0.004), _seed_effect(0, 0.002), -0.045))
    b, = verdict_of(C.ClaimEvidence("x", _seed_effect(-0.03, 0.03), _seed_effect(0, 0.002), -0.045))
    c, = verdict_of(C.ClaimEvidence("x", _seed_effect(0.03, 0.004), _seed_effect(0, 0.002), -0.045))
    assert C.compatible(a, b) and C.compatible(b, c) and not C.compatible(a, c)


def test_seeds_needed_has_the_stated_power():
    """A literal simulation at the planned seeds: per-seed changes N(−4.5 points, 3 points²), utility tight: the
    interval at the planned level lies below 0 in at least 80% − noise of replicates (the direction is the open
    axis planned at the target), and one seed fewer falls short."""
    from faircl.eval.power import Axis, seeds_to_decide

    sd = 0.03
    e = C.paired_seed_comparison(np.zeros(3), sd * np.array([-1.0, 0.0, 1.0]))
    level = 0.01
    plan = seeds_to_decide([Axis("direction", e, 0.045)], level)
    n = plan.seeds
    assert n is not None and n > 3 and plan.axis == "direction" and f"{n - 3} new seeds ({n} in all)" in plan.reason
    rng = np.random.default_rng(22)

    def power(k: int, reps: int = 3000) -> float:
        d = -0.045 + sd * rng.standard_normal((reps, k))
        hi = d.mean(1) + stats.t.ppf(1 - level / 2, k - 1) * d.std(1, ddof=1) / math.sqrt(k)
        return float(np.mean(hi < 0))

    assert 0.8 - 0.03 <= power(n) <= 0.92 and power(n - 1) < 0.8 + 0.02


def test_an_open_claim_plans_its_limiting_axis_and_shared_row_noise_asks_for_rows():
    e = C.Effect(-0.02, -0.07, 0.03, 0.5, 0.025, 2, 3, 2000, shared=0.02 ** 2)   # the rows' part alone: 2 points
    u = C.paired_seed_comparison(np.zeros(3), 0.001 * np.array([-1.0, 0.0, 1.0]))
    v, = C.decide([C.ClaimEvidence("x", e, u, -0.045)])
    assert v.verdict == "inconclusive" and v.rows_needed is not None and v.rows_needed > 2000
    assert f"none on these 2,000 rows for the {v.seeds_axis}" in v.seeds_reason
    assert f"on ≈ {v.rows_needed:,} rows, {v.seeds_needed} new seeds" in v.seeds_reason
    assert C.seeds_cell(v).startswith("none on these 2,000 rows")


def test_rows_needed_at_fixed_seeds_scale_the_shared_row_noise_only():
    """A synthetic set can grow: at 8 seeds, the factor on the rows that decides an axis whose shared row noise is
    the limit is found; an axis limited by the seeds' own spread gets none."""
    from faircl.eval.power import Axis, _decides, rows_to_decide

    e = C.Effect(0.0, -0.05, 0.05, 1.0, math.sqrt(0.004 ** 2 + 0.02 ** 2), 7, 8, 800, shared=0.02 ** 2)
    axis = Axis("direction", e, 0.045)
    k = rows_to_decide([axis], 8, 0.05)
    assert k is not None and 1 < k < 100
    assert _decides(8, axis, 0.05, 0.8, rows=k) and not _decides(8, axis, 0.05, 0.8, rows=k / 1.05)
    spread = C.Effect(0.0, -0.2, 0.2, 1.0, 0.06, 7, 8, 800, shared=1e-8)   # the seeds' spread: 6 points
    assert rows_to_decide([Axis("direction", spread, 0.045)], 8, 0.05) is None
    assert rows_to_decide([], 8, 0.05) is None and rows_to_decide([axis], 1, 0.05) is None


def test_words_are_wrong_at_most_alpha_when_the_paper_is_right_and_when_there_is_nothing():
    """5 seeds, per-seed changes N(μ, 3 points²): at μ = the paper's −4.5 a word that excludes it (smaller,
    raises) comes out in at most α of claims; at μ = 0 a fall or a rise (lowers, raises) in at most α."""
    rng = np.random.default_rng(21)
    s, sd, reps = 5, 0.03, 1500

    def words(mu: float) -> list[C.Verdict]:
        return [verdict_of(C.ClaimEvidence("x", C.paired_seed_comparison(np.zeros(s), mu + sd * rng.standard_normal(s)),
                                           C.paired_seed_comparison(np.zeros(s), 0.003 * rng.standard_normal(s)),
                                           -0.045))[0] for _ in range(reps)]

    bound = 0.05 + 2 * math.sqrt(0.05 * 0.95 / reps)
    right = words(-0.045)
    assert np.mean([v.size == "smaller" or v.direction == "raises" for v in right]) <= bound
    null = words(0.0)
    assert np.mean([v.direction != "undetermined" for v in null]) <= bound
    assert all(v.verdict in ("no change", "no fall shown", "inconclusive") for v in null if v.direction == "undetermined")


def test_near_constant_method_on_an_86_percent_majority_split_is_degenerate():
    rng = np.random.default_rng(3)
    (yt, at), (yv, av) = split(1000, rng, 0.86), split(1000, rng, 0.86)
    bt, bv = seeds_of(yt, at, 0.3, 5, rng), seeds_of(yv, av, 0.3, 5, rng)
    mt = np.where(rng.random((5, 1000)) < 0.94, 0, yt)  # class 0 for 94% of rows (and right on the rest)
    ev = C.claim_from_predictions("constant", C.SplitPredictions(yt, at, bt), C.SplitPredictions(yt, at, mt),
                                  C.SplitPredictions(yv, av, bv), n_bootstrap=200)
    v, = verdict_of(ev)
    assert v.verdict == "degenerate" and "5/5 seeds" in v.reason


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
