"""Prediction-fairness functions against fairlearn, scikit-learn, fairlib's algorithm and literal loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from fairlearn.metrics import (
    MetricFrame,
    demographic_parity_difference,
    equalized_odds_difference,
    false_positive_rate,
    selection_rate,
    true_positive_rate,
)
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score

from faircl.metrics import functional as F

SETTINGS = [(c, g) for c in (2, 6) for g in (2, 3, 5)]


# ---------------------------------------------------------------------------------------------------------------
# literal references
# ---------------------------------------------------------------------------------------------------------------

def _rate(num_mask: np.ndarray, den_mask: np.ndarray) -> float:
    return num_mask[den_mask].mean() if den_mask.any() else float("nan")


def literal_eo_gap(p, t, g, num_classes, num_groups) -> float:
    """Chi et al. §4: ΔEO = Σ_y Σ_a |TPR_a^y − TPR^y| + |FPR_a^y − FPR^y| (binary: y = 1 only)."""
    p, t, g = (np.asarray(v) for v in (p, t, g))
    known = g >= 0
    p, t, g = p[known], t[known], g[known]
    classes = [1] if num_classes == 2 else range(num_classes)
    total, any_term = 0.0, False
    for y in classes:
        tpr_all = _rate(p == y, t == y)
        fpr_all = _rate(p == y, t != y)
        for a in range(num_groups):
            tpr_a = _rate(p == y, (t == y) & (g == a))
            fpr_a = _rate(p == y, (t != y) & (g == a))
            for r_a, r in ((tpr_a, tpr_all), (fpr_a, fpr_all)):
                if not (math.isnan(r_a) or math.isnan(r)):
                    total += abs(r_a - r)
                    any_term = True
    return total if any_term else float("nan")


def literal_tpr_gap_rms(p, t, g, num_classes, num_groups, rate="tpr") -> float:
    """Shen et al. eq. 4 as in fairlib: sqrt(mean_y (Σ_a |R_{a,y} − R_y|)²)."""
    p, t, g = (np.asarray(v) for v in (p, t, g))
    known = g >= 0
    p, t, g = p[known], t[known], g[known]
    per_class = []
    for y in range(num_classes):
        def r(mask):
            if rate == "tpr":
                return _rate(p == y, (t == y) & mask)
            if rate == "fpr":
                return _rate(p == y, (t != y) & mask)
            return _rate(p == y, mask)
        r_all = r(np.ones_like(t, dtype=bool))
        terms = [abs(r(g == a) - r_all) for a in range(num_groups)]
        terms = [x for x in terms if not math.isnan(x)]
        if terms:
            per_class.append(sum(terms))
    return math.sqrt(sum(x * x for x in per_class) / len(per_class)) if per_class else float("nan")


def fairlib_gap(p, t, g, metric="TPR") -> float:
    """fairlib ``gap_eval_scores`` / ``Aggregation_GAP`` step by step (numpy, 1e-5 smoothing, RMS over classes)."""
    p, t, g = (np.asarray(v) for v in (p, t, g))
    labels = list(range(len(set(t.tolist()))))

    def scores(cnf):
        fp = cnf.sum(axis=0) - np.diag(cnf) + 1e-5
        fn = cnf.sum(axis=1) - np.diag(cnf) + 1e-5
        tp = np.diag(cnf) + 1e-5
        tn = cnf.sum() - (fp + fn + tp) + 1e-5
        return {"TPR": tp / (tp + fn), "FPR": fp / (fp + tn), "PPR": (tp + fp) / (tp + fp + fn + tn)}

    overall = scores(confusion_matrix(t, p, labels=labels))[metric]
    groups = range(len(set(g.tolist())))
    per_group = np.stack([scores(confusion_matrix(t[g == a], p[g == a], labels=labels))[metric] for a in groups], 1)
    per_class = np.abs(per_group - overall.reshape(-1, 1)).sum(1)
    return float(np.sqrt(np.mean(per_class ** 2)))


# ---------------------------------------------------------------------------------------------------------------
# counts
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("num_classes,num_groups", SETTINGS)
def test_group_confusion_matches_sklearn_per_group(make_data, num_classes, num_groups):
    p, t, g = make_data(400, num_classes, num_groups, seed=num_classes * 10 + num_groups)
    cm = F.group_confusion(p, t, g, num_classes, num_groups)
    assert cm.shape == (num_groups, num_classes, num_classes) and cm.dtype == torch.long
    for a in range(num_groups):
        m = g == a
        ref = confusion_matrix(t[m].numpy(), p[m].numpy(), labels=list(range(num_classes)))
        np.testing.assert_array_equal(cm[a].numpy(), ref)
    assert int(cm.sum()) == int((g >= 0).sum())
    assert F.count_unknown_groups(g) == int((g == -1).sum()) > 0


def test_scores_are_argmaxed(make_data):
    s, t, g = make_data(300, 6, 3, scores=True)
    np.testing.assert_array_equal(F.group_confusion(s, t, g, 6, 3).numpy(),
                                  F.group_confusion(s.argmax(1), t, g, 6, 3).numpy())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_scores_give_fp32_counts(make_data, dtype):
    s, t, g = make_data(2000, 6, 5, scores=True, seed=3)
    s = (s / 3).to(dtype)
    cm_half = F.group_confusion(s, t, g, 6, 5)
    cm_fp32 = F.group_confusion(s.float(), t, g, 6, 5)
    assert torch.equal(cm_half, cm_fp32)


def test_autocast_logits_give_fp32_counts(make_data):
    _, t, g = make_data(500, 3, 2)
    x = torch.randn(500, 16)
    layer = torch.nn.Linear(16, 3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = layer(x)
    assert logits.dtype == torch.bfloat16
    assert torch.equal(F.group_confusion(logits, t, g, 3, 2), F.group_confusion(logits.float(), t, g, 3, 2))


def literal_counts(p, t, g, num_classes, num_groups) -> np.ndarray:
    """Counts ``[G + 1, C, C]`` by a loop over the rows (unknown group in the last slot)."""
    out = np.zeros((num_groups + 1, num_classes, num_classes), dtype=np.int64)
    for pi, ti, gi in zip(np.asarray(p).tolist(), np.asarray(t).tolist(), np.asarray(g).tolist()):
        out[num_groups if gi == -1 else gi, ti, pi] += 1
    return out


@pytest.mark.parametrize("chunk_rows", [1, 7, 64, 10_000])
@pytest.mark.parametrize("scores", [False, True])
def test_blockwise_counting_matches_a_row_loop(make_data, chunk_rows, scores):
    p, t, g = make_data(301, 6, 3, seed=chunk_rows, scores=scores)
    ids = p.argmax(1) if scores else p
    cm = F.confusion_counts(p, t, g, 6, 3, chunk_rows=chunk_rows)
    np.testing.assert_array_equal(cm.numpy(), literal_counts(ids, t, g, 6, 3))
    # accumulating into ``out`` adds to what is there
    out = torch.ones(4, 6, 6, dtype=torch.long)
    assert F.confusion_counts(p, t, g, 6, 3, out=out, chunk_rows=chunk_rows) is out
    np.testing.assert_array_equal(out.numpy(), literal_counts(ids, t, g, 6, 3) + 1)


def test_unknown_group_late_in_a_block_leaves_no_partial_counts():
    # the unshifted count fails at the last row (g = -1): the counts made before it must be rolled back
    g = torch.tensor([0, 1, 2, 0, 1, 2, 0, -1])
    t = torch.tensor([0, 1, 1, 0, 1, 0, 1, 1])
    p = torch.tensor([1, 1, 0, 0, 1, 0, 1, 0])
    for chunk_rows in (8, 3):
        out = torch.full((4, 2, 2), 5, dtype=torch.long)
        F.confusion_counts(p, t, g, 2, 3, out=out, chunk_rows=chunk_rows)
        np.testing.assert_array_equal(out.numpy(), literal_counts(p, t, g, 2, 3) + 5)


@pytest.mark.parametrize("check_groups", [False, True])   # True: the path of devices whose scatter has no bounds check
def test_both_group_check_paths_count_exactly_and_reject_bad_groups(make_data, check_groups):
    from faircl.metrics.functional import _count_blocks

    for unknown in (0.0, 0.1):
        p, t, g = make_data(500, 3, 4, seed=11, unknown=unknown)
        out = torch.zeros(5, 3, 3, dtype=torch.long)
        done = _count_blocks(p, t, g, 3, 4, out, scores=False, check_values=True, chunk_rows=64, shifted=False,
                             check_groups=check_groups)
        assert done == (unknown == 0.0)
        if done:
            np.testing.assert_array_equal(out.numpy(), literal_counts(p, t, g, 3, 4))
        out = torch.zeros(5, 3, 3, dtype=torch.long)
        assert _count_blocks(p, t, g, 3, 4, out, scores=False, check_values=True, chunk_rows=64, shifted=True,
                             check_groups=check_groups)
        np.testing.assert_array_equal(out.numpy(), literal_counts(p, t, g, 3, 4))
    for bad in (4, -2):
        g_bad = g.clone()
        g_bad[300] = bad
        with pytest.raises(ValueError, match=rf"groups contains {bad} at row 300"):
            _count_blocks(p, t, g_bad, 3, 4, torch.zeros(5, 3, 3, dtype=torch.long), scores=False,
                          check_values=True, chunk_rows=64, shifted=True, check_groups=check_groups)


def test_an_error_in_a_later_block_leaves_out_unchanged(make_data):
    from faircl.metrics import GroupFairness

    p, t, g = make_data(400, 2, 3, seed=2)
    m = GroupFairness(2, 3)
    m.update(p, t, g)
    before = m.confmat.clone()
    bad = t.clone()
    bad[399] = 7
    with pytest.raises(ValueError, match="target contains 7 at row 399"):
        F.confusion_counts(p, bad, g, 2, 3, out=m.confmat, chunk_rows=50)
    g_bad = g.clone()
    g_bad[390] = 3
    with pytest.raises(ValueError, match="groups contains 3 at row 390"):
        m.update(p, t, g_bad)
    assert torch.equal(m.confmat, before)


def test_group_rates_of_a_single_population(make_data):
    p, t, g = make_data(300, 3, 2, seed=4)
    cm = F.confusion_counts(p, t, g, 3, 2)
    whole = F.group_rates(cm.sum(0))
    assert whole["tpr"].shape == (3,)
    for y in range(3):
        assert whole["tpr"][y].item() == pytest.approx(((p == y) & (t == y)).sum().item() / (t == y).sum().item())
        assert whole["ppr"][y].item() == pytest.approx((p == y).float().mean().item())


def test_counting_accepts_other_int_dtypes_and_strided_views(make_data):
    p, t, g = make_data(400, 3, 4, seed=5)
    ref = literal_counts(p[::2], t[::2], g[::2], 3, 4)
    cm = F.confusion_counts(p.int()[::2], t.short()[::2], g.to(torch.int8)[::2], 3, 4, chunk_rows=17)
    np.testing.assert_array_equal(cm.numpy(), ref)


def test_bad_value_in_a_later_block_names_its_row():
    n = 40
    p, t, g = torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=torch.long), torch.zeros(n, dtype=torch.long)
    for name, value in (("preds", 2), ("preds", -1), ("target", 5), ("groups", 3), ("groups", -2)):
        args = {"preds": p.clone(), "target": t.clone(), "groups": g.clone()}
        args[name][29] = value
        with pytest.raises(ValueError, match=rf"{name} contains {value} at row 29"):
            F.confusion_counts(args["preds"], args["target"], args["groups"], 2, 3, chunk_rows=8)
    scores = torch.randn(n, 2)
    scores[33, 1] = float("nan")
    with pytest.raises(ValueError, match=r"preds contains NaN scores at row 33"):
        F.confusion_counts(scores, t, g, 2, 3, chunk_rows=8)
    # without value checks an out-of-range group still raises on CPU (the counting checks its bounds)
    bad = g.clone()
    bad[29] = 3
    with pytest.raises(ValueError, match=r"groups contains 3 at row 29"):
        F.confusion_counts(p, t, bad, 2, 3, check_values=False, chunk_rows=8)
    with pytest.raises(ValueError, match=r"out must be an int64 tensor of shape \[4, 2, 2\]"):
        F.confusion_counts(p, t, g, 2, 3, out=torch.zeros(3, 2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"chunk_rows must be >= 1"):
        F.confusion_counts(p, t, g, 2, 3, chunk_rows=0)
    with pytest.raises(TypeError, match=r"target must hold integer ids, got dtype torch.bool"):
        F.confusion_counts(p, t.bool(), g, 2, 3)


def test_fairness_summary_matches_the_single_statistics(make_data):
    for num_classes in (2, 6):
        p, t, g = make_data(700, num_classes, 3, seed=num_classes)
        counts = F.confusion_counts(p, t, g, num_classes, 3)
        s = F.fairness_summary(counts)
        cm = counts[:3]
        assert s["accuracy"].item() == F.accuracy_from_confusion(counts).item()
        assert s["f1"].item() == F.f1_from_confusion(counts).item()
        assert s["eo_gap"].item() == F.eo_gap_from_confusion(cm).item()
        for rate in ("tpr", "fpr", "ppr"):
            assert s[f"{rate}_gap_rms"].item() == F.rate_gap_rms_from_confusion(cm, rate).item()
        assert s["dp_gap"].item() == F.demographic_parity_gap_from_confusion(cm).item()
        assert s["worst_group_accuracy"].item() == F.worst_group_accuracy_from_confusion(cm).item()
        torch.testing.assert_close(s["group_accuracy"], F.group_accuracy_from_confusion(cm))
        assert s["n_unknown_group"].item() == int((g == -1).sum())
        assert ("equalized_odds_difference" in s) == (num_classes == 2)
        assert all(v.dtype == torch.float64 for k, v in s.items() if k != "n_unknown_group")
    with pytest.raises(ValueError, match="rate must be"):
        F.rate_gap_rms_from_confusion(cm, "acc")


# ---------------------------------------------------------------------------------------------------------------
# rates and gaps against fairlearn / sklearn
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("num_classes,num_groups", SETTINGS)
def test_group_rates_match_fairlearn_metricframe(make_data, num_classes, num_groups):
    p, t, g = make_data(600, num_classes, num_groups, seed=7 + num_groups)
    rates = F.group_rates(F.group_confusion(p, t, g, num_classes, num_groups))
    known = g >= 0
    pk, tk, gk = p[known].numpy(), t[known].numpy(), g[known].numpy()
    for y in range(num_classes):
        frame = MetricFrame(metrics={"tpr": true_positive_rate, "fpr": false_positive_rate, "ppr": selection_rate},
                            y_true=(tk == y).astype(int), y_pred=(pk == y).astype(int), sensitive_features=gk)
        by_group = frame.by_group
        for a in range(num_groups):
            for name in ("tpr", "fpr", "ppr"):
                assert rates[name][a, y].item() == pytest.approx(by_group.loc[a, name], abs=1e-12)
    acc = MetricFrame(metrics=accuracy_score, y_true=tk, y_pred=pk, sensitive_features=gk).by_group
    ours = F.group_accuracy(p, t, g, num_classes, num_groups)
    np.testing.assert_allclose(ours.numpy(), acc.sort_index().to_numpy(), atol=1e-12)
    assert F.worst_group_accuracy(p, t, g, num_classes, num_groups).item() == pytest.approx(acc.min(), abs=1e-12)


@pytest.mark.parametrize("num_groups", [2, 3, 5])
def test_binary_dp_and_eo_difference_match_fairlearn(make_data, num_groups):
    p, t, g = make_data(800, 2, num_groups, seed=num_groups)
    known = g >= 0
    kw = dict(y_true=t[known].numpy(), y_pred=p[known].numpy(), sensitive_features=g[known].numpy())
    assert F.demographic_parity_gap(p, t, g, 2, num_groups).item() == pytest.approx(
        demographic_parity_difference(**kw), abs=1e-12)
    assert F.equalized_odds_difference(p, t, g, 2, num_groups).item() == pytest.approx(
        equalized_odds_difference(**kw), abs=1e-12)


def test_multiclass_dp_and_eo_difference_are_max_over_one_vs_rest(make_data):
    p, t, g = make_data(900, 6, 3, seed=11)
    known = g >= 0
    dp, eo = [], []
    for y in range(6):
        kw = dict(y_true=(t[known] == y).int().numpy(), y_pred=(p[known] == y).int().numpy(),
                  sensitive_features=g[known].numpy())
        dp.append(demographic_parity_difference(**kw))
        eo.append(equalized_odds_difference(**kw))
    assert F.demographic_parity_gap(p, t, g, 6, 3).item() == pytest.approx(max(dp), abs=1e-12)
    assert F.equalized_odds_difference(p, t, g, 6, 3).item() == pytest.approx(max(eo), abs=1e-12)


@pytest.mark.parametrize("num_classes,num_groups", SETTINGS)
def test_eo_gap_matches_literal_loop(make_data, num_classes, num_groups):
    p, t, g = make_data(500, num_classes, num_groups, seed=num_classes + 3 * num_groups)
    ref = literal_eo_gap(p, t, g, num_classes, num_groups)
    assert ref > 0
    assert F.eo_gap(p, t, g, num_classes, num_groups).item() == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("num_classes,num_groups", SETTINGS)
@pytest.mark.parametrize("rate", ["tpr", "fpr", "ppr"])
def test_rate_gap_rms_matches_literal_loop(make_data, num_classes, num_groups, rate):
    p, t, g = make_data(500, num_classes, num_groups, seed=5 * num_classes + num_groups)
    fn = {"tpr": F.tpr_gap_rms, "fpr": F.fpr_gap_rms, "ppr": F.ppr_gap_rms}[rate]
    ref = literal_tpr_gap_rms(p, t, g, num_classes, num_groups, rate)
    assert ref > 0
    assert fn(p, t, g, num_classes, num_groups).item() == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("num_classes", [2, 6])
def test_two_group_gap_is_rms_of_pairwise_tpr_difference(make_data, num_classes):
    """Shen et al. eq. 4: with binary a, GAP = sqrt(mean_y |TPR_{0,y} − TPR_{1,y}|²)."""
    p, t, g = make_data(700, num_classes, 2, seed=21)
    tpr = F.group_rates(F.group_confusion(p, t, g, num_classes, 2))["tpr"]
    ref = (tpr[0] - tpr[1]).abs().square().mean().sqrt().item()
    assert F.tpr_gap_rms(p, t, g, num_classes, 2).item() == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("num_classes,num_groups", SETTINGS)
@pytest.mark.parametrize("metric", ["TPR", "FPR", "PPR"])
def test_fairlib_gap_equivalence(make_data, num_classes, num_groups, metric):
    """With smoothing=1e-5 the GAP equals fairlib's; exact rates differ from it only by the smoothing."""
    p, t, g = make_data(1500, num_classes, num_groups, seed=num_groups, unknown=0.0)
    cm = F.group_confusion(p, t, g, num_classes, num_groups)
    assert bool((cm.sum(-1) > 0).all()), "every (group, class) cell is populated"
    ref = fairlib_gap(p.numpy(), t.numpy(), g.numpy(), metric)
    smoothed = F.rate_gap_rms_from_confusion(cm, metric.lower(), smoothing=1e-5).item()
    exact = F.rate_gap_rms_from_confusion(cm, metric.lower()).item()
    assert smoothed == pytest.approx(ref, rel=1e-12)
    assert exact == pytest.approx(ref, abs=1e-5)


