"""The tiled masked log-sum-exp behind :mod:`faircl.losses.streaming` (a custom autograd function).

``LSE_i = log Σ_{k≠self_i, block_k = block_i} w_ik exp(zq_i · zk_k / τ)`` is computed over tiles of anchor rows
against key columns; backward recomputes each tile's softmax instead of storing it (as memory-efficient attention
does), so only the embeddings and the ``[M]`` result are kept between forward and backward.
"""

from __future__ import annotations

from typing import Any, Iterator

import torch

from ._common import full_precision

__all__ = ["MIN_TILE_ROWS", "TILE_ELEMENTS", "TILE_ELEMENTS_ACCELERATOR", "full_precision", "masked_logsumexp",
           "tile_elements"]

#: Default tile size in elements (rows × keys) of the streamed similarity matrix: 1 Mi float32 = 4 MiB, which
#: measured fastest on CPU (cache-resident tiles); tiles keep at least ``MIN_TILE_ROWS`` rows so that the
#: matrix products stay efficient for very large batches.
TILE_ELEMENTS = 1 << 20
#: The default on an accelerator: 16 Mi float32 = 64 MiB. On an H100 CPU-sized tiles left the streamed SupCon
#: launch-bound, about 20× the dense log-sum-exp's time at B = 4,096 to 16,384; 1,024-row tiles at B = 16,384 took
#: 25 ms against 213 ms (``benchmarks/performance/results/gpu.md``). Memory stays linear in B.
TILE_ELEMENTS_ACCELERATOR = 1 << 24
MIN_TILE_ROWS = 64


def tile_elements(device: torch.device) -> int:
    """The default tile size on ``device``: ``TILE_ELEMENTS`` on the CPU, ``TILE_ELEMENTS_ACCELERATOR`` elsewhere."""
    return TILE_ELEMENTS if device.type == "cpu" else TILE_ELEMENTS_ACCELERATOR

_NEG_INF = float("-inf")




class _Plan:
    """What a tile needs besides the embeddings: key ranges, self columns, weight tables (all small)."""

    def __init__(
        self,
        self_col: torch.Tensor,
        lo: torch.Tensor | None,
        hi: torch.Tensor | None,
        table: torch.Tensor | None,
        q_row: torch.Tensor | None,
        k_col: torch.Tensor | None,
        rows_per_tile: int,
    ) -> None:
        self.self_col, self.lo, self.hi = self_col, lo, hi
        self.table, self.q_row, self.k_col = table, q_row, k_col
        self.rows_per_tile = rows_per_tile
        self._block_tiles = None if lo is None else self._plan_block_tiles()

    def _plan_block_tiles(self) -> list[tuple[int, int, int, int]]:
        """Tiles over block-sorted anchors: one block's rows (in chunks) against that block's keys only.

        Consecutive small blocks share a tile while the tile's area stays within twice their useful area plus
        a small constant, so tiny blocks do not cost one tile each and big ones compute no off-block entries.
        """
        lo, hi, step = self.lo.tolist(), self.hi.tolist(), self.rows_per_tile
        m = len(lo)
        starts = [0] + (torch.nonzero(self.lo[1:] != self.lo[:-1]).flatten() + 1).tolist() + [m]
        tiles: list[tuple[int, int, int, int]] = []
        cur: list[int] | None = None  # [r0, r1, c0, c1, useful area]
        for a, e in zip(starts[:-1], starts[1:]):
            c0, c1 = lo[a], hi[a]
            for r0 in range(a, e, step):
                r1 = min(e, r0 + step)
                if cur is not None:
                    rows, useful = r1 - cur[0], cur[4] + (r1 - r0) * (c1 - c0)
                    if rows <= step and rows * (c1 - cur[2]) <= 2 * useful + 4096:
                        cur[1], cur[3], cur[4] = r1, c1, useful
                        continue
                    tiles.append((cur[0], cur[1], cur[2], cur[3]))
                cur = [r0, r1, c0, c1, (r1 - r0) * (c1 - c0)]
        if cur is not None:
            tiles.append((cur[0], cur[1], cur[2], cur[3]))
        return tiles

    def tiles(self, m: int, n: int) -> Iterator[tuple[int, int, int, int]]:
        """``(r0, r1, c0, c1)``: anchor rows ``r0:r1`` against key columns ``c0:c1``."""
        if self._block_tiles is not None:
            yield from self._block_tiles
            return
        step = self.rows_per_tile
        for r0 in range(0, m, step):
            yield r0, min(m, r0 + step), 0, n

    def logits(self, zq_scaled: torch.Tensor, zk: torch.Tensor, r0: int, r1: int, c0: int, c1: int) -> torch.Tensor:
        """Masked (and weighted) logits of one tile, ``-inf`` outside each anchor's denominator."""
        s = zq_scaled[r0:r1] @ zk[c0:c1].T
        rows = r1 - r0
        if self.lo is not None and not (bool(self.lo[r0] == self.lo[r1 - 1]) and bool(self.hi[r0] == self.hi[r1 - 1])):
            cols = torch.arange(c0, c1, device=s.device)
            outside = (cols[None, :] < self.lo[r0:r1, None]) | (cols[None, :] >= self.hi[r0:r1, None])
            s.masked_fill_(outside, _NEG_INF)
        if self.table is not None:
            w = self.table.index_select(0, self.q_row[r0:r1]).index_select(1, self.k_col[c0:c1])
            s.add_(w.to(s.dtype))
        own = self.self_col[r0:r1] - c0
        inside = (own >= 0) & (own < c1 - c0)
        s[torch.arange(rows, device=s.device)[inside], own[inside]] = _NEG_INF
        return s


