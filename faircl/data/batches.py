"""Batches fetched in one call: the ``__getitems__`` result of faircl's datasets and the loaders' collate function.

Torch's DataLoader (with automatic batching) asks a map-style dataset for a whole batch through
``dataset.__getitems__(indices)`` when the dataset defines it, then passes the result to the collate function.
:class:`faircl.data.base.FairDataset` builds the batch dict there with one indexing call per stored tensor and wraps it
in :class:`FetchedRows`; :func:`collate_rows` hands that dict on untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch.utils.data import default_collate

__all__ = ["FetchedRows", "collate_rows"]


class FetchedRows(Sequence):
    """A batch fetched in one call, presented as the list of rows that torch's ``__getitems__`` protocol expects.

    :func:`collate_rows` (the collate function of every faircl loader) returns :attr:`batch` as it is; any other
    collate function (torch's ``default_collate`` in a user's own ``DataLoader``) sees a sequence of row dicts,
    sliced from the batch on access, and collates them back into the same batch.
    """

    def __init__(self, batch: dict[str, Any]) -> None:
        self.batch = batch
        self._n = len(batch["idx"])

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, j: int) -> dict[str, Any]:  # type: ignore[override]
        if not -self._n <= j < self._n:
            raise IndexError(j)
        return {k: v[j] for k, v in self.batch.items()}


def collate_rows(data: Any) -> Any:
    """Collate function of faircl's loaders: a batch fetched in one call (:class:`FetchedRows`) is returned as it is,
    anything else goes through torch's ``default_collate``."""
    return data.batch if isinstance(data, FetchedRows) else default_collate(data)
