"""Console summaries of the data: the (class × group) count table printed when a DataModule is set up, and
:func:`say`, the one way a datamodule reports something (once per job, on rank 0)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.distributed as dist
from lightning.pytorch.utilities import rank_zero_only
from rich.console import Console
from rich.table import Table

__all__ = ["is_rank_zero", "print_count_table", "say"]


def is_rank_zero() -> bool:
    """Whether this process has global rank 0 (the process group's rank, else Lightning's rank from the
    environment; a single process is rank 0)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank() == 0
    return int(getattr(rank_zero_only, "rank", 0) or 0) == 0


def say(message: str) -> None:
    """Print ``message`` once per job: on the process of global rank 0 only (not once per DDP process)."""
    if is_rank_zero():
        print(message, flush=True)


def print_count_table(counts: torch.Tensor, class_names: Sequence[str], group_names: Sequence[str],
                      title: str = "class x group counts") -> None:
    """Print a (class × group) count table; the last column of ``counts`` is the unknown-attribute count."""
    table = Table(title=title)
    table.add_column("class")
    for g in group_names:
        table.add_column(str(g), justify="right")
    table.add_column("unknown", justify="right")
    names = list(class_names) if len(class_names) == counts.shape[0] else [str(c) for c in range(counts.shape[0])]
    for c, row in enumerate(counts.tolist()):
        table.add_row(names[c], *[str(v) for v in row])
    Console(width=120).print(table)
