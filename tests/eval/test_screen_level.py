"""The bias screen is exact at its level: a bias-free protocol passes at most ``alpha`` of the time, whatever the
number of permutations (the quantile alone lets through about ``alpha + 1 / B``)."""

from __future__ import annotations

import numpy as np

from faircl.eval.statistics import BiasTest, permutation_null


def test_real_needs_the_quantile_and_the_p_value():
    assert BiasTest(0.5, 0.4, 0.3, 0.04).real
    assert not BiasTest(0.5, 0.4, 0.3, 0.06).real  # above the quantile, but p > alpha
    assert not BiasTest(0.39, 0.4, 0.3, 0.01).real
    assert BiasTest(0.5, 0.4, 0.3, 0.09, alpha=0.1).real


def test_bias_free_protocols_pass_at_most_alpha_with_few_permutations():
    """600 bias-free protocols, 19 permutations each: the quantile rule alone passes about 10% (alpha + 1/20); the
    screen passes 1/20 = 5% at most, up to simulation error (3 standard errors: 7.7%)."""
    rng = np.random.default_rng(11)
    passed = quantile_only = 0
    reps, n = 600, 300
    for r in range(reps):
        y, a = rng.integers(0, 2, n), rng.integers(0, 2, n)
        preds = np.where(rng.random((2, n)) < 0.8, y, 1 - y)   # errors independent of the attribute
        t = permutation_null(y, preds, a, "tpr_gap_rms", num_classes=2, num_groups=2, n_permutations=19,
                             n_bootstrap=0, seed=r)
        passed += t.real
        quantile_only += t.observed > t.null_q95
    se = np.sqrt(0.05 * 0.95 / reps)
    assert passed / reps <= 0.05 + 3 * se, passed
    assert quantile_only / reps > passed / reps  # the p-value condition is what keeps the level
