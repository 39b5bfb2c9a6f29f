"""Random prediction data for the metric tests."""

from __future__ import annotations

import pytest
import torch


def _make_data(n: int, num_classes: int, num_groups: int, seed: int = 0, unknown: float = 0.1,
               absent_groups: tuple[int, ...] = (), scores: bool = False, skew: float = 0.6):
    """``(preds, target, groups)`` with group-dependent accuracy so the gaps are not all zero.

    ``absent_groups`` never occur; a fraction ``unknown`` of the rows has group -1.
    """
    gen = torch.Generator().manual_seed(seed)
    present = [a for a in range(num_groups) if a not in absent_groups]
    groups = torch.tensor(present)[torch.randint(len(present), (n,), generator=gen)]
    groups[torch.rand(n, generator=gen) < unknown] = -1
    target = torch.randint(num_classes, (n,), generator=gen)
    # each group gets its own chance of a correct prediction
    p_correct = skew * (1 + groups.clamp_min(0).float()) / (num_groups + 1) + 0.2
    correct = torch.rand(n, generator=gen) < p_correct
    preds = torch.where(correct, target, torch.randint(num_classes, (n,), generator=gen))
    if scores:
        logits = torch.randn(n, num_classes, generator=gen)
        logits[torch.arange(n), preds] += 4.0
        return logits, target, groups
    return preds, target, groups


@pytest.fixture()
def make_data():
    return _make_data
