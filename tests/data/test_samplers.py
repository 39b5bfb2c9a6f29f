"""Batch samplers: rank sharding, balance, coverage, epochs and degenerate inputs."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader, TensorDataset

from faircl.data.samplers import GroupBalancedBatchSampler, SamplesPerClassSampler, StratifiedBatchSampler


def imbalanced(n: int = 157, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    groups = rng.choice([-1, 0, 1, 2], size=n, p=[0.1, 0.55, 0.25, 0.1])
    labels = rng.choice([0, 1, 2], size=n, p=[0.5, 0.3, 0.2])
    return labels, groups


def make(kind: str, labels, groups, batch_size: int, **kw):
    if kind == "group":
        return GroupBalancedBatchSampler(groups, batch_size, **kw)
    if kind == "strat":
        return StratifiedBatchSampler(labels, groups, batch_size, **kw)
    kw.setdefault("samples_per_class", batch_size // 3)  # three classes per batch
    return SamplesPerClassSampler(labels, batch_size, **kw)


def run_ranks(kind, labels, groups, batch_size, world, epoch=0, **kw):
    out = []
    for r in range(world):
        s = make(kind, labels, groups, batch_size, num_replicas=world, rank=r, **kw)
        s.set_epoch(epoch)
        out.append((s, list(s)))
    return out


KINDS = ["group", "strat", "spc"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("world", [1, 2, 3])
@pytest.mark.parametrize("drop_last", [False, True])
def test_shards_disjoint_cover_and_equal_length(kind, world, drop_last):
    labels, groups = imbalanced()
    runs = run_ranks(kind, labels, groups, 12, world, epoch=3, drop_last=drop_last)
    lengths = {len(s) for s, _ in runs}
    assert len(lengths) == 1 and {len(b) for _, b in runs} == lengths, "every rank yields len(sampler) batches"
    for _, batches in runs:
        assert all(len(b) == 12 for b in batches)
        assert all(0 <= i < len(labels) for b in batches for i in b)
    shards = [set(i for b in batches for i in b) for _, batches in runs]
    bucket = {"group": groups, "strat": labels * 10 + groups, "spc": labels}[kind]
    sizes = Counter(bucket.tolist())
    for r in range(world):
        for q in range(r + 1, world):
            shared = shards[r] & shards[q]
            # Only a bucket with fewer rows than replicas lends its rows to several ranks.
            assert all(sizes[bucket[i]] < world for i in shared), f"ranks {r} and {q} share rows"
    covered = set().union(*shards)
    if not drop_last:
        assert covered == set(range(len(labels)))
    else:
        # drop_last leaves out at most one batch's quota of each bucket per rank.
        missing = len(labels) - len(covered)
        assert missing <= world * 12


def test_group_balance_per_batch():
    labels, groups = imbalanced()
    for s, batches in run_ranks("group", labels, groups, 10, 2):
        keys = s.groups
        assert keys == [-1, 0, 1, 2]
        totals = Counter()
        for b in batches:
            c = Counter(groups[b].tolist())
            assert set(c) == set(keys)
            assert max(c.values()) - min(c.values()) <= 1, c  # 10 rows over 4 groups: 2 or 3 each
            totals.update(c)
        share = np.array([totals[k] for k in keys]) / (10 * len(batches))
        assert np.allclose(share, 0.25, atol=1 / len(batches))


def test_stratified_every_cell_every_batch_and_proportional():
    labels, groups = imbalanced(400)
    cells = set(zip(labels.tolist(), groups.tolist()))
    s = StratifiedBatchSampler(labels, groups, 32, min_per_cell=2, seed=5)
    assert set(s.cells) == cells
    counts = Counter()
    for b in s:
        c = Counter(zip(labels[b].tolist(), groups[b].tolist()))
        assert set(c) == cells
        assert min(c.values()) >= 2
        counts.update(c)
    sizes = Counter(zip(labels.tolist(), groups.tolist()))
    free = 32 - 2 * len(cells)
    for cell, n in sizes.items():
        expect = len(s) * (2 + free * n / len(labels))
        assert abs(counts[cell] - expect) <= 1.0 + 1e-9, (cell, counts[cell], expect)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_spc_exactly_n_per_class(n):
    labels, groups = imbalanced(300)
    for by in (labels, groups):
        for s, batches in run_ranks("spc", by, None, 3 * n, 2, samples_per_class=n):
            for b in batches:
                c = Counter(by[b].tolist())
                assert len(c) == 3 and set(c.values()) == {n}
                runs = [by[b[i : i + n]] for i in range(0, len(b), n)]
                assert all(len(set(r.tolist())) == 1 for r in runs), "class rows come in consecutive runs"


@pytest.mark.parametrize("kind", KINDS)
def test_epochs_reshuffle_and_seed_reproduces(kind):
    labels, groups = imbalanced()
    a = make(kind, labels, groups, 12, seed=7)
    b = make(kind, labels, groups, 12, seed=7)
    c = make(kind, labels, groups, 12, seed=8)
    e0 = list(a)
    assert e0 == list(b)
    assert e0 != list(c)
    a.set_epoch(1)
    e1 = list(a)
    assert e1 != e0
    b.set_epoch(1)
    assert list(b) == e1
    a.set_epoch(0)
    assert list(a) == e0


def test_small_groups_are_oversampled_evenly():
    groups = np.array([0] * 40 + [1] * 5)
    s = GroupBalancedBatchSampler(groups, 4, drop_last=False)
    seen = Counter(i for b in s for i in b)
    minority = [seen[i] for i in range(40, 45)]
    assert len(s) == 20 and sum(minority) == 40
    assert max(minority) - min(minority) <= 1
    assert all(seen[i] == 1 for i in range(40))


def test_degenerate_one_group_singletons_and_unknown_only():
    one = np.zeros(20, dtype=int)
    batches = list(GroupBalancedBatchSampler(one, 5))
    assert len(batches) == 4 and sorted(i for b in batches for i in b) == list(range(20))

    # A group of a single row appears in every batch (repeated), on every rank.
    groups = np.array([0] * 30 + [1])
    for s, batches in run_ranks("group", None, groups, 4, 2):
        assert all(30 in b for b in batches)
        assert len(batches) == len(s) == 7  # 15 rows of group 0 per rank, 2 per batch

    unknown = -np.ones(12, dtype=int)
    s = GroupBalancedBatchSampler(unknown, 4)
    assert s.groups == [-1] and len(list(s)) == 3

    labels = np.array([0, 0, 0, 1, 1, 1])
    spc = SamplesPerClassSampler(np.array([0] * 10 + [1]), 4, samples_per_class=2)
    for b in spc:
        assert b.count(10) == 2  # the lone row fills its class's run
    strat = StratifiedBatchSampler(labels, -np.ones(6, dtype=int), 2)
    assert strat.cells == [(0, -1), (1, -1)]
    assert all(sorted(labels[b].tolist()) == [0, 1] for b in strat)


def test_torch_tensor_inputs_and_dataloader():
    y = torch.tensor([0, 1] * 20)
    a = torch.tensor([0, 0, 1, 1, -1] * 8)
    ds = TensorDataset(torch.arange(40), y, a)
    loader = DataLoader(ds, batch_sampler=StratifiedBatchSampler(y, a, 8, seed=2))
    batches = list(loader)
    assert len(batches) == len(loader.batch_sampler)
    for idx, yb, ab in batches:
        assert idx.shape == (8,)
        assert torch.equal(yb, y[idx]) and torch.equal(ab, a[idx])
        assert len(set(zip(yb.tolist(), ab.tolist()))) == 6


def test_lightning_sets_the_epoch_through_the_dataloader():
    from lightning.fabric.utilities.data import _set_sampler_epoch

    labels, groups = imbalanced()
    s = GroupBalancedBatchSampler(groups, 8, seed=1)
    first = list(s)
    loader = DataLoader(TensorDataset(torch.arange(len(groups))), batch_sampler=s)
    _set_sampler_epoch(loader, 4)  # what Lightning's fit loop calls at each epoch start
    assert s.epoch == 4 and list(s) != first


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: GroupBalancedBatchSampler([0, 1, 2, 0, 1, 2], 2), r"smaller than the number of groups \(3"),
        (lambda: StratifiedBatchSampler([0, 1, 0, 1], [0, 0, 1, 1], 3), r"4 \(class, group\) cells"),
        (lambda: StratifiedBatchSampler([0, 1, 0], [0, 0], 3), "labels has 3 rows but groups has 2"),
        (lambda: StratifiedBatchSampler([0, -1], [0, 0], 2), "labels row 1"),
        (lambda: SamplesPerClassSampler([0, 1, 2] * 4, 5, samples_per_class=2), "not a multiple"),
        (lambda: SamplesPerClassSampler([0, 1] * 4, 6, samples_per_class=2), "needs 3 distinct classes"),
        (lambda: GroupBalancedBatchSampler([0, -2, 1], 2), "groups contains -2 at row 1"),
        (lambda: GroupBalancedBatchSampler([[0, 1]], 2), r"shape \[N\]"),
        (lambda: GroupBalancedBatchSampler([], 2), "empty"),
        (lambda: GroupBalancedBatchSampler([0, 1], 0), "batch_size must be a positive integer"),
        (lambda: GroupBalancedBatchSampler([0, 1], 2, num_replicas=2, rank=2), r"rank must be in \[0, num_replicas"),
    ],
)
def test_bad_input_raises_clear_error(build, match):
    with pytest.raises(ValueError, match=match):
        build()


@pytest.mark.parametrize("ids", [[0.5, 1.0], torch.tensor([0.5, 1.0]), np.array([True, False]), ["a", "b"]])
def test_non_integer_ids_are_a_type_error(ids):
    """A wrong dtype is a TypeError, as everywhere in faircl (faircl._checks); whole-valued floats are accepted."""
    with pytest.raises(TypeError, match="integer ids"):
        GroupBalancedBatchSampler(ids, 2)


@pytest.mark.parametrize("drop_last", [True, False])
def test_too_few_rows_still_give_one_full_batch(drop_last):
    g = np.array([0, 1, 0, 1])
    for s, batches in run_ranks("group", None, g, 4, 2, drop_last=drop_last):
        (b,) = batches
        assert len(s) == 1 and sorted(Counter(g[b].tolist()).values()) == [2, 2]
    y = np.array([0, 1, 2])
    (b,) = list(SamplesPerClassSampler(y, 6, samples_per_class=2, drop_last=drop_last))
    assert sorted(Counter(y[b].tolist()).values()) == [2, 2, 2]
    assert GroupBalancedBatchSampler(torch.tensor([0.0, 1.0]), 2).groups == [0, 1]


@settings(max_examples=40, deadline=None)
@given(
    groups=st.lists(st.integers(-1, 3), min_size=1, max_size=60),
    world=st.integers(1, 3),
    extra=st.integers(0, 6),
    seed=st.integers(0, 5),
)
def test_property_group_balanced(groups, world, extra, seed):
    g = np.array(groups)
    k = len(set(groups))
    bs = k + extra
    runs = run_ranks("group", None, g, bs, world, seed=seed, drop_last=False)
    assert len({len(s) for s, _ in runs}) == 1
    owned = []
    for s, batches in runs:
        assert len(batches) == len(s)
        for b in batches:
            c = Counter(g[b].tolist())
            assert len(b) == bs and len(c) == k and max(c.values()) - min(c.values()) <= 1
        owned.append(set(i for b in batches for i in b))
    assert set().union(*owned) == set(range(len(g)))
    sizes = Counter(groups)
    for r in range(world):
        for q in range(r + 1, world):
            shared = owned[r] & owned[q]
            # Only rows of groups smaller than the number of replicas may be on two ranks.
            assert all(sizes[int(g[i])] < world for i in shared)


@settings(max_examples=30, deadline=None)
@given(
    labels=st.lists(st.integers(0, 5), min_size=2, max_size=60),
    n=st.integers(1, 3),
    world=st.integers(1, 2),
    drop_last=st.booleans(),
)
def test_property_spc(labels, n, world, drop_last):
    y = np.array(labels)
    c = len(set(labels))
    k = min(c, 2)
    runs = run_ranks("spc", y, None, k * n, world, samples_per_class=n, drop_last=drop_last)
    assert len({len(s) for s, _ in runs}) == 1
    for s, batches in runs:
        assert len(batches) == len(s)
        for b in batches:
            cnt = Counter(y[b].tolist())
            assert len(cnt) == k and set(cnt.values()) == {n}
    if not drop_last:
        assert set(i for _, bb in runs for b in bb for i in b) == set(range(len(y)))
