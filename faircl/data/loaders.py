"""Loaders already sharded per rank, presented to Lightning as ``DistributedSampler`` s (so a plain
``L.Trainer(strategy="ddp")`` leaves them as they are)."""

from __future__ import annotations

from typing import Any

from torch.utils.data import DataLoader, DistributedSampler

__all__ = ["RankAwareLoader", "ShardSampler"]


# Lightning (``use_distributed_sampler=True``, the Trainer default) re-wraps every loader under DDP unless
# ``loader.sampler`` is a ``DistributedSampler``. The loaders below are already sharded per rank, so their samplers
# are ``DistributedSampler`` subclasses and a plain ``L.Trainer(strategy="ddp")`` leaves them as they are.
class ShardSampler(DistributedSampler):
    """Contiguous-stride shard without padding: rank r gets rows r, r+W, r+2W, ... (exact evaluation)."""

    def __init__(self, n: int, world: int, rank: int) -> None:  # no super().__init__: nothing to shuffle or pad
        self.num_replicas, self.rank, self.epoch, self.seed = world, rank, 0, 0
        self.shuffle = self.drop_last = False
        self.indices = list(range(rank, n, world))
        self.num_samples = self.total_size = len(self.indices)

    def __iter__(self):
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)


class BatchShardView(DistributedSampler):
    """The rows a rank-aware batch sampler draws, presented as this rank's ``DistributedSampler`` shard."""

    def __init__(self, batch_sampler: Any) -> None:  # no super().__init__: the batch sampler shards and shuffles
        self.batch_sampler = batch_sampler
        self.num_replicas, self.rank = batch_sampler.num_replicas, batch_sampler.rank
        self.epoch, self.shuffle, self.seed, self.drop_last = 0, True, batch_sampler.seed, batch_sampler.drop_last

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)
        self.batch_sampler.set_epoch(epoch)

    def __iter__(self):
        return (i for batch in self.batch_sampler for i in batch)

    def __len__(self) -> int:
        return len(self.batch_sampler) * self.batch_sampler.batch_size


class RankAwareLoader(DataLoader):
    """A DataLoader over a rank-aware batch sampler whose ``sampler`` is a :class:`BatchShardView`, so that
    Lightning neither re-shards it nor fails to re-wrap it; iteration uses the batch sampler as usual."""

    @property
    def sampler(self) -> Any:
        batch_sampler = self.__dict__.get("batch_sampler")
        if batch_sampler is None or not hasattr(batch_sampler, "num_replicas"):
            return self.__dict__.get("_default_sampler")
        if self.__dict__.get("_shard_view") is None:
            self.__dict__["_shard_view"] = BatchShardView(batch_sampler)
        return self.__dict__["_shard_view"]

    @sampler.setter
    def sampler(self, value: Any) -> None:  # DataLoader.__init__ stores its default sampler here
        self.__dict__["_default_sampler"] = value
