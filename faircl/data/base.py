"""Datasets and the base DataModule shared by every faircl data source.

A batch is a dict: ``x`` (tensor or list of strings), ``y`` (long), ``a`` (long, ``-1`` = unknown attribute),
``idx`` (row id within the split) and, when two views are requested, ``x2``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, default_collate

from faircl.data import samplers
from faircl.data.batches import FetchedRows, collate_rows
from faircl.data.io import UNKNOWN_VALUES, DataError, category_key, is_unknown, located, sorted_categories
from faircl.data.loaders import RankAwareLoader, ShardSampler
from faircl.data.summary import print_count_table

__all__ = ["DataError", "FairDataModule", "FairDataset", "FetchedRows", "collate_rows", "encode_groups", "SPLITS",
           "SAMPLERS"]

SPLITS = ("train", "val", "test")
SAMPLERS = ("random", "group_balanced", "stratified", "samples_per_class")
#: What a datamodule's ``x`` is: feature vectors, token ids, raw strings, images, or counterfactual text tuples.
INPUT_KINDS = ("features", "tokens", "text", "images", "tuples")


def encode_groups(
    columns: Sequence[Sequence[Any]],
    *,
    names: Sequence[str] | None = None,
    unknown: Sequence[Any] = UNKNOWN_VALUES,
    categories: Sequence[Sequence[Any]] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Map one or several attribute columns to a single group id (intersectional groups).

    A row whose value in *any* column is unknown gets id ``-1``. Group ids enumerate the cartesian product of the
    observed (or given) categories of each column in sorted order, and group names join the values with ``|``
    (``female|black``). Fixed ``categories`` keep ids stable across splits.

    Args:
        columns: one sequence of raw values per attribute column, all of length N.
        names: optional display names for the raw values are not needed; kept for symmetry (unused).
        unknown: raw values that mean "unknown" (default :data:`faircl.data.io.UNKNOWN_VALUES`).
        categories: per column, the ordered list of known values (default: sorted observed values).

    Returns:
        ``(ids [N] int64, group_names)``.
    """
    if not columns:
        raise ValueError("encode_groups needs at least one attribute column")
    n = len(columns[0])
    if any(len(c) != n for c in columns):
        raise ValueError("encode_groups: attribute columns have different lengths")
    unknown = tuple(unknown)
    if categories is None:
        categories = [sorted_categories(category_key(v) for v in col if not is_unknown(v, unknown)) for col in columns]
    else:
        categories = [[category_key(c) for c in cats] for cats in categories]
    lookup = [{c: i for i, c in enumerate(cats)} for cats in categories]
    sizes = [len(c) for c in categories]
    ids = np.full(n, -1, dtype=np.int64)
    for r in range(n):
        gid = 0
        for col, lk, size in zip(columns, lookup, sizes):
            v = col[r]
            if is_unknown(v, unknown):
                gid = -1
                break
            key = category_key(v)  # 1, 1.0 and " 1" are one group, as they are one class in a label column
            if key not in lk:
                raise DataError(f"attribute value {v!r} at row {r} is not one of the known categories {list(lk)}")
            gid = gid * size + lk[key]
        ids[r] = gid
    group_names = ["|".join(combo) for combo in _product(categories)]
    return ids, group_names


