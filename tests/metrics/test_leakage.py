"""LinearLeakage against a scikit-learn pipeline written out in the test."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from faircl.metrics import LinearLeakage, linear_leakage


def _split(n, d=6, num_groups=2, signal=1.0, seed=0, unknown=0.05):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randint(num_groups, (n,), generator=gen)
    direction = torch.randn(num_groups, d, generator=gen)
    x = signal * direction[a] + torch.randn(n, d, generator=gen) * torch.linspace(0.5, 5.0, d)
    a[torch.rand(n, generator=gen) < unknown] = -1
    return x, a


def _reference(train_x, train_a, test_x, test_a, C=0.1):
    keep = train_a >= 0
    scaler = StandardScaler().fit(train_x[keep].double().numpy())
    svm = LinearSVC(C=C, class_weight="balanced", random_state=0, max_iter=2000)
    svm.fit(scaler.transform(train_x[keep].double().numpy()), train_a[keep].numpy())
    k = test_a >= 0
    pred = svm.predict(scaler.transform(test_x[k].double().numpy()))
    return float((pred == test_a[k].numpy()).mean())


@pytest.mark.parametrize("num_groups", [2, 3])
def test_leakage_matches_sklearn_pipeline(num_groups):
    tr_x, tr_a = _split(600, num_groups=num_groups, seed=1)
    te_x, te_a = _split(300, num_groups=num_groups, seed=2)
    ref = _reference(tr_x, tr_a, te_x, te_a)
    assert ref > 1 / num_groups + 0.1  # the attribute is linearly recoverable here
    assert linear_leakage(tr_x, tr_a, te_x, te_a) == pytest.approx(ref, abs=1e-12)
    m = LinearLeakage().fit(tr_x, tr_a)
    for idx in torch.arange(300).split(70):
        m.update(te_x[idx], te_a[idx])
    assert m.compute().item() == pytest.approx(ref, abs=1e-12)


def test_leakage_without_signal_is_near_chance():
    tr_x, tr_a = _split(800, signal=0.0, seed=3)
    te_x, te_a = _split(800, signal=0.0, seed=4)
    assert abs(linear_leakage(tr_x, tr_a, te_x, te_a) - 0.5) < 0.06


def test_half_precision_features_and_row_order():
    tr_x, tr_a = _split(400, seed=5)
    te_x, te_a = _split(200, seed=6)
    a = LinearLeakage().fit(tr_x, tr_a)
    a.update(te_x.to(torch.float16), te_a)
    b = LinearLeakage().fit(tr_x, tr_a)
    b.update(te_x.to(torch.float16).float(), te_a)
    assert a.compute().item() == b.compute().item()
    perm = torch.randperm(400, generator=torch.Generator().manual_seed(0))
    c = LinearLeakage().fit(tr_x[perm], tr_a[perm])
    c.update(te_x.to(torch.float16), te_a)
    assert c.compute().item() == a.compute().item()


def test_max_rows_is_seeded_and_deterministic():
    tr_x, tr_a = _split(2000, seed=7)
    te_x, te_a = _split(300, seed=8)
    v1 = linear_leakage(tr_x, tr_a, te_x, te_a, max_rows=200)
    v2 = linear_leakage(tr_x, tr_a, te_x, te_a, max_rows=200)
    assert v1 == v2
    from faircl.metrics.leakage import fit_leakage_probe
    w1 = fit_leakage_probe(tr_x, tr_a, max_rows=200)[-1].coef_
    w2 = fit_leakage_probe(tr_x, tr_a, max_rows=200, seed=1)[-1].coef_
    w_all = fit_leakage_probe(tr_x, tr_a)[-1].coef_
    assert not np.allclose(w1, w2) and not np.allclose(w1, w_all)  # the cap really subsamples, per seed
    assert 0.5 < v1 <= 1.0


@pytest.mark.filterwarnings("ignore:The ``compute`` method")
def test_degenerate_and_errors():
    tr_x, tr_a = _split(100, seed=9)
    m = LinearLeakage()
    with pytest.raises(RuntimeError, match="call fit"):
        m.compute()
    m.fit(tr_x, tr_a)
    assert math.isnan(m.compute().item())              # no evaluation rows: undefined
    m.update(tr_x[:3], torch.full((3,), -1))
    assert math.isnan(m.compute().item())              # only unknown attributes: undefined
    with pytest.raises(ValueError, match="at least two distinct known groups"):
        LinearLeakage().fit(tr_x, torch.zeros(100, dtype=torch.long))
    with pytest.raises(ValueError, match="same number of rows"):
        LinearLeakage().fit(tr_x, tr_a[:50])
    with pytest.raises(ValueError, match="non-finite value at row 2"):
        bad = tr_x.clone()
        bad[2, 1] = float("inf")
        LinearLeakage().fit(bad, tr_a)
    with pytest.raises(ValueError, match="features and groups must have the same number of rows"):
        m.update(tr_x[:4], tr_a[:3])
    with pytest.raises(ValueError, match="C must be > 0"):
        LinearLeakage(C=0)
