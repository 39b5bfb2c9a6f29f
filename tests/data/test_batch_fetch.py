"""Batches fetched in one call (``FairDataset.__getitems__``) equal what row-by-row fetching and collating give:
same keys in the same order, same dtypes, shapes and values, random views drawn in the same order.

Every embedded datamodule (features, token ids, raw text, images) and a cached image folder, with the random and the
group-balanced sampler, on one process and as each rank of a two-process job, for the train, validation and plain
(un-augmented) loaders.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, default_collate

from faircl.data import BiasedFeatures, ColoredDigits, ImageCSV, SynthBios
from faircl.data.base import FairDataset, _NoViews
from faircl.data.batches import FetchedRows, collate_rows


class _RowByRow(Dataset):
    """The dataset seen one row at a time (no ``__getitems__``): the reference path."""

    def __init__(self, ds: Dataset) -> None:
        self.ds = ds

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.ds[i]


def _row_by_row(loader: DataLoader) -> DataLoader:
    """The same loader (sampler, batch sampler, batch size) fetching and collating row by row."""
    kw: dict[str, Any] = {"num_workers": 0, "collate_fn": default_collate}
    if loader.batch_size is None:  # a batch sampler
        kw["batch_sampler"] = loader.batch_sampler
    else:
        kw.update(batch_size=loader.batch_size, sampler=loader.sampler, drop_last=loader.drop_last)
    return DataLoader(_RowByRow(loader.dataset), **kw)


def assert_same_batch(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert list(got) == list(want)
    for key in want:
        g, w = got[key], want[key]
        assert type(g) is type(w), key
        if isinstance(w, torch.Tensor):
            assert g.dtype == w.dtype and g.shape == w.shape, key
            assert torch.equal(g, w), key
        else:
            assert g == w, key


def _all(loader: DataLoader, epoch: int = 1) -> list[dict[str, Any]]:
    for s in (getattr(loader, "sampler", None), getattr(loader.batch_sampler, "sampler", None)):
        if hasattr(s, "set_epoch"):
            s.set_epoch(epoch)
    torch.manual_seed(123)  # the random views draw from torch's generator
    return list(loader)


def _images(tmp_path) -> ImageCSV:
    from PIL import Image

    rng = np.random.default_rng(0)
    rows = ["path,label,group"]
    for i in range(36):
        arr = rng.integers(0, 256, size=(10, 12, 3), dtype=np.uint8)
        Image.fromarray(arr).save(tmp_path / f"im{i}.png")
        rows.append(f"im{i}.png,{i % 2},{(i // 2) % 2}")
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    return ImageCSV


def _make(name: str, tmp_path, **kw) -> Any:
    if name == "features":
        return BiasedFeatures(n_train=60, n_val=20, n_test=20, dim=8, num_groups=3, **kw)
    if name == "tokens":
        return SynthBios(n_train=48, n_val=16, n_test=16, max_len=12, eda_synonyms=False, **kw)
    if name == "text":
        return SynthBios(n_train=48, n_val=16, n_test=16, representation="text", eda_synonyms=False, **kw)
    if name == "images":
        return ColoredDigits(size=8, **kw)
    if name == "cached_images":
        _images(tmp_path)
        return ImageCSV(data_dir=str(tmp_path), csv="labels.csv", path_column="path", label_column="label",
                        attribute_columns=["group"], image_size=8, cache=True, val_fraction=0.25,
                        test_fraction=0.25, **kw)
    raise KeyError(name)


KINDS = ["features", "tokens", "text", "images", "cached_images"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("sampler", ["random", "group_balanced"])
@pytest.mark.parametrize("world_rank", [(1, 0), (2, 0), (2, 1)])
def test_batches_equal_row_by_row(kind, sampler, world_rank, tmp_path, monkeypatch):
    world, rank = world_rank
    views = kind != "text" or sampler == "random"  # both view settings are covered across the grid
    for two_views in ((False, True) if views else (False,)):
        got_all, want_all = {}, {}
        for path in ("fetched", "rows"):
            dm = _make(kind, tmp_path, batch_size=8, sampler=sampler, two_views=two_views, seed=3)
            dm._reported = True
            monkeypatch.setattr(dm, "_dist", lambda: (world, rank))
            dm.setup()
            loaders = {"train": dm.train_dataloader(), "val": dm.val_dataloader(), "plain": dm.plain_loader("train")}
            target = got_all if path == "fetched" else want_all
            for name, loader in loaders.items():
                if path == "rows":
                    loader = _row_by_row(loader)
                target[name] = _all(loader)
        for name in ("train", "val", "plain"):
            got, want = got_all[name], want_all[name]
            assert len(got) == len(want) > 0, name
            for g, w in zip(got, want):
                assert_same_batch(g, w)
            if two_views and name == "train":
                assert "x2" in got[0]
            if name == "plain":
                assert "x2" not in got[0]


def test_fetch_is_one_indexing_call_for_stored_tensors(monkeypatch):
    dm = BiasedFeatures(n_train=40, n_val=8, n_test=8, dim=6, batch_size=16, seed=0)
    dm.setup()
    ds = dm.splits["train"]
    calls = []
    monkeypatch.setattr(FairDataset, "item", lambda self, i, views=True: calls.append(i))
    batch = next(iter(dm.train_dataloader()))
    assert calls == []  # no row-by-row work
    assert batch["x"].shape == (16, 6) and torch.equal(batch["x"], ds.x[batch["idx"]])
    assert torch.equal(batch["y"], ds.y[batch["idx"]]) and torch.equal(batch["a"], ds.a[batch["idx"]])


def test_fetched_rows_work_with_default_collate_in_a_users_loader():
    dm = ColoredDigits(size=8, batch_size=8, two_views=True, seed=1)
    dm.setup()
    ds = dm.splits["train"]
    torch.manual_seed(0)
    user = [b for _, b in zip(range(3), DataLoader(ds, batch_size=8))]  # torch's default_collate
    torch.manual_seed(0)
    ref = [b for _, b in zip(range(3), DataLoader(_RowByRow(ds), batch_size=8))]
    for g, w in zip(user, ref):
        assert_same_batch(g, w)
    rows = ds.__getitems__([3, 1])
    assert isinstance(rows, FetchedRows) and len(rows) == 2 and list(rows[1]) == ["y", "a", "idx", "x", "x2"]
    assert int(rows[1]["idx"]) == 1 and int(rows[-1]["idx"]) == 1
    with pytest.raises(IndexError):
        rows[2]
    assert collate_rows(rows) is rows.batch
    assert_same_batch(collate_rows([ds.item(0, views=False)]), default_collate([ds.item(0, views=False)]))


def test_no_views_wrapper_and_feature_table_batch():
    from faircl.data.text.base import _FeatureTable

    table = np.random.default_rng(0).standard_normal((10, 4))
    ds = FairDataset(np.arange(10), np.arange(10) % 2, np.arange(10) % 3, num_classes=2, num_groups=3,
                     transform=_FeatureTable([table]), view_transform=lambda i: i)
    rows = [7, 2, 2, 9]
    got = _NoViews(ds).__getitems__(rows).batch
    want = default_collate([ds.item(i, views=False) for i in rows])
    assert_same_batch(got, want)
    assert got["x"].dtype == torch.float32
