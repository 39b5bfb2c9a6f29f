"""Console summaries of the data: the (class × group) count table printed when a DataModule is set up."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from rich.console import Console
from rich.table import Table


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
