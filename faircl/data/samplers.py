"""Rank-aware batch samplers that control the composition of every batch.

Three samplers share one set of rules:

* They are *batch samplers*: each yields lists of row indices and is passed as
  ``DataLoader(dataset, batch_sampler=...)``. Under DDP every process builds its own sampler with its
  ``rank`` (read from ``torch.distributed`` when it is initialised), and the trainer must not re-wrap it:
  :class:`faircl.data.base.FairDataModule`'s loaders present it as a ``DistributedSampler`` shard, which
  Lightning leaves alone even with its default ``use_distributed_sampler=True``.
* **Shards are disjoint.** Each epoch, the rows of every bucket (a group, a (class, group) cell or a class)
  are shuffled with ``seed + epoch`` — the same permutation on every rank — and rank ``r`` owns rows
  ``r, r + W, r + 2W, ...`` of it. The only exception is a bucket with fewer rows than ``W`` replicas:
  a rank that would own none of its rows borrows one (so that every batch on every rank can still hold the
  bucket); those few rows then appear on several ranks.
* **Equal batch counts.** ``len(sampler)`` is computed from global counts only, so it is the same on every
  rank; every batch has exactly ``batch_size`` rows.
* **Nothing is dropped silently.** Rows with the unknown attribute ``-1`` form their own bucket and are
  sampled like any other. Buckets smaller than their share of an epoch are *oversampled*: their shard is
  reshuffled and drawn again, so some rows appear more than once per epoch. An epoch lasts until every row
  of the rank's shard of the slowest-draining bucket has been drawn once. With ``drop_last=False`` the
  epoch is rounded up, so every row of the shard is drawn at least once (the last batch is completed with
  rows of a new shuffle). With ``drop_last=True`` (the default) it is rounded down, so per rank and epoch at
  most one batch's quota of each bucket is left out; those rows are drawn in other epochs, as the shuffle
  changes. An epoch never has zero batches: data too small for one batch per rank still gives one (full,
  oversampled) batch.
* **Reproducible.** The order depends only on ``(seed, epoch, rank)``; call :meth:`set_epoch` before each
  epoch to reshuffle. Lightning calls ``set_epoch`` on ``dataloader.sampler`` and on
  ``dataloader.batch_sampler.sampler``, not on the batch sampler itself, so each sampler exposes a ``sampler``
  attribute whose ``set_epoch`` forwards to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Sampler

from faircl._checks import check_ids

__all__ = ["GroupBalancedBatchSampler", "StratifiedBatchSampler", "SamplesPerClassSampler"]


def _as_ids(values: Any, name: str) -> np.ndarray:
    """Validate a 1-D integer id vector (``-1`` allowed; whole-valued floats read from a table accepted) as
    ``int64`` numpy, through the one validation family (:func:`faircl._checks.check_ids`)."""
    arr = values.detach().cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)
    if arr.size and arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iufb" and arr.size:
        raise TypeError(f"{name} must hold integer ids, got {arr.dtype} values")
    if arr.ndim == 1 and arr.size == 0:
        raise ValueError(f"{name} is empty: a sampler needs at least one row")
    return check_ids(name, torch.as_tensor(arr), allow_unknown=True).numpy()


def _resolve_dist(num_replicas: int | None, rank: int | None) -> tuple[int, int]:
    initialised = torch.distributed.is_available() and torch.distributed.is_initialized()
    if num_replicas is None:
        num_replicas = torch.distributed.get_world_size() if initialised else 1
    if rank is None:
        rank = torch.distributed.get_rank() if initialised else 0
    if int(num_replicas) < 1:
        raise ValueError(f"num_replicas must be >= 1, got {num_replicas}")
    if not 0 <= int(rank) < int(num_replicas):
        raise ValueError(f"rank must be in [0, num_replicas={num_replicas}), got {rank}")
    return int(num_replicas), int(rank)


def _check_batch_size(batch_size: Any) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


class _Stream:
    """Endless draws from a fixed set of rows: shuffled passes, reshuffled at each new pass."""

    def __init__(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        self.rows = rows
        self.rng = rng
        self.order = rng.permutation(rows)
        self.pos = 0
        self.drawn = 0

    @property
    def unseen(self) -> int:
        """Rows of the shard not yet drawn in the first pass."""
        return max(len(self.rows) - self.drawn, 0)

    def take(self, q: int) -> list[int]:
        out: list[int] = []
        while len(out) < q:
            if self.pos == len(self.order):
                self.order = self.rng.permutation(self.rows)
                self.pos = 0
            step = min(q - len(out), len(self.order) - self.pos)
            out.extend(self.order[self.pos : self.pos + step].tolist())
            self.pos += step
        self.drawn += q
        return out


class _EpochHook:
    """Forwards ``set_epoch`` to its batch sampler."""

    def __init__(self, owner: _RankedBatchSampler) -> None:
        self.owner = owner

    def set_epoch(self, epoch: int) -> None:
        self.owner.set_epoch(epoch)


class _RankedBatchSampler(Sampler[list[int]]):
    """Shared machinery: buckets of rows, rank sharding, epochs and seeds."""

    def __init__(
        self,
        bucket_ids: np.ndarray,
        batch_size: int,
        num_replicas: int | None,
        rank: int | None,
        seed: int,
        drop_last: bool,
    ) -> None:
        self.batch_size = _check_batch_size(batch_size)
        self.num_replicas, self.rank = _resolve_dist(num_replicas, rank)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.epoch = 0
        self.num_rows = int(bucket_ids.size)
        self.bucket_keys, inverse = np.unique(bucket_ids, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        sizes = np.bincount(inverse, minlength=len(self.bucket_keys))
        self.bucket_rows = np.split(order, np.cumsum(sizes)[:-1])
        self.bucket_sizes = sizes.astype(np.int64)
        # Largest and smallest shard any rank can hold of each bucket (a rank with none borrows one row).
        w = self.num_replicas
        self.shard_max = np.maximum(-(-self.bucket_sizes // w), 1)
        self.shard_min = np.maximum(self.bucket_sizes // w, 1)

    def set_epoch(self, epoch: int) -> None:
        """Use a different shuffle for ``epoch`` (call before iterating, on every rank)."""
        self.epoch = int(epoch)

    @property
    def sampler(self) -> _EpochHook:
        """Where Lightning looks for ``set_epoch`` (``batch_sampler.sampler``); forwards to :meth:`set_epoch`."""
        return _EpochHook(self)

    def _shards(self) -> tuple[list[np.ndarray], np.random.Generator]:
        """This rank's rows of every bucket for the current epoch, and the rank's own generator."""
        shared = np.random.default_rng([self.seed, self.epoch])
        w, r = self.num_replicas, self.rank
        shards = []
        for rows in self.bucket_rows:
            perm = shared.permutation(rows)
            mine = perm[r::w]
            shards.append(mine if mine.size else perm[r % perm.size : r % perm.size + 1])
        return shards, np.random.default_rng([self.seed, self.epoch, r])


class _QuotaBatchSampler(_RankedBatchSampler):
    """Every batch takes a fixed average share ``f_k`` of ``batch_size`` from every bucket ``k``.

    Shares are turned into integer per-batch quotas by carrying fractional remainders from batch to batch
    (the bucket with the largest accumulated remainder gets the next spare slot), so that over ``m`` batches a
    bucket receives ``m·f_k`` rows up to one, and no bucket ever falls below ``floor(f_k)`` in a batch.
    """

    def _setup_quotas(self, shares: np.ndarray) -> None:
        self.shares = shares
        if self.drop_last:
            m = max(int(np.floor(np.max(self.shard_min / shares) + 1e-9)), 1)
        else:
            m = max(int(np.ceil(np.max(self.shard_max / shares) - 1e-9)), 1)
            while np.any(self._quotas(m).sum(0) < self.shard_max):
                m += 1
        self.num_batches = m
        self.quotas = self._quotas(m)

    def _quotas(self, m: int) -> np.ndarray:
        """Integer quotas ``[m, K]``; every row sums to ``batch_size``."""
        base = np.floor(self.shares + 1e-9).astype(np.int64)
        frac = np.clip(self.shares - base, 0.0, None)
        spare = self.batch_size - int(base.sum())
        carry = np.zeros_like(frac)
        out = np.tile(base, (m, 1))
        for b in range(m):
            carry += frac
            if spare:
                top = np.argsort(-carry, kind="stable")[:spare]
                out[b, top] += 1
                carry[top] -= 1.0
        return out

    def __len__(self) -> int:
        return self.num_batches

    def __iter__(self) -> Iterator[list[int]]:
        shards, rng = self._shards()
        streams = [_Stream(s, rng) for s in shards]
        for quota in self.quotas:
            batch: list[int] = []
            for stream, q in zip(streams, quota):
                batch.extend(stream.take(int(q)))
            yield np.asarray(batch, dtype=np.int64)[rng.permutation(len(batch))].tolist()


class GroupBalancedBatchSampler(_QuotaBatchSampler):
    """Batches with an equal share of every group (the unknown group ``-1`` counts as one more group).

    With ``G`` groups each batch holds ``batch_size // G`` or one more row of every group; the spare slots rotate
    between groups so that every group gets ``batch_size / G`` rows per batch on average. Small groups are
    oversampled (see the module docstring for epochs, sharding and ``drop_last``).

    Args:
        groups: group id per row ``[N]`` (tensor, array or list); ``-1`` = unknown attribute.
        batch_size: rows per batch on each rank; must be at least the number of groups.
        num_replicas: number of DDP processes (default: world size, or 1 outside DDP).
        rank: this process's rank (default: from ``torch.distributed``, or 0).
        seed: base seed; the epoch's shuffle uses ``(seed, epoch)``.
        drop_last: round the epoch down (``True``) or up (``False``) to whole batches.

    Raises:
        ValueError: bad ids, or ``batch_size`` smaller than the number of groups.
    """

    def __init__(
        self,
        groups: Sequence[int] | np.ndarray | torch.Tensor,
        batch_size: int,
        *,
        num_replicas: int | None = None,
        rank: int | None = None,
        seed: int = 0,
        drop_last: bool = True,
    ) -> None:
        g = _as_ids(groups, "groups")
        super().__init__(g, batch_size, num_replicas, rank, seed, drop_last)
        k = len(self.bucket_keys)
        if self.batch_size < k:
            names = ", ".join(str(int(v)) for v in self.bucket_keys)
            raise ValueError(
                f"batch_size={self.batch_size} is smaller than the number of groups ({k}: {names}); "
                f"a group-balanced batch needs at least one row per group"
            )
        self._setup_quotas(np.full(k, self.batch_size / k))

    @property
    def groups(self) -> list[int]:
        """Group ids in bucket order (``-1`` first when present)."""
        return [int(v) for v in self.bucket_keys]


class StratifiedBatchSampler(_QuotaBatchSampler):
    """Batches that hold every (class, group) cell, each in proportion to its size.

    Every cell present in the data (unknown group ``-1`` included, per class) gets ``min_per_cell`` rows in every
    batch; the remaining ``batch_size - min_per_cell·K`` slots are shared in proportion to the cell sizes
    (``K`` = number of non-empty cells). CS-InfoNCE (Chi et al. 2022, eq. 2) contrasts an anchor only with rows
    of its own cell, so ``min_per_cell=2`` guarantees every anchor a within-cell negative.

    Args:
        labels: class per row ``[N]``.
        groups: group id per row ``[N]``; ``-1`` = unknown attribute.
        batch_size: rows per batch on each rank; must be at least ``min_per_cell`` times the number of cells.
        min_per_cell: rows of every cell in every batch.
        num_replicas: number of DDP processes (default: world size, or 1 outside DDP).
        rank: this process's rank (default: from ``torch.distributed``, or 0).
        seed: base seed; the epoch's shuffle uses ``(seed, epoch)``.
        drop_last: round the epoch down (``True``) or up (``False``) to whole batches.

    Raises:
        ValueError: bad ids, different lengths, or ``batch_size`` too small for the cells.
    """

    def __init__(
        self,
        labels: Sequence[int] | np.ndarray | torch.Tensor,
        groups: Sequence[int] | np.ndarray | torch.Tensor,
        batch_size: int,
        *,
        min_per_cell: int = 1,
        num_replicas: int | None = None,
        rank: int | None = None,
        seed: int = 0,
        drop_last: bool = True,
    ) -> None:
        y = _as_ids(labels, "labels")
        a = _as_ids(groups, "groups")
        if y.size != a.size:
            raise ValueError(f"labels has {y.size} rows but groups has {a.size}")
        if np.any(y < 0):
            row = int(np.flatnonzero(y < 0)[0])
            raise ValueError(f"labels row {row} holds {int(y[row])}; class labels must be >= 0")
        if isinstance(min_per_cell, bool) or int(min_per_cell) < 1:
            raise ValueError(f"min_per_cell must be a positive integer, got {min_per_cell!r}")
        self.min_per_cell = int(min_per_cell)
        self.num_groups_seen = int(a.max()) + 2  # slot 0 = unknown
        cell = y * self.num_groups_seen + (a + 1)
        super().__init__(cell, batch_size, num_replicas, rank, seed, drop_last)
        k = len(self.bucket_keys)
        need = self.min_per_cell * k
        if self.batch_size < need:
            raise ValueError(
                f"batch_size={self.batch_size} is smaller than min_per_cell={self.min_per_cell} x {k} "
                f"(class, group) cells = {need}; cells: {self.cells}"
            )
        free = self.batch_size - need
        self._setup_quotas(self.min_per_cell + free * self.bucket_sizes / self.bucket_sizes.sum())

    @property
    def cells(self) -> list[tuple[int, int]]:
        """``(class, group)`` of every cell in bucket order."""
        return [(int(c) // self.num_groups_seen, int(c) % self.num_groups_seen - 1) for c in self.bucket_keys]


class SamplesPerClassSampler(_RankedBatchSampler):
    """SPC-n batches for deep metric learning: ``batch_size / n`` distinct classes, exactly ``n`` rows of each.

    Pass attribute ids instead of class labels to build batches by attribute (``-1`` rows then form an
    "unknown" class of their own). Rows of one class come out consecutively (runs of ``n``). A class with fewer
    than ``n`` rows on a rank repeats rows inside its run. Which classes share a batch is drawn at random, in
    proportion to how many of their rows the epoch has not yet drawn, and a class whose rows would otherwise not
    all fit in the remaining batches is always taken; so the epoch ends when every row of this rank's shard has
    been drawn (rounded as the module docstring says), with small classes oversampled.

    Args:
        labels: class (or attribute) id per row ``[N]``; ``-1`` = unknown.
        batch_size: rows per batch on each rank; a multiple of ``samples_per_class``.
        samples_per_class: ``n``, rows per class in a batch.
        num_replicas: number of DDP processes (default: world size, or 1 outside DDP).
        rank: this process's rank (default: from ``torch.distributed``, or 0).
        seed: base seed; the epoch's shuffle uses ``(seed, epoch)``.
        drop_last: round the epoch down (``True``) or up (``False``) to whole batches.

    Raises:
        ValueError: bad ids, ``batch_size`` not a multiple of ``n``, or fewer classes than a batch needs.
    """

    def __init__(
        self,
        labels: Sequence[int] | np.ndarray | torch.Tensor,
        batch_size: int,
        samples_per_class: int = 2,
        *,
        num_replicas: int | None = None,
        rank: int | None = None,
        seed: int = 0,
        drop_last: bool = True,
    ) -> None:
        y = _as_ids(labels, "labels")
        super().__init__(y, batch_size, num_replicas, rank, seed, drop_last)
        n = samples_per_class
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"samples_per_class must be a positive integer, got {n!r}")
        self.samples_per_class = int(n)
        if self.batch_size % self.samples_per_class:
            raise ValueError(
                f"batch_size={self.batch_size} is not a multiple of samples_per_class={self.samples_per_class}"
            )
        self.classes_per_batch = self.batch_size // self.samples_per_class
        c = len(self.bucket_keys)
        if c < self.classes_per_batch:
            raise ValueError(
                f"batch_size={self.batch_size} with samples_per_class={self.samples_per_class} needs "
                f"{self.classes_per_batch} distinct classes per batch, but labels has only {c} "
                f"({', '.join(str(int(v)) for v in self.bucket_keys)}); lower batch_size or raise samples_per_class"
            )
        k, n = self.classes_per_batch, self.samples_per_class
        if self.drop_last:
            chunks = self.shard_min // n
            m = max(int(chunks.sum()) // k, int(chunks.max()), 1)
        else:
            chunks = -(-self.shard_max // n)
            m = max(-(-int(chunks.sum()) // k), int(chunks.max()))
        self.num_batches = m

    def __len__(self) -> int:
        return self.num_batches

    def __iter__(self) -> Iterator[list[int]]:
        shards, rng = self._shards()
        streams = [_Stream(s, rng) for s in shards]
        k, n = self.classes_per_batch, self.samples_per_class
        for b in range(self.num_batches):
            left = self.num_batches - b
            unseen = np.array([-(-s.unseen // n) for s in streams])
            by_need = np.argsort(-unseen, kind="stable")
            chosen = [int(c) for c in by_need[:k] if unseen[c] >= left]
            rest = np.setdiff1d(np.arange(len(streams)), chosen)
            pending = rest[unseen[rest] > 0]
            want = k - len(chosen)
            if want == 0:
                pass
            elif len(pending) >= want:
                p = unseen[pending] / unseen[pending].sum()
                chosen += [int(c) for c in rng.choice(pending, size=want, replace=False, p=p)]
            else:
                chosen += [int(c) for c in pending]
                done = np.setdiff1d(rest, pending)
                chosen += [int(c) for c in rng.choice(done, size=k - len(chosen), replace=False)]
            batch: list[int] = []
            for c in rng.permutation(chosen):
                batch.extend(streams[int(c)].take(n))
            yield batch
