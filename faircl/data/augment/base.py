"""Randomness shared by the augmenters: per-augmenter seeded generators (worker-aware) and :class:`TwoViews`."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from torch.utils.data import get_worker_info

__all__ = ["TwoViews"]


class _Seeded:
    """Gives each call a ``random.Random``: a persistent one per (seed, worker), or one drawn from torch."""

    def __init__(self, seed: int | None) -> None:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise ValueError(f"seed must be an int or None, got {seed!r}")
        self.seed = None if seed is None else int(seed)
        self._rng: random.Random | None = None
        self._worker: tuple[int, int] | None = None

    def _random(self) -> random.Random:
        if self.seed is None:
            return random.Random(int(torch.randint(0, 2**62, (1,)).item()))
        info = get_worker_info()
        worker = (info.id, info.seed) if info is not None else None
        if self._rng is None or worker != self._worker:
            key = f"{self.seed}" if worker is None else f"{self.seed}/{worker[1]}"
            self._rng = random.Random(key)
            self._worker = worker
        return self._rng

    def _torch_generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self._random().getrandbits(63))


@contextlib.contextmanager
def _global_rngs(seed: int) -> Iterator[None]:
    """Seed python, numpy and torch global generators inside the block and restore them after it."""
    py, np_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            random.seed(seed)
            np.random.seed(seed % 2**32)
            torch.manual_seed(seed)
            yield
    finally:
        random.setstate(py)
        np.random.set_state(np_state)


class TwoViews:
    """Two independent draws of a random transform: ``x -> (t(x), t(x))``.

    Args:
        transform: a one-view random transform.
    """

    def __init__(self, transform: Callable[[Any], Any]) -> None:
        if not callable(transform):
            raise TypeError(f"TwoViews needs a callable transform, got {type(transform).__name__}")
        self.transform = transform

    def __call__(self, x: Any) -> tuple[Any, Any]:
        return self.transform(x), self.transform(x)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.transform!r})"
