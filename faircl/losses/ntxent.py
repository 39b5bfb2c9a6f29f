"""NT-Xent (SimCLR) with the fairness-driven negative weights and extra positives of Martin & Ogbuokiri.

Up to ``DENSE_MAX_ROWS`` rows the loss uses ``[2N, 2N]`` matrices; above it (or with ``block_size`` /
``gather_distributed``) the linear-memory path of :mod:`faircl.losses.streaming`, with the same values and gradients.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from faircl._checks import check_choice, check_embeddings, check_ids, check_positive

from ._common import REDUCTIONS, as_float, contrastive_terms, full_precision
from .streaming import nt_xent_streaming, use_streaming


def _expand_pairs(m: torch.Tensor, n: int) -> torch.Tensor:
    """Tile an example-level ``[N, N]`` matrix to the ``[2N, 2N]`` matrix over both views."""
    return m.repeat(2, 2) if m.shape == (n, n) else m


def nt_xent_loss(
    z1: torch.Tensor,
    z2: torch.Tensor,
    temperature: float = 0.5,
    negative_weights: torch.Tensor | None = None,
    extra_positives: torch.Tensor | None = None,
    normalize: bool = True,
    reduction: str = "mean",
    gather_distributed: bool = False,
    block_size: int | None = None,
) -> torch.Tensor:
    """NT-Xent loss of SimCLR (Chen et al. 2020; Martin & Ogbuokiri eq. 2.1), optionally fairness-weighted.

    Over the ``2N`` rows ``[z1; z2]``, anchor ``i`` with other view ``i′`` and positives ``P(i)`` (``i′``, plus
    the views of its extra positive if any):

        ``ℓ_i = −1/|P(i)| Σ_{p∈P(i)} log( exp(s_ip) / (Σ_{p'∈P(i)} exp(s_ip') + Σ_{k∈N(i)} w̃_ik exp(s_ik)) )``,

    ``s = z zᵀ/τ``, ``N(i)`` = every other row that is not a positive. Without weights ``w̃ = 1`` (plain
    NT-Xent, where ``|P(i)| = 1``). With ``negative_weights`` the weights of each anchor's negatives are rescaled
    to mean 1 over ``N(i)`` (so uniform weights give back plain NT-Xent and only the *relative* weights matter);
    this is the in-batch form of Martin's weighted negative sampling (sampling a negative with probability
    ∝ w is replaced by its expectation).

    Args:
        z1: first-view embeddings ``[N, d]``.
        z2: second-view embeddings ``[N, d]``.
        temperature: τ > 0 (SimCLR / Martin: 0.5).
        negative_weights: non-negative weights ``[N, N]`` between examples (used for every view pair, e.g. from
            :func:`faircl.mining.fair_negative_weights`) or ``[2N, 2N]`` between rows. Entries on positives are
            ignored. A row whose negatives all have weight 0 keeps only its positives in the denominator.
        extra_positives: long ``[N]``: index ``m`` of an additional positive example for example ``n``
            (Martin: the nearest neighbour in the same cluster), ``-1`` for none. Both views of ``m`` become
            positives of both views of ``n``.
        normalize: L2-normalise the embeddings.
        reduction: ``"mean"`` over the ``2N`` anchors, ``"sum"``, or ``"none"`` (``[2N]``, view-1 anchors first).
        gather_distributed: under an initialised process group, contrast this process's anchors with the rows of
            every process (both views gathered; see :mod:`faircl.losses.distributed`). The value is the loss of
            the concatenated global batch on every rank (``"mean"`` over the global ``2N``), and the gradient is
            scaled so that DDP's mean over ranks gives exactly that loss's gradient; ``"none"`` returns the local
            anchors' terms. ``negative_weights`` must then be example-level, ``[N_local, N_global]`` (as returned
            by ``fair_negative_weights(..., gather_distributed=True)``) or ``[N_global, N_global]``, with the global
            examples in rank order; ``extra_positives`` still index the local examples. Without a process group it
            changes nothing.
        block_size: anchor rows per tile of the linear-memory path (peak memory ``O(N·(d + block_size))``);
            ``None`` = automatic: dense up to ``DENSE_MAX_ROWS`` rows, streamed above. Giving it forces the
            streamed path. Row-level ``[2N, 2N]`` weights always take the dense path.

    Returns:
        A scalar, or ``[2N]`` per-anchor terms for ``reduction="none"``.

    Examples:
        >>> import torch
        >>> from faircl.losses import nt_xent_loss
        >>> z1 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> nt_xent_loss(z1, z1.clone(), temperature=0.5)
        tensor(0.2395)


        Views that agree less cost more:


        >>> nt_xent_loss(z1, torch.tensor([[0.0, 1.0], [1.0, 0.0]]), temperature=0.5)
        tensor(2.2395)
    """
    check_embeddings("z1", z1, shape="[N, d]", nonempty=True)
    check_embeddings("z2", z2, shape="[N, d]")
    if z1.shape != z2.shape:
        raise ValueError(f"`z1` and `z2` must have the same shape [N, d], got {tuple(z1.shape)} and {tuple(z2.shape)}")
    check_positive("temperature", temperature)
    check_choice("reduction", reduction, REDUCTIONS)
    n = z1.shape[0]
    extra = None
    if extra_positives is not None:
        extra = check_ids("extra_positives", extra_positives, size=n, allow_unknown=True)
        if bool((extra >= n).any()):
            row = int((extra >= n).nonzero()[0])
            raise ValueError(f"`extra_positives` must index the batch (< {n}); row {row} holds {int(extra[row])}")
    # Row-level [2N, 2N] weights only exist on the dense path; under gathering every weight matrix is example-level.
    row_level = (
        not gather_distributed and negative_weights is not None and tuple(negative_weights.shape) == (2 * n, 2 * n)
    )
    if not row_level and use_streaming(2 * n, gather_distributed, block_size):
        return nt_xent_streaming(
            z1, z2, temperature, negative_weights, extra, normalize, reduction, gather_distributed, block_size
        )
    z = torch.cat([z1, z2], dim=0)
    example = torch.arange(n, device=z.device)

    other_view = torch.cat([example + n, example])
    if extra_positives is None and negative_weights is None:
        terms, num_pos = contrastive_terms(z, other_view, temperature, normalize, partner=other_view)
    elif extra_positives is None and negative_weights.shape == (n, n):
        log_w = _example_log_weights(negative_weights, n)
        terms, num_pos = contrastive_terms(z, other_view, temperature, normalize, log_weights=log_w, partner=other_view)
    else:
        rows = 2 * n
        eye = torch.eye(rows, dtype=torch.bool, device=z.device)
        same_example = torch.eye(n, dtype=torch.bool, device=z.device).repeat(2, 2)
        positive = same_example & ~eye
        if extra is not None:
            pair = torch.zeros(n, n, dtype=torch.bool, device=z.device)
            has = extra >= 0
            pair[example[has], extra[has]] = True
            pair = pair | pair.T
            positive |= pair.repeat(2, 2) & ~eye
        negative = ~positive & ~eye
        with full_precision(z.device.type):
            if negative_weights is None:
                log_w = torch.zeros(rows, rows, dtype=torch.float32, device=z.device)
            else:
                w = _expand_pairs(negative_weights, n)
                if w.shape != (rows, rows):
                    raise ValueError(
                        f"`negative_weights` must have shape [{n}, {n}] or [{rows}, {rows}], got {tuple(w.shape)}"
                    )
                w = torch.where(negative, _check_weights(w), 0.0)
                total = w.sum(dim=1, keepdim=True)
                scale = torch.where(total > 0, negative.sum(dim=1, keepdim=True) / torch.where(total > 0, total, 1.0), 0.0)
                log_w = torch.log(w * scale)
            log_w = torch.where(positive, 0.0, log_w).masked_fill(eye, float("-inf"))
        terms, num_pos = _terms_with_positive_mask(z, positive, log_w, temperature, normalize)

    per_anchor = terms / num_pos.clamp(min=1).to(terms.dtype)
    if reduction == "none":
        return per_anchor
    return per_anchor.sum() if reduction == "sum" else per_anchor.mean()


def _check_weights(w: torch.Tensor) -> torch.Tensor:
    w = w.detach().to(torch.promote_types(w.dtype, torch.float32))
    if bool((w < 0).any()) or not bool(w.isfinite().all()):
        raise ValueError("`negative_weights` must be finite and non-negative")
    return w


def _example_log_weights(negative_weights: torch.Tensor, n: int) -> torch.Tensor:
    """``[2N, 2N]`` log-weights from example-level weights ``[N, N]`` when the other view is the only positive.

    Row ``i`` (example ``e``) has the ``2(N − 1)`` views of the other examples as negatives, each with weight
    ``w_em``; rescaled to mean 1 they become ``w_em · (N − 1) / Σ_{m≠e} w_em``. The other view gets log-weight 0
    and the row itself ``-inf``. Built on ``[N, N]`` and tiled, so it costs one ``[2N, 2N]`` pass.
    """
    w = _check_weights(negative_weights)
    w = w * ~torch.eye(n, dtype=torch.bool, device=w.device)
    total = w.sum(dim=1, keepdim=True)
    scale = torch.where(total > 0, (n - 1) / torch.where(total > 0, total, 1.0), 0.0)
    log_w = torch.log(w * scale)
    log_w.diagonal().fill_(0.0)  # the other view, in the off-diagonal blocks once tiled
    log_w = log_w.repeat(2, 2)
    log_w.diagonal().fill_(float("-inf"))  # the row itself
    return log_w


def _terms_with_positive_mask(
    z: torch.Tensor, positive: torch.Tensor, log_w: torch.Tensor, temperature: float, normalize: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Like :func:`faircl.losses._common.contrastive_terms`, with an explicit ``[B, B]`` positive mask."""
    with full_precision(z.device.type):
        zf = as_float(z)
        if normalize:
            zf = F.normalize(zf, dim=1)
        sim = (zf * (1.0 / temperature)) @ zf.T
        lse = torch.logsumexp(sim + log_w.to(sim.dtype), dim=1)
        num_pos = positive.sum(dim=1)
        pos_sum = torch.where(positive, sim, 0.0).sum(dim=1)
        terms = num_pos.to(lse.dtype) * lse - pos_sum
    return terms, num_pos
