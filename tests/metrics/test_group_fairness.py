"""GroupFairness: agreement with the functional layer, batching, invariances (hypothesis), precision, bad input."""

from __future__ import annotations

import math

import pytest
import torch
from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from faircl.metrics import GroupFairness
from faircl.metrics import functional as F

SCALARS = ["accuracy", "f1", "eo_gap", "tpr_gap_rms", "fpr_gap_rms", "ppr_gap_rms", "dp_gap", "worst_group_accuracy"]


def _assert_same(a: dict, b: dict, rtol: float = 0.0) -> None:
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=rtol, atol=rtol, equal_nan=True, msg=key)


@pytest.mark.parametrize("num_classes,num_groups", [(2, 2), (2, 5), (6, 3)])
def test_compute_matches_functional_and_oracles(make_data, num_classes, num_groups):
    p, t, g = make_data(900, num_classes, num_groups, seed=num_groups)
    m = GroupFairness(num_classes, num_groups)
    for idx in torch.arange(900).split(128):
        m.update(p[idx], t[idx], g[idx])
    out = m.compute()
    args = (p, t, g, num_classes, num_groups)
    assert out["eo_gap"].item() == pytest.approx(F.eo_gap(*args).item(), rel=1e-12)
    assert out["tpr_gap_rms"].item() == pytest.approx(F.tpr_gap_rms(*args).item(), rel=1e-12)
    assert out["fpr_gap_rms"].item() == pytest.approx(F.fpr_gap_rms(*args).item(), rel=1e-12)
    assert out["dp_gap"].item() == pytest.approx(F.demographic_parity_gap(*args).item(), rel=1e-12)
    assert out["worst_group_accuracy"].item() == pytest.approx(F.worst_group_accuracy(*args).item(), rel=1e-12)
    torch.testing.assert_close(out["group_accuracy"], F.group_accuracy(*args))
    assert out["accuracy"].item() == pytest.approx(accuracy_score(t, p), abs=1e-12)
    avg = "binary" if num_classes == 2 else "macro"
    assert out["f1"].item() == pytest.approx(f1_score(t, p, average=avg), abs=1e-12)
    assert out["balanced_accuracy"].item() == pytest.approx(balanced_accuracy_score(t, p), abs=1e-12)
    assert out["n_unknown_group"].item() == int((g == -1).sum())
    assert out["group_accuracy"].shape == (num_groups,)
    # per-group TPR / FPR: a literal loop (binary: the positive class; otherwise the mean of one-vs-rest rates)
    classes = [1] if num_classes == 2 else range(num_classes)
    for a in range(num_groups):
        tprs, fprs = [], []
        for c in classes:
            pos, neg = (t == c) & (g == a), (t != c) & (g == a)
            if pos.any():
                tprs.append(float((p[pos] == c).double().mean()))
            if neg.any():
                fprs.append(float((p[neg] == c).double().mean()))
        assert out["group_tpr"][a].item() == pytest.approx(sum(tprs) / len(tprs), abs=1e-12)
        assert out["group_fpr"][a].item() == pytest.approx(sum(fprs) / len(fprs), abs=1e-12)
    if num_classes == 2:
        known = g >= 0
        kw = dict(y_true=t[known].numpy(), y_pred=p[known].numpy(), sensitive_features=g[known].numpy())
        assert out["equalized_odds_difference"].item() == pytest.approx(equalized_odds_difference(**kw), abs=1e-12)
        assert out["dp_gap"].item() == pytest.approx(demographic_parity_difference(**kw), abs=1e-12)
    else:
        assert "equalized_odds_difference" not in out


def test_counts_are_integer_sum_states(make_data):
    m = GroupFairness(3, 4)
    assert m.confmat.dtype == torch.long and m.confmat.shape == (5, 3, 3)
    assert m._reductions["confmat"].__name__ in ("dim_zero_sum", "sum")
    p, t, g = make_data(100, 3, 4)
    m.update(p, t, g)
    assert int(m.confmat.sum()) == 100


def test_group_missing_from_a_batch_keeps_its_slot(make_data):
    p, t, g = make_data(600, 2, 3, seed=1)
    m = GroupFairness(2, 3)
    m.update(p[g != 1], t[g != 1], g[g != 1])
    m.update(p[g == 1], t[g == 1], g[g == 1])
    ref = GroupFairness(2, 3)
    ref.update(p, t, g)
    _assert_same(m.compute(), ref.compute(), rtol=1e-12)


def test_absent_group_reports_nan_accuracy(make_data):
    p, t, g = make_data(400, 2, 4, absent_groups=(3,))
    m = GroupFairness(2, 4)
    m.update(p, t, g)
    out = m.compute()
    assert math.isnan(out["group_accuracy"][3].item())
    assert not math.isnan(out["eo_gap"].item())


@pytest.mark.filterwarnings("ignore:The ``compute`` method")
def test_compute_before_update_is_nan_not_zero():
    out = GroupFairness(2, 2).compute()
    for key in SCALARS:
        assert math.isnan(out[key].item()), key


