"""Literal fairness-driven pair sampling (Martin & Ogbuokiri, Algorithm 1): one drawn negative per anchor.

:func:`sample_negatives` draws, for every anchor, one negative from a row-stochastic weight matrix (e.g.
:func:`faircl.mining.fair_negative_weights`: ∝ ``w(c)`` of the other clusters × distance from the anchor);
:func:`sampled_pair_loss` is the contrastive loss of the drawn pairs. The weighted-denominator NT-Xent
(``nt_xent_loss(..., negative_weights=...)``) is the in-batch *expectation* of this draw; this module is the
algorithm as written (line 13: "Sample ``z_k`` proportional to ``w(c)`` and ``‖z_i − z_k‖``").
"""

from __future__ import annotations

import torch

from faircl._checks import check_embeddings, check_positive

from ._common import full_precision


def sample_negatives(weights: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One negative index per anchor, drawn from the rows of ``weights``.

    Args:
        weights: ``[B, M]`` non-negative sampling weights (row ``i``: anchor ``i``'s candidates; rows need not be
            normalised). A row of zeros (no admissible negative, e.g. the whole batch in the anchor's cluster)
            draws nothing.
        generator: optional ``torch.Generator`` (on the weights' device) for reproducible draws.

    Returns:
        long ``[B]``: the drawn column, ``-1`` for rows without an admissible negative.
    """
    if not isinstance(weights, torch.Tensor) or weights.dim() != 2:
        raise ValueError(f"`weights` must be a tensor [B, M], got shape {tuple(getattr(weights, 'shape', ()))}")
    if not weights.is_floating_point():
        raise TypeError(f"`weights` must be floating point, got {weights.dtype}")
    w = weights.detach().double()
    if bool((w < 0).any()) or not bool(torch.isfinite(w).all()):
        raise ValueError("`weights` must be finite and >= 0")
    has = w.sum(dim=1) > 0
    out = torch.full((w.shape[0],), -1, dtype=torch.long, device=w.device)
    if bool(has.any()):
        out[has] = torch.multinomial(w[has], 1, generator=generator).squeeze(1)
    return out


def sampled_pair_loss(
    z1: torch.Tensor,
    z2: torch.Tensor,
    negatives: torch.Tensor,
    temperature: float = 0.5,
    extra_positives: torch.Tensor | None = None,
    normalize: bool = True,
) -> torch.Tensor:
    """NT-Xent restricted to the drawn pairs (Algorithm 1's pair sets ``P`` and ``N``), to be minimised.

    For view-1 anchor ``i`` (and symmetrically view-2 anchor ``i`` against view 2's rows) with positives
    ``P_i = {other view of i} ∪ {extra_positives[i]}`` and the drawn negative ``k_i``:

        ``ℓ_i = −1/|P_i| Σ_{p∈P_i} log( e^{s_ip/τ} / (e^{s_ip/τ} + e^{s_ik_i/τ}) )``,  ``s`` = cosine similarity,

    averaged over the ``2B`` anchors. An anchor without a negative (``k_i = −1``) contributes 0: with nothing to
    contrast, ``ℓ_i = log 1``.

    Args:
        z1: first-view embeddings ``[B, d]``.
        z2: second-view embeddings ``[B, d]``.
        negatives: long ``[B]``, the drawn negative of each anchor (index into the batch, ``-1`` = none), from
            :func:`sample_negatives`; the same index is used for both views.
        temperature: τ > 0.
        extra_positives: optional long ``[B]``, a second positive per anchor (Algorithm 1 line 6: the nearest
            same-cluster neighbour; ``-1`` = none).
        normalize: L2-normalise the embeddings.

    Returns:
        A scalar.
    """
    check_embeddings("z1", z1, shape="[B, d]", nonempty=True)
    check_embeddings("z2", z2, shape="[B, d]")
    if z1.shape != z2.shape:
        raise ValueError(f"`z1` and `z2` must have the same shape [B, d], got {tuple(z1.shape)} and {tuple(z2.shape)}")
    check_positive("temperature", temperature)
    b = z1.shape[0]
    idx = [("negatives", negatives)] + ([("extra_positives", extra_positives)] if extra_positives is not None else [])
    for name, t in idx:
        if not isinstance(t, torch.Tensor) or t.shape != (b,):
            raise ValueError(f"`{name}` must be a tensor [B={b}], got shape {tuple(getattr(t, 'shape', ()))}")
        if t.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"`{name}` must hold integer indices, got {t.dtype}")
        if bool(((t < -1) | (t >= b)).any()):
            raise ValueError(f"`{name}` holds an index outside -1..{b - 1}")
    with full_precision(z1.device.type):
        dtype = torch.promote_types(z1.dtype, torch.float32)
        a1, a2 = z1.to(dtype), z2.to(dtype)
        if normalize:
            a1, a2 = torch.nn.functional.normalize(a1, dim=1), torch.nn.functional.normalize(a2, dim=1)
        rows = torch.arange(b, device=z1.device)
        has_neg = negatives >= 0
        neg = negatives.clamp(min=0)
        total = a1.new_zeros(())
        for anchor, other in ((a1, a2), (a2, a1)):
            own = anchor  # negatives and extra positives are rows of the anchor's own view
            s_neg = (anchor * own[neg]).sum(dim=1) / temperature
            pos_sims = [(anchor * other).sum(dim=1) / temperature]
            pos_masks = [torch.ones(b, dtype=torch.bool, device=z1.device)]
            if extra_positives is not None:
                has_pos = extra_positives >= 0
                pos_sims.append((anchor * own[extra_positives.clamp(min=0)]).sum(dim=1) / temperature)
                pos_masks.append(has_pos & (extra_positives != rows))
            num = torch.stack(pos_masks).to(dtype).sum(dim=0)
            term = anchor.new_zeros(b)
            for s_pos, m in zip(pos_sims, pos_masks):
                pair = torch.logaddexp(s_pos, s_neg) - s_pos  # −log(e^{s_p} / (e^{s_p} + e^{s_n}))
                term = term + torch.where(m & has_neg, pair, 0.0)
            total = total + (term / num).sum()
        return total / (2 * b)


__all__ = ["sample_negatives", "sampled_pair_loss"]
