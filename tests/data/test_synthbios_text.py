"""SynthBiosText: SynthBios's bios through the text pipeline — the same rows as SynthBios for a seed, the two-class
stereotype task with the planted train agreement, frozen features with cached views, and bad arguments refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from faircl.data import SynthBios, SynthBiosText
from faircl.data.synthetic import _PROFESSIONS


def test_same_bios_as_synthbios_and_the_stereotype_task():
    gen = SynthBios(n_train=3000, n_val=400, n_test=400, representation="text", seed=3).splits
    prof = SynthBiosText(n_train=3000, n_val=400, n_test=400, representation="text", seed=3)
    two = SynthBiosText(n_train=3000, n_val=400, n_test=400, representation="text", seed=3, task="stereotype")
    stereo = np.array([_PROFESSIONS[p][0] for p in prof.class_names])
    for split in ("train", "val", "test"):
        assert list(prof.splits[split].x) == list(gen[split].x) == list(two.splits[split].x)
        assert torch.equal(prof.splits[split].y, gen[split].y) and torch.equal(prof.splits[split].a, gen[split].a)
        assert np.array_equal(two.splits[split].y.numpy(), stereo[gen[split].y.numpy()])
    assert two.class_names == ["male-stereotyped profession", "female-stereotyped profession"]
    agree = {s: float((two.splits[s].y == two.splits[s].a).float().mean()) for s in ("train", "val", "test")}
    assert abs(agree["train"] - 0.8) < 0.03  # the planted stereotype (3000 rows: sd 0.007)
    assert abs(agree["val"] - 0.5) < 0.1 and abs(agree["test"] - 0.5) < 0.1  # balanced evaluation splits
    assert two.input_kind == "text"


def test_frozen_features_with_cached_views(tiny_bert, tmp_path):
    kw = dict(n_train=40, n_val=20, n_test=20, task="stereotype", features="frozen", encoder_dir=tiny_bert,
              cache_dir=str(tmp_path / "cache"), max_length=32)
    dm = SynthBiosText(two_views=True, frozen_views=2, eda_p=0.3, **kw)
    assert dm.input_kind == "features" and dm.input_dim == 16
    pair = dm.splits["train"][0]
    assert pair["x"].shape == pair["x2"].shape == (16,)
    plain = SynthBiosText(**kw).splits
    torch.testing.assert_close(plain["test"][3]["x"], dm.splits["test"][3]["x"])  # views never reach evaluation
    assert "x2" not in plain["test"][3]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="task='gender' must be one of"):
        SynthBiosText(task="gender")
    with pytest.raises(ValueError, match="takes no data_dir"):
        SynthBiosText(data_dir="somewhere")


def test_frozen_views_pair_two_different_copies_drawn_among_the_original_and_its_eda_copies():
    from faircl.data.text.base import _PickView

    torch.manual_seed(0)
    pick = _PickView(num_views=3)
    firsts, seconds = [], []
    for i in range(4000):
        (k1, r1), (k2, r2) = pick(i % 7), pick(i % 7)
        assert r1 == r2 == i % 7 and k1 != k2  # a pair is never one copy twice
        firsts.append(k1)
        seconds.append(k2)
    for draws in (firsts, seconds):  # the original (0) and every EDA copy, about a quarter each
        share = torch.bincount(torch.tensor(draws), minlength=4).double() / len(draws)
        assert torch.all((share - 0.25).abs() < 0.03), share
    # a row drawn again after its pair is complete starts a new pair (it may repeat a copy of the old one)
    again = [pick(5)[0] for _ in range(400)]
    assert len(set(again)) == 4


def test_frozen_features_are_normalised_as_the_encoder_directory_says(tiny_bert, tmp_path):
    import json
    import shutil

    import numpy as np

    kw = dict(n_train=30, n_val=10, n_test=10, task="stereotype", features="frozen", max_length=32,
              cache_dir=str(tmp_path / "cache"))
    raw = SynthBiosText(encoder_dir=tiny_bert, **kw)
    assert not raw.normalizes_features()  # a plain transformer directory: the mean-pooled vectors as they are
    norms = np.linalg.norm(np.stack([raw.splits["train"][i]["x"].numpy() for i in range(5)]), axis=1)
    assert not np.allclose(norms, 1.0)
    st = tmp_path / "st_model"  # the same weights in the sentence-transformers layout with a Normalize module
    shutil.copytree(tiny_bert, st)
    (st / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers."
                                                  "models.Transformer"},
                                                 {"idx": 1, "name": "2", "path": "2_Normalize",
                                                  "type": "sentence_transformers.models.Normalize"}]))
    unit = SynthBiosText(encoder_dir=str(st), two_views=True, frozen_views=1, **kw)
    assert unit.normalizes_features()
    x = torch.stack([unit.splits["train"][i]["x"] for i in range(10)] + [unit.splits["test"][i]["x"] for i in range(5)])
    torch.testing.assert_close(x.norm(dim=1), torch.ones(len(x)))
    forced = SynthBiosText(encoder_dir=tiny_bert, feature_normalize=True, **kw)
    first = forced.splits["test"][0]["x"]
    torch.testing.assert_close(first, raw.splits["test"][0]["x"] / raw.splits["test"][0]["x"].norm())
    assert not SynthBiosText(encoder_dir=str(st), feature_normalize=False, **kw).normalizes_features()
