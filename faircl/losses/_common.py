"""Shared machinery of the softmax-contrastive losses (SupCon, FCL, CS-InfoNCE, NT-Xent).

All of them are "−log softmax over a masked row of the similarity matrix, averaged over a set of positives".
:func:`contrastive_terms` computes, for every anchor ``i``, ``Σ_{p∈P(i)} −log p_ip`` and ``|P(i)|`` without any
Python loop and without materialising a positive mask: the sum of positive logits is
``z_i · (Σ_{p∈P(i)} z_p) / τ``, and ``Σ_{p∈P(i)} z_p`` is a per-key sum of embeddings minus ``z_i`` itself.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch
import torch.nn.functional as F

REDUCTIONS = ("mean", "sum", "none")


@contextmanager
def full_precision(device_type: str) -> Iterator[None]:
    """Disable autocast so that similarity logits and log-sum-exp run in (at least) float32."""
    if device_type not in ("cpu", "cuda", "xpu", "mps"):
        yield
        return
    with torch.autocast(device_type=device_type, enabled=False):
        yield


def as_float(z: torch.Tensor) -> torch.Tensor:
    """Upcast half precision to float32; keep float32/float64 as they are."""
    return z.to(torch.promote_types(z.dtype, torch.float32))


def compact_ids(*keys: torch.Tensor) -> torch.Tensor:
    """Map rows of several integer key vectors ``[B]`` to dense ids ``0..K-1`` (equal rows, equal id)."""
    combined = torch.zeros_like(keys[0])
    capacity = 1
    for key in keys:
        lo, hi = int(key.min()), int(key.max())
        span = hi - lo + 1
        capacity *= span
        if capacity >= 2**62:  # mixed-radix code would overflow: densify each key first
            return compact_ids(*(torch.unique(k, return_inverse=True)[1] for k in keys))
        combined = combined * span + (key - lo)
    return torch.unique(combined, return_inverse=True)[1]


def contrastive_terms(
    z: torch.Tensor,
    positive_key: torch.Tensor,
    temperature: float,
    normalize: bool,
    block: torch.Tensor | None = None,
    log_weights: torch.Tensor | None = None,
    partner: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-anchor sum of ``−log p_ip`` over positives, and the number of positives.

    ``p_ip = exp(s_ip) / Σ_{k∈Q(i)} exp(s_ik)`` with ``s = z zᵀ / τ`` (in float32 or wider, autocast off),
    ``Q(i) = {k ≠ i : block_k = block_i}`` (all ``k ≠ i`` when ``block`` is None) and positives
    ``P(i) = {p ∈ Q(i) : positive_key_p = positive_key_i ≥ 0}``.

    Args:
        z: embeddings ``[B, d]``.
        positive_key: ``[B]`` long; equal non-negative keys are positives, negative keys never are.
        temperature: τ > 0.
        normalize: L2-normalise rows of ``z`` first.
        block: optional ``[B]`` long; restricts the denominator (and positives) to rows of the same block.
        log_weights: optional ``[B, B]`` additive log-weights of the denominator terms (``-inf`` drops a term).
        partner: optional ``[B]`` long: the single positive of each row (e.g. its other view), replacing
            ``positive_key``; it must lie in the row's block and have a finite log-weight.

    Returns:
        ``(neg_log_prob_sum, num_positives)``, both ``[B]``; the first is float, 0 where ``|P(i)| = 0``.
    """
    with full_precision(z.device.type):
        zf = as_float(z)
        if normalize:
            zf = F.normalize(zf, dim=1)
        if block is not None and log_weights is None:
            lse = _blockwise_logsumexp(zf, block, temperature)
        elif block is None and log_weights is not None and partner is not None:
            # Every row keeps its partner (finite log-weight), so no row of the denominator is empty.
            sim = (zf * (1.0 / temperature)) @ zf.T
            lse = torch.logsumexp(sim.add_(log_weights.detach().to(sim.dtype)), dim=1)
        else:
            lse = _masked_logsumexp(zf, block, log_weights, temperature)

        if partner is not None:
            num_pos = torch.ones_like(partner)
            terms = lse - (zf * zf[partner]).sum(dim=1) * (1.0 / temperature)
            return terms, num_pos
        key_ok = positive_key >= 0
        ids = compact_ids(positive_key, block) if block is not None else compact_ids(positive_key)
        num_ids = int(ids.max()) + 1
        ids_ok = torch.where(key_ok, ids, num_ids)  # rows with unknown keys go to a discarded extra slot
        sums = zf.new_zeros(num_ids + 1, zf.shape[1]).index_add(0, ids_ok, zf)
        counts = torch.bincount(ids_ok, minlength=num_ids + 1)
        num_pos = torch.where(key_ok, counts[ids_ok] - 1, 0)
        # index_select, not sums[ids_ok]: the backward of indexing with repeated rows adds with atomic float
        # operations on several CPU threads (a different order, and different last bits, on every run); the
        # backward of index_select is a serial index_add.
        pos_logit_sum = (zf * (sums.index_select(0, ids_ok) - zf)).sum(dim=1) * (1.0 / temperature)
        terms = num_pos.to(lse.dtype) * lse - torch.where(key_ok, pos_logit_sum, 0.0)
        terms = torch.where(num_pos > 0, terms, 0.0)
    return terms, num_pos