class _MaskedLSE(torch.autograd.Function):
    """``LSE_i`` over tiles; backward recomputes each tile's softmax instead of storing it."""

    @staticmethod
    def forward(ctx: Any, zq: torch.Tensor, zk: torch.Tensor, scale: float, plan: _Plan) -> torch.Tensor:
        with full_precision(zq.device.type):
            m, n = zq.shape[0], zk.shape[0]
            zq_scaled = zq * scale
            lse = zq.new_full((m,), _NEG_INF)
            for r0, r1, c0, c1 in plan.tiles(m, n):
                if c1 > c0:
                    lse[r0:r1] = torch.logsumexp(plan.logits(zq_scaled, zk, r0, r1, c0, c1), dim=1)
            # An empty denominator (a row alone in its block): LSE is a constant 0 with no gradient; such an
            # anchor has no positive, so its term is 0 anyway.
            lse = torch.where(lse == _NEG_INF, 0.0, lse)
        ctx.save_for_backward(zq, zk, lse)
        ctx.scale, ctx.plan = scale, plan
        return lse

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None, None]:
        zq, zk, lse = ctx.saved_tensors
        scale, plan = ctx.scale, ctx.plan
        need_q, need_k = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        with full_precision(zq.device.type):
            m, n = zq.shape[0], zk.shape[0]
            grad = grad.to(zq.dtype)
            zq_scaled = zq * scale
            gq = torch.zeros_like(zq) if need_q else None
            gk = torch.zeros_like(zk) if need_k else None
            for r0, r1, c0, c1 in plan.tiles(m, n):
                if c1 <= c0:
                    continue
                g = grad[r0:r1]
                if not bool(g.any()):
                    continue
                p = plan.logits(zq_scaled, zk, r0, r1, c0, c1)
                # dLSE_i/ds_ik = softmax_ik; ds_ik/dz_i = z_k / τ, ds_ik/dz_k = z_i / τ.
                p.sub_(lse[r0:r1, None]).exp_().mul_((g * scale)[:, None])
                if gq is not None:
                    gq[r0:r1].addmm_(p, zk[c0:c1])
                if gk is not None:
                    gk[c0:c1].addmm_(p.T, zq[r0:r1])
        return gq, gk, None, None


def masked_logsumexp(
    zq: torch.Tensor,
    zk: torch.Tensor,
    temperature: float,
    *,
    self_index: torch.Tensor | None = None,
    q_block: torch.Tensor | None = None,
    k_block: torch.Tensor | None = None,
    log_weights: torch.Tensor | None = None,
    q_weight_row: torch.Tensor | None = None,
    k_weight_col: torch.Tensor | None = None,
    block_size: int | None = None,
) -> torch.Tensor:
    """``LSE_i = log Σ_{k≠self_i, block_k = block_i} w_ik exp(zq_i · zk_k / τ)`` in ``O(M·(d + block))`` memory.

    Args:
        zq: anchors ``[M, d]`` (float32/float64; no autocast is applied inside).
        zk: keys ``[N, d]``; every anchor is one of the keys.
        temperature: τ > 0.
        self_index: ``[M]`` long, the key row of each anchor (excluded from its own sum); ``None`` means the
            anchors are the keys in order (``zq is zk``).
        q_block, k_block: optional ``[M]`` / ``[N]`` integer ids; an anchor only sums over keys of its block.
        log_weights: optional ``[R, E]`` table of additive log-weights (``-inf`` drops a term); anchor ``i`` and
            key ``k`` use ``log_weights[q_weight_row[i], k_weight_col[k]]``. Not differentiated.
        block_size: anchor rows per tile (default: ``max(MIN_TILE_ROWS, tile_elements(device) // N)``).

    Returns:
        ``[M]``; 0 (with zero gradient) for an anchor whose sum is empty.
    """
    m, n = zq.shape[0], zk.shape[0]
    device = zq.device
    self_col = torch.arange(m, device=device) if self_index is None else self_index.long()
    if block_size is not None:
        rows_per_tile = int(block_size)
    else:
        rows_per_tile = max(MIN_TILE_ROWS, tile_elements(device) // max(n, 1))
    if rows_per_tile < 1:
        raise ValueError(f"`block_size` must be >= 1, got {block_size}")
    if log_weights is not None:
        log_weights = log_weights.detach()
    if q_block is None:
        plan = _Plan(self_col, None, None, log_weights, q_weight_row, k_weight_col, rows_per_tile)
        return _MaskedLSE.apply(zq, zk, 1.0 / temperature, plan)

    # Sort keys and anchors by block: each anchor's denominator is the contiguous key range of its block.
    k_order = torch.argsort(k_block, stable=True)
    k_sorted = k_block[k_order]
    q_order = torch.argsort(q_block, stable=True)
    q_sorted = q_block[q_order]
    lo = torch.searchsorted(k_sorted, q_sorted, right=False)
    hi = torch.searchsorted(k_sorted, q_sorted, right=True)
    k_rank = torch.empty_like(k_order)
    k_rank[k_order] = torch.arange(n, device=device)
    plan = _Plan(
        k_rank[self_col[q_order]],
        lo,
        hi,
        log_weights,
        None if q_weight_row is None else q_weight_row[q_order],
        None if k_weight_col is None else k_weight_col[k_order],
        rows_per_tile,
    )
    lse_sorted = _MaskedLSE.apply(zq[q_order], zk[k_order], 1.0 / temperature, plan)
    q_rank = torch.empty_like(q_order)
    q_rank[q_order] = torch.arange(m, device=device)
    return lse_sorted[q_rank]
