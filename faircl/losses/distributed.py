"""Contrast the local anchors against the rows of every process (``gather_distributed=True``).

Convention (the one DDP needs): rank ``r`` holds rows ``x_r``; the loss ``L`` is defined on the concatenated
batch ``[x_0; x_1; …]``; rank ``r`` only computes the terms of its own anchors (against all rows) and returns a
tensor whose **value is the global loss** ``L`` on every rank and whose **gradient is** ``W · ∂L_r/∂·`` (``W``
the world size, ``L_r`` the share of ``r``'s anchors). The embeddings of the other ranks arrive through
:func:`faircl.utils.all_gather_with_grad`, whose backward sums the gradients of every rank for a row and hands them
to the row's owner, so each rank's rows receive ``W · ∂L/∂x_r``; DDP's mean over ranks then gives exactly the
parameter gradient of the single-process loss on the concatenated batch. Counts used by reductions (valid
anchors, cell sizes, class sizes) are computed from the gathered ids, hence global.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from faircl.utils import all_gather_with_grad

__all__ = ["Rows", "all_gather_ids", "finish_reduction", "gather_ids", "gather_rows", "world_size"]


def world_size() -> int:
    """Number of processes of the default group (1 without an initialised process group)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return 1


@dataclass
class Rows:
    """The anchors of this process and the rows they are contrasted with.

    Attributes:
        zq: local rows ``[M, d]`` (the anchors).
        zk: all rows ``[N, d]`` in rank order (``zq`` itself without gathering).
        index: ``[M]`` position of each local row in ``zk``.
        same: True when ``zk is zq`` (no gathering).
        total: ``N``, the number of rows over all processes.
        sizes: rows per rank.
        example_offset: index of this rank's first example in the global example order (rows / views).
        world: number of processes taking part.
    """

    zq: torch.Tensor
    zk: torch.Tensor
    index: torch.Tensor
    same: bool
    total: int
    sizes: list[int]
    example_offset: int
    world: int


def _gather_sizes(m: int, device: torch.device) -> list[int]:
    world = dist.get_world_size()
    sizes = [torch.zeros(1, dtype=torch.long, device=device) for _ in range(world)]
    dist.all_gather(sizes, torch.tensor([m], dtype=torch.long, device=device))
    return [int(s) for s in sizes]


def all_gather_ids(t: torch.Tensor, sizes: list[int] | None = None) -> torch.Tensor:
    """Concatenate a non-differentiable tensor ``[B_r, ...]`` of every rank in rank order (sizes may differ)."""
    if world_size() == 1:
        return t
    if sizes is None:
        sizes = _gather_sizes(t.shape[0], t.device)
    biggest = max(sizes)
    padded = t.new_zeros((biggest, *t.shape[1:]))
    padded[: t.shape[0]] = t
    parts = [torch.empty_like(padded) for _ in sizes]
    dist.all_gather(parts, padded.contiguous())
    return torch.cat([p[:s] for p, s in zip(parts, sizes)], dim=0)


def gather_rows(z: torch.Tensor, gather_distributed: bool, views: int = 1) -> Rows:
    """Local rows and, with ``gather_distributed`` under a process group of several ranks, every rank's rows.

    Args:
        z: local rows ``[M, d]`` (``views`` stacked views of ``M / views`` examples).
        gather_distributed: gather (no-op without an initialised multi-process group).
        views: views per example, to locate this rank's examples in the global example order.
    """
    m = z.shape[0]
    local = torch.arange(m, device=z.device)
    world = world_size() if gather_distributed else 1
    if world == 1:
        return Rows(z, z, local, True, m, [m], 0, 1)
    sizes = _gather_sizes(m, z.device)
    offset = sum(sizes[: dist.get_rank()])
    zk = all_gather_with_grad(z)
    return Rows(z, zk, offset + local, False, sum(sizes), sizes, offset // views, world)


def gather_ids(t: torch.Tensor, rows: Rows, per_row: bool = True) -> torch.Tensor:
    """Gather ids aligned with ``rows.zk`` (``per_row``) or of any length (``per_row=False``)."""
    if rows.same:
        return t
    return all_gather_ids(t, rows.sizes if per_row else None)


def finish_reduction(share: torch.Tensor, rows: Rows) -> torch.Tensor:
    """Value: the sum of ``share`` over ranks (the global loss); gradient: ``world · ∂share`` (see module doc)."""
    if rows.world == 1:
        return share
    total = share.detach().clone()
    dist.all_reduce(total)
    scaled = share * rows.world
    return total + (scaled - scaled.detach())
