"""Linear-memory softmax-contrastive losses: the masked log-sum-exp computed block by block.

Every softmax-contrastive loss of faircl (SupCon, FCL, CS-InfoNCE, NT-Xent) is, per anchor ``i``,
``|P(i)| · LSE_i − Σ_{p∈P(i)} s_ip`` with ``s = z zᵀ / τ`` and the masked, optionally weighted log-sum-exp

    ``LSE_i = log Σ_{k ∈ Q(i)} w_ik exp(s_ik)``,   ``Q(i) = {k ≠ i : block_k = block_i}``.

The positive part is a sum of dot products, ``z_i · (Σ_{p∈P(i)} z_p)``, computed with per-key sums of rows
(``index_add``): linear memory. :func:`masked_logsumexp` computes ``LSE`` over row tiles of ``rows × keys`` in
forward, keeping only the embeddings and the ``[M]`` result, and recomputes the similarities tile by tile in
backward (the scheme of memory-efficient attention, Rabe & Staats 2021; Dao et al. 2022), so peak memory grows as
``O(B · (d + block_size))`` instead of ``O(B²)``. Masks are defined by small id vectors (blocks, self index,
weight-table indices), never by a ``[B, B]`` tensor. Rows are sorted by block first, so a tile only visits the
key range of its own blocks: block-diagonal denominators (FCL within class, CS-InfoNCE within cell) cost
``O(Σ_c n_c²)`` instead of ``O(B²)``. The kernel lives in :mod:`faircl.losses._lse_tiles`.

The loss functions below take validated arguments; the public losses in :mod:`faircl.losses` dispatch to them
for large batches or when gathering across processes (:mod:`faircl.losses.distributed`). Each returns the same
value and gradient as the dense formulas up to float rounding.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._lse_tiles import _MaskedLSE  # noqa: F401  (re-exported for tests and benchmarks)
from ._lse_tiles import (MIN_TILE_ROWS, TILE_ELEMENTS, TILE_ELEMENTS_ACCELERATOR, full_precision, masked_logsumexp,
                         tile_elements)
from .distributed import Rows, finish_reduction, gather_ids, gather_rows

__all__ = [
    "DENSE_MAX_ROWS",
    "MIN_TILE_ROWS",
    "TILE_ELEMENTS",
    "TILE_ELEMENTS_ACCELERATOR",
    "cs_infonce_streaming",
    "fcl_streaming",
    "masked_logsumexp",
    "nt_xent_streaming",
    "supcon_streaming",
    "tile_elements",
    "use_streaming",
]

#: Up to this many rows the public losses keep their dense ``[B, B]`` path (measured as fast or faster there;
#: the streamed path was faster from B = 2,048 on, see benchmarks/performance/results/losses.md).
DENSE_MAX_ROWS = 1024


def use_streaming(rows: int, gather_distributed: bool, block_size: int | None) -> bool:
    """Whether a loss over ``rows`` rows takes the streamed path (validates ``block_size``).

    Streamed when gathering across processes, when ``block_size`` is given, or above ``DENSE_MAX_ROWS`` rows.
    """
    if block_size is not None:
        if isinstance(block_size, bool) or not isinstance(block_size, int):
            raise TypeError(f"block_size must be an int or None, got {type(block_size).__name__}")
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
    return bool(gather_distributed) or block_size is not None or rows > DENSE_MAX_ROWS


def _as_float(z: torch.Tensor) -> torch.Tensor:
    return z.to(torch.promote_types(z.dtype, torch.float32))


def _dense_ids(*keys: torch.Tensor) -> torch.Tensor:
    """Dense ids ``0..K-1`` of the rows of several integer key vectors (equal rows, equal id)."""
    code = torch.unique(keys[0], return_inverse=True)[1]
    for key in keys[1:]:
        ids = torch.unique(key, return_inverse=True)[1]
        code = torch.unique(code * (int(ids.max()) + 1) + ids, return_inverse=True)[1]
    return code


# ------------------------------------------------------------------------------------------------ the losses


def _label_positive_terms(
    rows: Rows,
    key_k: torch.Tensor,
    temperature: float,
    block_k: torch.Tensor | None,
    block_size: int | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """SupCon-style ``Σ_{p∈P(i)} −log p_ip`` for the local anchors; positives share a key ``≥ 0`` (and block).

    Returns ``(terms [M], num_pos of the local anchors [M], num_pos of every row [N])``.
    """
    zq, zk, idx = rows.zq, rows.zk, rows.index
    block_q = None if block_k is None else block_k[idx]
    lse = masked_logsumexp(
        zq,
        zk,
        temperature,
        self_index=None if rows.same else idx,
        q_block=block_q,
        k_block=block_k,
        block_size=block_size,
    )
    ok_k = key_k >= 0
    ids_k = _dense_ids(key_k) if block_k is None else _dense_ids(key_k, block_k)
    slots = int(ids_k.max()) + 1 if ids_k.numel() else 0
    ids_k = torch.where(ok_k, ids_k, slots)  # unknown keys go to a discarded extra slot
    sums = zk.new_zeros(slots + 1, zk.shape[1]).index_add(0, ids_k, zk)
    counts = torch.bincount(ids_k, minlength=slots + 1)
    num_pos_k = torch.where(ok_k, counts[ids_k] - 1, 0)
    ids_q, ok_q, num_pos = ids_k[idx], ok_k[idx], num_pos_k[idx]
    # index_select, not sums[ids_q]: a deterministic backward for repeated rows (see losses/_common.py)
    pos = (zq * (sums.index_select(0, ids_q) - zq)).sum(dim=1) * (1.0 / temperature)
    terms = num_pos.to(lse.dtype) * lse - torch.where(ok_q, pos, 0.0)
    return torch.where(num_pos > 0, terms, 0.0), num_pos, num_pos_k


def _supcon_coefficients(num_pos_k: torch.Tensor, reduction: str, dtype: torch.dtype) -> torch.Tensor:
    """Weights ``c_i`` of the per-anchor ``Σ_p −log p_ip`` so that the loss is ``Σ_i c_i t_i`` over all rows."""
    npf = num_pos_k.to(dtype)
    if reduction == "confair":
        return 1.0 / ((1.0 + npf) * num_pos_k.shape[0])
    per_anchor = 1.0 / npf.clamp(min=1)
    if reduction == "sum":
        return per_anchor
    return per_anchor / (num_pos_k > 0).sum().clamp(min=1).to(dtype)


def supcon_streaming(
    z: torch.Tensor,
    labels: torch.Tensor,
    temperature: float,
    normalize: bool,
    reduction: str,
    gather_distributed: bool = False,
    block_size: int | None = None,
) -> torch.Tensor:
    """:func:`faircl.losses.supcon_loss` in linear memory, optionally over the rows of every process."""
    with full_precision(z.device.type):
        rows = gather_rows(_prepare(z, normalize), gather_distributed)
        labels_k = gather_ids(labels, rows)
        terms, num_pos, num_pos_k = _label_positive_terms(rows, labels_k, temperature, None, block_size)
        if reduction == "none":
            return terms / num_pos.clamp(min=1).to(terms.dtype)
        coef = _supcon_coefficients(num_pos_k, reduction, terms.dtype)[rows.index]
        return finish_reduction((coef * terms).sum(), rows)


def fcl_streaming(
    z: torch.Tensor,
    labels: torch.Tensor,
    groups: torch.Tensor,
    temperature: float,
    conditioning: str,
    normalize: bool,
    reduction: str,
    gather_distributed: bool = False,
    block_size: int | None = None,
) -> torch.Tensor:
    """:func:`faircl.losses.fcl_loss` in linear memory, optionally over the rows of every process."""
    with full_precision(z.device.type):
        rows = gather_rows(_prepare(z, normalize), gather_distributed)
        groups_k = gather_ids(groups, rows)
        if conditioning == "none":
            terms, num_pos, num_pos_k = _label_positive_terms(rows, groups_k, temperature, None, block_size)
            if reduction == "none":
                return terms / num_pos.clamp(min=1).to(terms.dtype)
            coef = _supcon_coefficients(num_pos_k, reduction, terms.dtype)[rows.index]
            return finish_reduction((coef * terms).sum(), rows)
        cls_k = _dense_ids(gather_ids(labels, rows))
        terms, num_pos, num_pos_k = _label_positive_terms(rows, groups_k, temperature, cls_k, block_size)
        dtype = terms.dtype
        if reduction in ("none", "sum"):
            per_anchor = terms / num_pos.clamp(min=1).to(dtype)
            return per_anchor if reduction == "none" else finish_reduction(per_anchor.sum(), rows)
        num_classes = int(cls_k.max()) + 1
        if reduction == "confair":
            class_rows = torch.bincount(cls_k, minlength=num_classes).to(dtype)
            coef_k = 1.0 / ((1.0 + num_pos_k.to(dtype)) * class_rows[cls_k] * num_classes)
        else:
            valid = torch.bincount(cls_k, weights=(num_pos_k > 0).to(dtype), minlength=num_classes)
            valid_classes = (valid > 0).sum().clamp(min=1).to(dtype)
            coef_k = 1.0 / (num_pos_k.to(dtype).clamp(min=1) * valid.clamp(min=1)[cls_k] * valid_classes)
        return finish_reduction((coef_k[rows.index] * terms).sum(), rows)


def cs_infonce_streaming(
    z1: torch.Tensor,
    z2: torch.Tensor,
    labels: torch.Tensor,
    groups: torch.Tensor,
    temperature: float,
    normalize: bool,
    reduction: str,
    gather_distributed: bool = False,
    block_size: int | None = None,
) -> torch.Tensor:
    """:func:`faircl.losses.cs_infonce_loss` in linear memory, optionally over the rows of every process."""
    n = z1.shape[0]
    with full_precision(z1.device.type):
        rows = gather_rows(_prepare(torch.cat([z1, z2], dim=0), normalize), gather_distributed, views=2)
        example = rows.example_offset + torch.arange(n, device=z1.device)
        known = groups >= 0
        # Unknown attribute: a private cell per example (its two views only), so it contributes exactly 0.
        cell_label = torch.where(known, labels.long(), -1 - example)
        cell_group = torch.where(known, groups.long(), -1)
        cell_label_k = gather_ids(torch.cat([cell_label, cell_label]), rows)
        cell_k = _dense_ids(cell_label_k, gather_ids(torch.cat([cell_group, cell_group]), rows))
        cell_q = cell_k[rows.index]
        lse = masked_logsumexp(
            rows.zq,
            rows.zk,
            temperature,
            self_index=None if rows.same else rows.index,
            q_block=cell_q,
            k_block=cell_k,
            block_size=block_size,
        )
        partner = torch.cat([torch.arange(n, 2 * n), torch.arange(n)]).to(z1.device)
        terms = lse - (rows.zq * rows.zq[partner]).sum(dim=1) * (1.0 / temperature)
        cell_size_k = torch.bincount(cell_k)[cell_k]
        cell_size = cell_size_k[rows.index]
        terms = torch.where(cell_size > 2, terms, 0.0)  # a pair alone in its cell has ℓ_i = 1 exactly
        if reduction == "none":
            return terms
        weighted = (terms / (cell_size - 1).to(terms.dtype)).sum()
        if reduction == "mean":
            weighted = weighted / rows.total
        return finish_reduction(weighted, rows)


def nt_xent_streaming(
    z1: torch.Tensor,
    z2: torch.Tensor,
    temperature: float,
    negative_weights: torch.Tensor | None,
    extra_positives: torch.Tensor | None,
    normalize: bool,
    reduction: str,
    gather_distributed: bool = False,
    block_size: int | None = None,
) -> torch.Tensor:
    """:func:`faircl.losses.nt_xent_loss` in linear memory, optionally over the rows of every process.

    ``negative_weights`` are example-level: ``[N_local, N_global]`` (or ``[N_global, N_global]``, of which the
    local rows are used) with the global examples in rank order; ``extra_positives`` index the local examples.
    """
    n = z1.shape[0]
    device = z1.device
    with full_precision(device.type):
        rows = gather_rows(_prepare(torch.cat([z1, z2], dim=0), normalize), gather_distributed, views=2)
        local = torch.arange(n, device=device)
        example_q = rows.example_offset + torch.cat([local, local])  # global example of each local row
        example_k = gather_ids(example_q, rows)
        num_examples = rows.total // 2
        zq, zk = rows.zq, rows.zk
        partner = torch.cat([local + n, local])

        # Symmetric set of example pairs {e, m} from the extra positives (self pairs dropped).
        if extra_positives is not None:
            extra = extra_positives.long()
            has = extra >= 0
            src = rows.example_offset + local[has]
            dst = rows.example_offset + extra[has]
            keep = src != dst
            pairs = torch.stack([src[keep], dst[keep]], dim=1)
            pairs = gather_ids(pairs, rows, per_row=False)
            pairs = torch.cat([pairs, pairs.flip(1)], dim=0)
            pairs = torch.unique(pairs, dim=0)
        else:
            pairs = torch.empty(0, 2, dtype=torch.long, device=device)

        table = q_row = k_col = None
        if negative_weights is not None:
            w = negative_weights.detach()
            w = w.to(torch.promote_types(w.dtype, torch.float32)).to(zq.dtype)
            if w.dim() != 2 or w.shape[1] != num_examples or w.shape[0] not in (n, num_examples):
                expected = f"[{n}, {n}]" if rows.same else f"[{n}, {num_examples}] or [{num_examples}, {num_examples}]"
                raise ValueError(
                    f"`negative_weights` must have shape {expected} (example-level weights), got {tuple(w.shape)}"
                )
            if w.shape[0] != n:
                w = w[rows.example_offset : rows.example_offset + n]
            if bool((w < 0).any()) or not bool(w.isfinite().all()):
                raise ValueError("`negative_weights` must be finite and non-negative")
            # Positives (own example, extra-positive examples) are not negatives; mean weight 1 over negatives.
            negative = torch.ones_like(w, dtype=torch.bool)
            negative[local, rows.example_offset + local] = False
            mine = (pairs[:, 0] >= rows.example_offset) & (pairs[:, 0] < rows.example_offset + n)
            negative[pairs[mine, 0] - rows.example_offset, pairs[mine, 1]] = False
            w = torch.where(negative, w, 0.0)
            total = w.sum(dim=1, keepdim=True)
            count = negative.sum(dim=1, keepdim=True).to(w.dtype)
            scale = torch.where(total > 0, count / torch.where(total > 0, total, 1.0), 0.0)
            table = torch.where(negative, torch.log(w * scale), 0.0)
            q_row = torch.cat([local, local])
            k_col = example_k
        lse = masked_logsumexp(
            zq,
            zk,
            temperature,
            self_index=None if rows.same else rows.index,
            log_weights=table,
            q_weight_row=q_row,
            k_weight_col=k_col,
            block_size=block_size,
        )

        # Positive logits: the other view, plus both views of every extra-positive example.
        view_sum = zk.new_zeros(num_examples, zk.shape[1]).index_add(0, example_k, zk)  # z1_e + z2_e
        degree = torch.bincount(pairs[:, 0], minlength=num_examples) if pairs.numel() else torch.zeros(
            num_examples, dtype=torch.long, device=device
        )
        if pairs.numel():
            extra_sum = zk.new_zeros(num_examples, zk.shape[1]).index_add(0, pairs[:, 0], view_sum.index_select(0, pairs[:, 1]))
            pos_vec = zq.index_select(0, partner) + extra_sum.index_select(0, example_q)
        else:
            pos_vec = zq[partner]
        num_pos = 1 + 2 * degree[example_q]
        terms = num_pos.to(lse.dtype) * lse - (zq * pos_vec).sum(dim=1) * (1.0 / temperature)
        per_anchor = terms / num_pos.to(terms.dtype)
        if reduction == "none":
            return per_anchor
        total = per_anchor.sum()
        if reduction == "mean":
            total = total / rows.total
        return finish_reduction(total, rows)


def _prepare(z: torch.Tensor, normalize: bool) -> torch.Tensor:
    zf = _as_float(z)
    return F.normalize(zf, dim=1) if normalize else zf