def _masked_logsumexp(
    zf: torch.Tensor, block: torch.Tensor | None, log_weights: torch.Tensor | None, temperature: float
) -> torch.Tensor:
    """``logsumexp_k (s_ik + log w_ik)`` over ``k ≠ i`` of the same block, on the full ``[B, B]`` matrix."""
    n = zf.shape[0]
    sim = (zf * (1.0 / temperature)) @ zf.T
    if block is None and log_weights is None and n > 1:
        # The diagonal is the only excluded entry: fill it in place (matmul keeps no reference to its output).
        sim.diagonal().fill_(float("-inf"))
        return torch.logsumexp(sim, dim=1)
    keep = torch.ones(n, n, dtype=torch.bool, device=zf.device) if block is None else block[:, None] == block[None, :]
    keep.fill_diagonal_(False)
    if log_weights is not None:
        keep &= log_weights > float("-inf")
        sim = sim + log_weights.to(sim.dtype).masked_fill(~keep, 0.0)
    # A row with an empty denominator keeps its own diagonal entry: its log-sum-exp stays finite, and
    # the anchor has no positives, so its term is 0 and receives zero gradient.
    lonely = ~keep.any(dim=1)
    keep[lonely, lonely] = True
    sim.masked_fill_(keep.logical_not_(), float("-inf"))
    return torch.logsumexp(sim, dim=1)


def _blockwise_logsumexp(zf: torch.Tensor, block: torch.Tensor, temperature: float) -> torch.Tensor:
    """``logsumexp_{k≠i, block_k = block_i} s_ik`` computing only the diagonal blocks.

    Rows are grouped by block into a padded ``[K, P, d]`` tensor (``P`` the largest block) and one batched
    matmul gives the ``K`` within-block similarity matrices: ``O(K P² d)`` work instead of ``O(B² d)``. Falls
    back to the full masked matrix when the blocks are so unequal that padding would cost more.
    """
    n = zf.shape[0]
    ids = compact_ids(block)
    sizes = torch.bincount(ids)
    k, p = sizes.shape[0], int(sizes.max())
    if k * p * p * 2 > n * n:
        return _masked_logsumexp(zf, ids, None, temperature)
    order = torch.argsort(ids, stable=True)
    starts = torch.cumsum(sizes, 0) - sizes
    sorted_ids = ids[order]
    slot = torch.arange(n, device=zf.device) - starts[sorted_ids]
    padded = zf.new_zeros(k, p, zf.shape[1])
    padded = padded.index_put((sorted_ids, slot), zf[order])
    sim = torch.bmm(padded * (1.0 / temperature), padded.transpose(1, 2))  # [K, P, P]
    valid = torch.arange(p, device=zf.device)[None, :] < sizes[:, None]  # [K, P]
    keep = valid[:, None, :].expand(k, p, p).clone()
    keep.diagonal(dim1=1, dim2=2).fill_(False)
    lonely = ~keep.any(dim=2)  # padding rows and rows alone in their block
    keep.diagonal(dim1=1, dim2=2).copy_(lonely)
    sim.masked_fill_(keep.logical_not_(), float("-inf"))
    lse_sorted = torch.logsumexp(sim, dim=2)[sorted_ids, slot]
    return torch.empty_like(lse_sorted).index_copy(0, order, lse_sorted)
