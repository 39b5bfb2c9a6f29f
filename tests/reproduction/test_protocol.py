"""The controlled-stereotype protocol for English hate speech (faircl.data.text.hate_speech)."""

from __future__ import annotations

import numpy as np
import pytest

from faircl.data.text.hate_speech import HateSpeech, controlled_stereotype_rows


def _synthetic(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    a = rng.integers(-1, 2, n)
    return y, a


def test_controlled_rows_have_the_stated_mix():
    y, a = _synthetic()
    rows, rep = controlled_stereotype_rows(y, a, agreement=0.8, n_train=400, n_eval=200, seed=3)
    tr, va, te = rows["train"], rows["val"], rows["test"]
    assert len(set(tr) | set(va) | set(te)) == len(tr) + len(va) + len(te)  # disjoint
    assert (a[np.concatenate([tr, va, te])] >= 0).all()
    assert rep["counts"]["train"] == {"y=0,a=0": 160, "y=0,a=1": 40, "y=1,a=0": 40, "y=1,a=1": 160}
    assert rep["agreement"] == pytest.approx(0.8)
    for split in ("val", "test"):
        assert set(rep["counts"][split].values()) == {50}
    again, _ = controlled_stereotype_rows(y, a, agreement=0.8, n_train=400, n_eval=200, seed=3)
    assert all(np.array_equal(rows[k], again[k]) for k in rows)
    other, _ = controlled_stereotype_rows(y, a, agreement=0.8, n_train=400, n_eval=200, seed=4)
    assert not np.array_equal(rows["train"], other["train"])


def test_controlled_rows_default_size_and_errors():
    y, a = _synthetic()
    rows, rep = controlled_stereotype_rows(y, a, agreement=0.8, n_eval=100)
    agree_avail = min(rep["available"]["y=0,a=0"], rep["available"]["y=1,a=1"])
    assert rep["counts"]["train"]["y=0,a=0"] > agree_avail - 50 - 10  # the largest train set the cells allow
    with pytest.raises(ValueError, match="not enough rows"):
        controlled_stereotype_rows(y, a, n_train=100000, n_eval=100)
    with pytest.raises(ValueError, match="multiple of 4"):
        controlled_stereotype_rows(y, a, n_eval=10)
    with pytest.raises(ValueError, match="binary"):
        controlled_stereotype_rows(y + 1, a)


@pytest.mark.parametrize("attribute", ["gender", "age"])
def test_controlled_protocol_on_english_hate_speech(data_dir, attribute):
    root = data_dir / "multilingual_hate_speech_demographics"
    if not (root / "English_valid.tsv").is_file():
        pytest.skip(f"{root} has no English files")
    dm = HateSpeech(data_dir=str(root), attribute=attribute, split_protocol="controlled", controlled_eval=2000,
                    seed=0)
    dm._reported = True
    splits = dm.splits
    rep = dm.protocol_report
    tr = splits["train"]
    y, a = tr.y.numpy(), tr.a.numpy()
    assert (a >= 0).all() and abs((y == a).mean() - 0.8) < 1e-3 and rep["agreement"] == pytest.approx((y == a).mean())
    assert abs(y.mean() - 0.5) < 1e-3 and abs(a.mean() - 0.5) < 1e-3
    assert len(tr) > 5000  # gender: 7600 rows, age: 6600 rows
    for split in ("val", "test"):
        ys, as_ = splits[split].y.numpy(), splits[split].a.numpy()
        assert len(ys) == 2000
        assert {int(((ys == u) & (as_ == v)).sum()) for u in (0, 1) for v in (0, 1)} == {500}
    assert sum(rep["counts"]["train"].values()) == len(tr)