def _product(categories: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = [()]
    for cats in categories:
        out = [prev + (c,) for prev in out for c in cats]
    return out


class FairDataset(Dataset):
    """Rows ``(x, y, a)`` with validated labels and attributes.

    Args:
        x: tensor ``[N, ...]``, a list of N strings, or any sequence indexable by row (e.g. image paths).
        y: task labels ``[N]`` in ``[0, num_classes)``.
        a: protected attribute ids ``[N]`` in ``[0, num_groups)`` or ``-1`` (unknown).
        num_classes: number of task classes (labels outside the range raise :class:`DataError`).
        num_groups: number of attribute groups.
        loader: applied first to ``x[i]`` (e.g. read an image file); default identity.
        transform: applied last to make ``x`` (e.g. tokenisation, normalisation).
        view_transform: when given, two independent random views are drawn between ``loader`` and ``transform``:
            ``x = transform(view_transform(loader(x[i])))`` and ``x2`` likewise.
        source: file name (or description) used in error messages.
    """

    def __init__(
        self,
        x: Any,
        y: Any,
        a: Any,
        *,
        num_classes: int,
        num_groups: int,
        loader: Callable | None = None,
        transform: Callable | None = None,
        view_transform: Callable | None = None,
        source: str | None = None,
        y_column: str = "y",
        a_column: str = "a",
    ) -> None:
        self.x = x
        self.y = torch.as_tensor(np.asarray(y), dtype=torch.long).reshape(-1)
        self.a = torch.as_tensor(np.asarray(a), dtype=torch.long).reshape(-1)
        self.num_classes = int(num_classes)
        self.num_groups = int(num_groups)
        self.loader = loader
        self.transform = transform
        self.view_transform = view_transform
        self.source = source
        n = len(x)
        if len(self.y) != n or len(self.a) != n:
            raise DataError(
                f"x has {n} rows but y has {len(self.y)} and a has {len(self.a)}{located(source)}"
            )
        bad = torch.nonzero((self.y < 0) | (self.y >= self.num_classes)).flatten()
        if len(bad):
            r = int(bad[0])
            raise DataError(
                f"label {int(self.y[r])} outside [0, {self.num_classes}) in {len(bad)} row(s), first at"
                f"{located(source, y_column, r)}"
            )
        bad = torch.nonzero((self.a < -1) | (self.a >= self.num_groups)).flatten()
        if len(bad):
            r = int(bad[0])
            raise DataError(
                f"attribute id {int(self.a[r])} outside [-1, {self.num_groups}) in {len(bad)} row(s), first at"
                f"{located(source, a_column, r)}"
            )

    def __len__(self) -> int:
        return len(self.y)

    def check_finite(self, split: str | None = None) -> None:
        """Raise :class:`DataError` naming the split, row and column of the first NaN / inf in a float ``x``."""
        x = self.x
        if isinstance(x, np.ndarray) and x.dtype.kind in "fc":
            x = torch.from_numpy(x)
        if not isinstance(x, torch.Tensor) or not (x.is_floating_point() or x.is_complex()) or x.numel() == 0:
            return
        bad = ~torch.isfinite(x.reshape(len(x), -1))
        if not bool(bad.any()):
            return
        rows = bad.any(1).nonzero().flatten()
        r = int(rows[0])
        col = int(bad[r].nonzero()[0])
        column = f"x[{col}]" if x.ndim == 2 else f"x{[int(i) for i in np.unravel_index(col, tuple(x.shape[1:]))]}"
        value = float(x.reshape(len(x), -1)[r, col])
        where_ = f"the {split!r} split, " if split else ""
        raise DataError(f"{where_}{len(rows)} row(s) with non-finite features ({value}), first at"
                        f"{located(self.source, column, r)}; clean or impute the data before training")

    def _finish(self, value: Any) -> Any:
        return self.transform(value) if self.transform is not None else value

    def item(self, i: int, views: bool = True) -> dict[str, Any]:
        """Row ``i`` as a batch item; ``views=False`` skips the random views (plain evaluation)."""
        raw = self.x[i]
        if self.loader is not None:
            raw = self.loader(raw)
        item: dict[str, Any] = {"y": self.y[i], "a": self.a[i], "idx": torch.tensor(i, dtype=torch.long)}
        if views and self.view_transform is not None:
            item["x"] = self._finish(self.view_transform(raw))
            item["x2"] = self._finish(self.view_transform(raw))
        else:
            item["x"] = self._finish(raw)
        return item

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.item(i)

    def __getitems__(self, rows: Sequence[int]) -> FetchedRows:
        """Rows ``rows`` fetched in one call (the DataLoader's batched fetch); see :meth:`fetch`."""
        return FetchedRows(self.fetch(rows))

    def fetch(self, rows: Sequence[int], views: bool = True) -> dict[str, Any]:
        """The batch of rows ``rows``: exactly the dict that collating ``item(i)`` row by row gives (same keys in the
        same order, same dtypes and values, random views drawn in the same order), built with one indexing call per
        tensor where ``x`` is stored as a tensor (features, token ids, cached images).

        ``x`` is gathered as a batch when the dataset has no ``loader`` and no random view is drawn, ``x`` is a tensor
        (or exposes ``take(rows)``, like cached images) or a numpy array, and ``transform`` is ``None`` or offers
        ``batch(x_rows)`` (the same values as applying it row by row). Anything else is transformed row by row.
        """
        r = torch.as_tensor(rows, dtype=torch.long).reshape(-1)
        out: dict[str, Any] = {"y": self.y[r], "a": self.a[r], "idx": r.clone()}
        if views and self.view_transform is not None:
            xs, x2s = [], []
            for i in r.tolist():
                raw = self.x[i]
                if self.loader is not None:
                    raw = self.loader(raw)
                xs.append(self._finish(self.view_transform(raw)))
                x2s.append(self._finish(self.view_transform(raw)))
            out["x"], out["x2"] = default_collate(xs), default_collate(x2s)
            return out
        out["x"] = self._fetch_x(r)
        return out

    def _fetch_x(self, r: torch.Tensor) -> Any:
        x, transform = self.x, self.transform
        batched_transform = transform is None or callable(getattr(transform, "batch", None))
        if self.loader is None and batched_transform:
            raw: Any = None
            if isinstance(x, torch.Tensor):
                raw = x[r]
            elif callable(getattr(x, "take", None)):
                raw = x.take(r)
            elif isinstance(x, np.ndarray) and transform is not None:
                raw = x[r.numpy()]
            if raw is not None:
                return raw if transform is None else transform.batch(raw)
        return default_collate([self._x_of(i) for i in r.tolist()])

    def _x_of(self, i: int) -> Any:
        raw = self.x[i]
        return self._finish(self.loader(raw) if self.loader is not None else raw)

    def counts(self) -> torch.Tensor:
        """(class × group) count table ``[num_classes, num_groups + 1]``; the last column counts unknown ``a``."""
        a = torch.where(self.a < 0, torch.full_like(self.a, self.num_groups), self.a)
        flat = self.y * (self.num_groups + 1) + a
        return torch.bincount(flat, minlength=self.num_classes * (self.num_groups + 1)).reshape(
            self.num_classes, self.num_groups + 1
        )


def permute_attributes(splits: dict[str, FairDataset]) -> None:
    """Replace each split's attribute by a permutation of itself drawn from a fixed generator (one per split name),
    in place: group sizes (unknown ``-1`` included) stay, any association with ``x`` and ``y`` goes."""
    for name, ds in splits.items():
        gen = torch.Generator().manual_seed(0x5EED + sum(map(ord, name)))
        ds.a = ds.a[torch.randperm(len(ds.a), generator=gen)]


class FairDataModule(L.LightningDataModule):
    """Base DataModule: loads splits, validates them, reports group counts and builds group-aware loaders.

    Subclasses implement :meth:`load_splits` (and may set ``class_names`` / ``group_names`` / ``input_dim``).

    Args:
        batch_size: rows per batch (per process under DDP).
        num_workers: DataLoader workers.
        sampler: ``random`` | ``group_balanced`` | ``stratified`` | ``samples_per_class`` for the train loader.
        samples_per_class: ``n`` of SPC-n batches (``sampler="samples_per_class"``).
        spc_by: ``class`` or ``attribute``: what SPC-n batches are balanced over.
        two_views: add a second augmented view ``x2`` to training batches (contrastive methods).
        seed: seeds data generation, shuffling and samplers.
        eval_batch_size: batch size for val/test/predict (default ``batch_size``).
        predict_split: the split ``predict`` runs on: ``train`` | ``val`` | ``test`` (un-augmented, in row order).
        permute_attribute: a control: replace the attribute of every split by a fixed random permutation of itself
            (the same for every ``seed``), which keeps the group sizes and removes any tie to ``x`` and ``y``. A
            fairness claim on it has no bias to remove and must read "untestable".
    """

    #: set by subclasses (or in ``load_splits``)
    class_names: list[str]
    group_names: list[str]

    def __init__(
        self,
        batch_size: int = 64,
        num_workers: int = 0,
        sampler: str = "random",
        samples_per_class: int = 2,
        spc_by: str = "class",
        two_views: bool = False,
        seed: int = 0,
        eval_batch_size: int | None = None,
        predict_split: str = "test",
        permute_attribute: bool = False,
    ) -> None:
        super().__init__()
        if sampler not in SAMPLERS:
            raise ValueError(f"sampler={sampler!r} is not one of {SAMPLERS}")
        if spc_by not in ("class", "attribute"):
            raise ValueError(f"spc_by={spc_by!r} must be 'class' or 'attribute'")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if predict_split not in SPLITS:
            raise ValueError(f"predict_split={predict_split!r} is not one of {SPLITS}")
        self.predict_split = predict_split
        self.permute_attribute = bool(permute_attribute)
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.sampler = sampler
        self.samples_per_class = samples_per_class
        self.spc_by = spc_by
        self.two_views = two_views
        self.seed = seed
        self.eval_batch_size = eval_batch_size or batch_size
        self._splits: dict[str, FairDataset] | None = None
        self._reported = False

    # ----------------------------------------------------------------- subclass API
    def load_splits(self) -> dict[str, FairDataset]:
        """Return ``{"train": ..., "val": ..., "test": ...}`` datasets (override)."""
        raise NotImplementedError(f"{type(self).__name__} must implement load_splits()")

    def view_transform(self) -> Callable | None:
        """Transform that draws one random view of a raw row (used when ``two_views=True``). Override."""
        return None

    @property
    def input_dim(self) -> int:
        """Feature dimension, vocabulary size or image channels (``0`` when the encoder needs none)."""
        return 0

    @property
    def input_kind(self) -> str:
        """What ``x`` holds, one of :data:`INPUT_KINDS` (``features`` here); a method's default encoder follows it."""
        return "features"

    # ----------------------------------------------------------------- loading
    @property
    def splits(self) -> dict[str, FairDataset]:
        if self._splits is None:
            splits = self.load_splits()
            missing = [s for s in SPLITS if s not in splits]
            if missing:
                raise DataError(f"{type(self).__name__}.load_splits() returned no {missing} split(s)")
            for name, ds in splits.items():
                if len(ds) == 0:
                    raise DataError(
                        f"{type(self).__name__}: the {name!r} split is empty{located(ds.source)}; check the data "
                        "directory and the split options"
                    )
                ds.check_finite(name)
            if self.permute_attribute:
                permute_attributes(splits)
            if self.two_views:
                vt = self.view_transform()
                if vt is None:
                    raise ValueError(f"{type(self).__name__} has no view_transform: two_views=True is not supported")
                splits["train"].view_transform = vt
            self._splits = splits
        return self._splits

    @property
    def num_classes(self) -> int:
        return self.splits["train"].num_classes

    @property
    def num_groups(self) -> int:
        return self.splits["train"].num_groups

    def setup(self, stage: str | None = None) -> None:
        splits = self.splits
        if not self._reported:
            self._reported = True
            self.report_counts(splits)

    def count_table(self, split: str = "train") -> torch.Tensor:
        """(class × group) counts of a split, last column = unknown attribute."""
        return self.splits[split].counts()

    def report_counts(self, splits: dict[str, FairDataset]) -> None:
        """Print the (class × group) count table of every split (rank 0 only)."""
        if getattr(self, "trainer", None) is not None and not self.trainer.is_global_zero:
            return
        for name in SPLITS:
            print_count_table(
                splits[name].counts(),
                class_names=self.class_names,
                group_names=self.group_names,
                title=f"{type(self).__name__} {name}: {len(splits[name])} rows (class x group)",
            )

    # ----------------------------------------------------------------- loaders
    def _dist(self) -> tuple[int, int]:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return torch.distributed.get_world_size(), torch.distributed.get_rank()
        return 1, 0

    def train_dataloader(self) -> DataLoader:
        ds = self.splits["train"]
        world, rank = self._dist()
        common = dict(num_workers=self.num_workers, persistent_workers=self.num_workers > 0, collate_fn=collate_rows)
        if self.sampler == "random":
            # Also on one process: the shuffle depends only on (seed, epoch) (Lightning calls set_epoch), so an
            # epoch re-run after a resume sees the same order as in the uninterrupted run.
            sampler = torch.utils.data.DistributedSampler(
                ds, num_replicas=world, rank=rank, shuffle=True, seed=self.seed, drop_last=world > 1
            )
            return DataLoader(ds, batch_size=self.batch_size, sampler=sampler, drop_last=len(ds) > self.batch_size,
                              **common)
        kw = dict(num_replicas=world, rank=rank, seed=self.seed)
        if self.sampler == "group_balanced":
            bs = samplers.GroupBalancedBatchSampler(ds.a, self.batch_size, **kw)
        elif self.sampler == "stratified":
            bs = samplers.StratifiedBatchSampler(ds.y, ds.a, self.batch_size, **kw)
        else:
            labels = ds.y if self.spc_by == "class" else ds.a
            bs = samplers.SamplesPerClassSampler(labels, self.batch_size, samples_per_class=self.samples_per_class,
                                                 **kw)
        return RankAwareLoader(ds, batch_sampler=bs, **common)

    def _eval_loader(self, split: str) -> DataLoader:
        ds = self.splits[split]
        world, rank = self._dist()
        sampler = None
        if world > 1:
            # Exact metrics under DDP: every row on exactly one rank (no padding duplicates).
            sampler = ShardSampler(len(ds), world, rank)
        return DataLoader(ds, batch_size=self.eval_batch_size, sampler=sampler, shuffle=False,
                          num_workers=self.num_workers, collate_fn=collate_rows)

    def val_dataloader(self) -> DataLoader:
        return self._eval_loader("val")

    def test_dataloader(self) -> DataLoader:
        return self._eval_loader("test")

    def predict_dataloader(self) -> DataLoader:
        return self.plain_loader(self.predict_split)

    def plain_loader(self, split: str, batch_size: int | None = None) -> DataLoader:
        """Un-shuffled, un-augmented loader over a whole split (this rank's shard under DDP)."""
        ds = self.splits[split]
        if ds.view_transform is not None:
            ds = _NoViews(ds)
        world, rank = self._dist()
        sampler = ShardSampler(len(ds), world, rank) if world > 1 else None
        return DataLoader(ds, batch_size=batch_size or self.eval_batch_size, sampler=sampler, shuffle=False,
                          num_workers=self.num_workers, collate_fn=collate_rows)


class _NoViews(Dataset):
    def __init__(self, ds: FairDataset) -> None:
        self.ds = ds

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.ds.item(i, views=False)

    def __getitems__(self, rows: Sequence[int]) -> FetchedRows:
        return FetchedRows(self.ds.fetch(rows, views=False))