def test_reset(make_data):
    p, t, g = make_data(100, 2, 2)
    m = GroupFairness(2, 2)
    m.update(p, t, g)
    m.reset()
    assert int(m.confmat.sum()) == 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_scores(make_data, dtype):
    s, t, g = make_data(1000, 6, 3, scores=True, seed=8)
    s = (s / 4).to(dtype)
    a, b = GroupFairness(6, 3), GroupFairness(6, 3)
    a.update(s, t, g)
    b.update(s.float(), t, g)
    assert torch.equal(a.confmat, b.confmat)
    _assert_same(a.compute(), b.compute())


def test_smoothing_option_matches_functional(make_data):
    p, t, g = make_data(500, 6, 3, unknown=0.0)
    m = GroupFairness(6, 3, smoothing=1e-5)
    m.update(p, t, g)
    assert m.compute()["tpr_gap_rms"].item() == pytest.approx(
        F.tpr_gap_rms(p, t, g, 6, 3, smoothing=1e-5).item(), rel=1e-12)


def test_bad_input_raises_value_error():
    m = GroupFairness(2, 2)
    t = torch.tensor([0, 1])
    with pytest.raises(ValueError, match="groups contains 2 at row 1"):
        m.update(t, t, torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="preds contains NaN"):
        m.update(torch.tensor([[0.0, float("nan")], [1.0, 0.0]]), t, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="num_groups must be >= 1"):
        GroupFairness(2, 0)
    with pytest.raises(ValueError, match="smoothing must be >= 0"):
        GroupFairness(2, 2, smoothing=-1.0)


# ---------------------------------------------------------------------------------------------------------------
# hypothesis: row permutation, group relabelling and batching do not change the result
# ---------------------------------------------------------------------------------------------------------------

@st.composite
def datasets(draw):
    num_classes = draw(st.sampled_from([2, 3, 6]))
    num_groups = draw(st.sampled_from([2, 3, 5]))
    n = draw(st.integers(0, 60))
    rows = st.tuples(st.integers(0, num_classes - 1), st.integers(0, num_classes - 1),
                     st.integers(-1, num_groups - 1))
    data = draw(st.lists(rows, min_size=n, max_size=n))
    p, t, g = (torch.tensor([r[i] for r in data], dtype=torch.long) for i in range(3))
    return num_classes, num_groups, p, t, g


def _run(num_classes, num_groups, p, t, g, cuts=()):
    m = GroupFairness(num_classes, num_groups)
    bounds = [0, *sorted(cuts), len(p)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        m.update(p[lo:hi], t[lo:hi], g[lo:hi])
    return m.compute()


@settings(max_examples=40, deadline=None)
@given(datasets(), st.randoms(use_true_random=False))
def test_property_row_permutation(data, rnd):
    c, k, p, t, g = data
    perm = list(range(len(p)))
    rnd.shuffle(perm)
    perm = torch.tensor(perm, dtype=torch.long)
    _assert_same(_run(c, k, p, t, g), _run(c, k, p[perm], t[perm], g[perm]), rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(datasets(), st.randoms(use_true_random=False))
def test_property_group_relabelling(data, rnd):
    c, k, p, t, g = data
    relabel = list(range(k))
    rnd.shuffle(relabel)
    relabel = torch.tensor(relabel)
    g2 = torch.where(g >= 0, relabel[g.clamp_min(0)], g)
    a, b = _run(c, k, p, t, g), _run(c, k, p, t, g2)
    # per-group entries move with the labels; every other entry is unchanged
    for key in ("group_accuracy", "group_tpr", "group_fpr"):
        torch.testing.assert_close(b[key][relabel], a[key], equal_nan=True)
        a.pop(key), b.pop(key)
    _assert_same(a, b, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(datasets(), st.lists(st.integers(0, 60), max_size=6))
def test_property_any_batching(data, cuts):
    c, k, p, t, g = data
    cuts = [min(x, len(p)) for x in cuts]
    _assert_same(_run(c, k, p, t, g), _run(c, k, p, t, g, cuts))


def test_validate_args_false_gives_the_same_counts(make_data):
    s, t, g = make_data(500, 6, 3, scores=True)
    a, b = GroupFairness(6, 3), GroupFairness(6, 3, validate_args=False)
    a.update(s, t, g)
    b.update(s, t, g)
    assert torch.equal(a.confmat, b.confmat)
    with pytest.raises(ValueError, match="same number of rows"):  # shapes are still checked
        b.update(s[:3], t, g)


def test_balanced_accuracy_of_a_constant_predictor_is_chance():
    """Imbalanced labels (90% class 0): a constant predictor has accuracy 0.9 but balanced accuracy 0.5; a class
    missing from the labels is left out of the mean, as scikit-learn does."""
    t = torch.tensor([0] * 90 + [1] * 10)
    g = torch.arange(100) % 2
    m = GroupFairness(2, 2)
    m.update(torch.zeros(100, dtype=torch.long), t, g)
    out = m.compute()
    assert out["accuracy"].item() == pytest.approx(0.9)
    assert out["balanced_accuracy"].item() == pytest.approx(0.5)
    m = GroupFairness(3, 2)
    t3, p3 = torch.tensor([0, 0, 1, 1]), torch.tensor([0, 2, 1, 1])
    m.update(p3, t3, torch.tensor([0, 1, 0, 1]))
    assert m.compute()["balanced_accuracy"].item() == pytest.approx(0.75)