def test_fairlib_smoothing_gives_empty_cells_tpr_one_half():
    p = torch.tensor([0, 1, 1, 0])
    t = torch.tensor([0, 1, 1, 0])
    g = torch.tensor([0, 0, 0, 1])  # group 1 has no row of true class 1
    cm = F.group_confusion(p, t, g, 2, 2)
    assert cm[1, 1].sum() == 0
    assert F.group_rates(cm, smoothing=1e-5)["tpr"][1, 1].item() == pytest.approx(0.5)
    assert math.isnan(F.group_rates(cm)["tpr"][1, 1].item())


@pytest.mark.parametrize("num_classes", [2, 6])
def test_accuracy_and_f1_match_sklearn(make_data, num_classes):
    p, t, g = make_data(500, num_classes, 3, seed=2)
    cm = F.confusion_counts(*F.check_inputs(p, t, g, num_classes, 3), num_classes, 3)
    assert F.accuracy_from_confusion(cm).item() == pytest.approx(accuracy_score(t, p), abs=1e-12)
    avg = "binary" if num_classes == 2 else "macro"
    assert F.f1_from_confusion(cm).item() == pytest.approx(f1_score(t, p, average=avg), abs=1e-12)


def test_macro_f1_skips_a_class_absent_everywhere_like_sklearn(make_data):
    p, t, g = make_data(400, 5, 2, seed=4)  # ids 0..4 only, declared with 6 classes: class 5 never appears
    cm = F.confusion_counts(*F.check_inputs(p, t, g, 6, 2), 6, 2)
    assert F.f1_from_confusion(cm).item() == pytest.approx(f1_score(t, p, average="macro"), abs=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# degenerate inputs
# ---------------------------------------------------------------------------------------------------------------

def test_group_absent_from_whole_split_is_nan_and_ignored(make_data):
    p, t, g = make_data(600, 6, 5, seed=9, absent_groups=(2,))
    acc = F.group_accuracy(p, t, g, 6, 5)
    assert math.isnan(acc[2].item()) and not torch.isnan(acc[[0, 1, 3, 4]]).any()
    rates = F.group_rates(F.group_confusion(p, t, g, 6, 5))
    assert torch.isnan(rates["tpr"][2]).all() and torch.isnan(rates["ppr"][2]).all()
    # the gaps equal those computed over the groups present only
    keep = g != 2
    g4 = torch.where(g > 2, g - 1, g)
    for fn in (F.eo_gap, F.tpr_gap_rms, F.fpr_gap_rms, F.demographic_parity_gap, F.equalized_odds_difference,
               F.worst_group_accuracy):
        assert fn(p, t, g, 6, 5).item() == pytest.approx(fn(p[keep], t[keep], g4[keep], 6, 4).item(), rel=1e-12)


def test_class_absent_from_a_group_has_nan_tpr_and_is_left_out():
    # group 1 never has true class 1
    p = torch.tensor([0, 1, 1, 0, 0, 1])
    t = torch.tensor([0, 1, 1, 0, 0, 0])
    g = torch.tensor([0, 0, 0, 1, 1, 1])
    rates = F.group_rates(F.group_confusion(p, t, g, 2, 2))
    assert math.isnan(rates["tpr"][1, 1].item())
    assert F.eo_gap(p, t, g, 2, 2).item() == pytest.approx(literal_eo_gap(p, t, g, 2, 2), rel=1e-12)
    assert F.tpr_gap_rms(p, t, g, 2, 2).item() == pytest.approx(literal_tpr_gap_rms(p, t, g, 2, 2), rel=1e-12)


def test_all_unknown_groups_give_nan_gaps_but_defined_accuracy():
    p, t = torch.tensor([0, 1, 1]), torch.tensor([0, 1, 0])
    g = torch.full((3,), -1)
    for fn in (F.eo_gap, F.tpr_gap_rms, F.demographic_parity_gap, F.worst_group_accuracy):
        assert math.isnan(fn(p, t, g, 2, 3).item())
    cm = F.confusion_counts(*F.check_inputs(p, t, g, 2, 3), 2, 3)
    assert F.accuracy_from_confusion(cm).item() == pytest.approx(2 / 3)


def test_single_group_has_nan_gaps(make_data):
    p, t, _ = make_data(200, 3, 1)
    g = torch.zeros(200, dtype=torch.long)
    assert math.isnan(F.eo_gap(p, t, g, 3, 1).item())  # a gap needs two groups: undefined, not 0
    assert math.isnan(F.tpr_gap_rms(p, t, g, 3, 1).item())
    assert math.isnan(F.demographic_parity_gap(p, t, g, 3, 1).item())


def test_empty_input():
    e = torch.zeros(0, dtype=torch.long)
    assert F.group_confusion(e, e, e, 2, 2).sum() == 0
    assert math.isnan(F.eo_gap(e, e, e, 2, 2).item())
    assert torch.isnan(F.group_accuracy(e, e, e, 2, 2)).all()


def test_perfect_and_constant_predictions():
    t = torch.tensor([0, 1, 0, 1, 0, 1])
    g = torch.tensor([0, 0, 1, 1, 2, 2])
    assert F.eo_gap(t, t, g, 2, 3).item() == 0.0
    assert F.worst_group_accuracy(t, t, g, 2, 3).item() == 1.0
    ones = torch.ones(6, dtype=torch.long)
    assert F.demographic_parity_gap(ones, t, g, 2, 3).item() == 0.0


# ---------------------------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------------------------

def test_bad_inputs_name_the_argument_and_value():
    p = torch.tensor([0, 1, 1])
    t = torch.tensor([0, 1, 0])
    g = torch.tensor([0, 1, 0])
    with pytest.raises(ValueError, match=r"same number of rows.*3, 2 and 3"):
        F.group_confusion(p, t[:2], g, 2, 2)
    with pytest.raises(ValueError, match=r"groups contains 2 at row 1.*num_groups=2"):
        F.group_confusion(p, t, torch.tensor([0, 2, 0]), 2, 2)
    with pytest.raises(ValueError, match=r"groups contains -2 at row 2"):
        F.group_confusion(p, t, torch.tensor([0, 1, -2]), 2, 2)
    with pytest.raises(ValueError, match=r"target contains 3 at row 0.*num_classes=2"):
        F.group_confusion(p, torch.tensor([3, 1, 0]), g, 2, 2)
    with pytest.raises(ValueError, match=r"preds contains 2 at row 2"):
        F.group_confusion(torch.tensor([0, 1, 2]), t, g, 2, 2)
    scores = torch.randn(3, 2)
    scores[1, 0] = float("nan")
    with pytest.raises(ValueError, match=r"preds contains NaN scores at row 1"):
        F.group_confusion(scores, t, g, 2, 2)
    with pytest.raises(ValueError, match=r"preds holds floating-point scores.*\[N, 2\]"):
        F.group_confusion(torch.randn(3, 3), t, g, 2, 2)
    with pytest.raises(ValueError, match=r"preds holds floating-point scores"):
        F.group_confusion(torch.tensor([0.0, 1.0, 1.0]), t, g, 2, 2)
    with pytest.raises(TypeError, match=r"target must hold integer ids"):
        F.group_confusion(p, t.float(), g, 2, 2)
    with pytest.raises(ValueError, match=r"groups must have shape \[N\]"):
        F.group_confusion(p, t, g.view(3, 1), 2, 2)
    with pytest.raises(ValueError, match=r"num_classes must be >= 2"):
        F.group_confusion(p, t, g, 1, 2)
