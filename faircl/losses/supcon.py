"""Supervised contrastive losses: SupCon, the fair contrastive loss (FCL) and CS-InfoNCE.

All three are vectorised over anchors and compute their similarity logits and log-sum-exp in float32 (or float64
for float64 input) even under autocast. Up to ``DENSE_MAX_ROWS`` rows they use one ``[B, B]`` similarity matrix;
above it (or with ``block_size`` / ``gather_distributed``) the linear-memory path of
:mod:`faircl.losses.streaming`, which gives the same values and gradients.
"""

from __future__ import annotations

import torch

from faircl._checks import check_choice, check_embeddings, check_ids, check_positive

from ._common import compact_ids, contrastive_terms
from .streaming import cs_infonce_streaming, fcl_streaming, supcon_streaming, use_streaming

SUPCON_REDUCTIONS = ("mean", "sum", "none", "confair")


def _reduce_supcon(terms: torch.Tensor, num_pos: torch.Tensor, reduction: str) -> torch.Tensor:
    """Turn per-anchor ``Σ_p −log p_ip`` into the requested SupCon reduction (see :func:`supcon_loss`)."""
    if reduction == "confair":
        return (terms / (1 + num_pos).to(terms.dtype)).mean()
    per_anchor = terms / num_pos.clamp(min=1).to(terms.dtype)
    if reduction == "none":
        return per_anchor
    if reduction == "sum":
        return per_anchor.sum()
    # Anchors without positives hold an exact 0; the sum keeps the graph, so "no valid anchor" is a 0 with grad.
    return per_anchor.sum() / (num_pos > 0).sum().clamp(min=1).to(terms.dtype)


def supcon_loss(
    z: torch.Tensor,
    labels: torch.Tensor,
    temperature: float = 0.1,
    normalize: bool = True,
    reduction: str = "mean",
    gather_distributed: bool = False,
    block_size: int | None = None,
) -> torch.Tensor:
    """Supervised contrastive loss (Khosla et al. 2020; Shen et al. 2021 eq. 2; Chi et al. 2022 L_sup).

    For anchor ``i``, ``P(i) = {p ≠ i : y_p = y_i}`` and

        ``ℓ_i = −1/|P(i)| Σ_{p∈P(i)} log( exp(z_i·z_p/τ) / Σ_{k≠i} exp(z_i·z_k/τ) )``.

    One view (ConFair: the batch instances) or several views stacked by the caller (Chi: ``torch.cat([z1, z2])``
    with ``torch.cat([y, y])``, so the other view of an example is always one of its positives). Rows whose label
    is negative (unknown) are never positives of anyone and have no term, but still appear in every denominator.

    Args:
        z: embeddings ``[B, d]``.
        labels: integer labels ``[B]``; ``-1`` = unknown.
        temperature: τ > 0.
        normalize: L2-normalise ``z`` (the papers use normalised embeddings).
        reduction: ``"mean"`` (default, the paper): mean of ``ℓ_i`` over anchors with ``|P(i)| > 0``;
            ``"sum"``: sum of ``ℓ_i``; ``"none"``: ``ℓ_i`` per anchor ``[B]`` (0 where ``|P(i)| = 0``);
            ``"confair"``: the ConFair authors' code, ``Σ_p −log p_ip / (1 + |P(i)|)`` averaged over all ``B`` anchors.
        gather_distributed: under an initialised process group, contrast this process's anchors with the rows
            of every process (labels gathered with them; see :mod:`faircl.losses.distributed`). The value
            is the loss of the concatenated global batch on every rank, and the gradient is scaled so that DDP's
            mean over ranks gives exactly that loss's gradient. ``"none"`` returns the local anchors' terms.
            Without a process group it changes nothing.
        block_size: anchor rows per tile of the linear-memory path (peak memory ``O(B·(d + block_size))``);
            ``None`` = automatic: dense ``[B, B]`` up to ``DENSE_MAX_ROWS`` rows, streamed above. Giving it
            forces the streamed path.

    Returns:
        A scalar (or ``[B]`` for ``"none"``). With no anchor having a positive, an exact 0 that still
        back-propagates (zero gradients).

    Examples:
        Two tight pairs with different labels; with τ = 1 each anchor's term is ``log(1 + 2/e)``:


        >>> import math, torch
        >>> from faircl.losses import supcon_loss
        >>> z = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
        >>> labels = torch.tensor([0, 0, 1, 1])
        >>> loss = supcon_loss(z, labels, temperature=1.0)
        >>> loss
        tensor(0.5514)
        >>> round(math.log(1 + 2 / math.e), 4)
        0.5514


        No anchor with a positive gives an exact 0 that still back-propagates:


        >>> z = torch.randn(3, 4, requires_grad=True)
        >>> loss = supcon_loss(z, torch.tensor([0, 1, 2]))
        >>> loss.item(), loss.requires_grad
        (0.0, True)
    """
    check_embeddings("z", z, shape="[B, d]", nonempty=True)
    labels = check_ids("labels", labels, size=z.shape[0], allow_unknown=True)
    check_positive("temperature", temperature)
    check_choice("reduction", reduction, SUPCON_REDUCTIONS)
    if use_streaming(z.shape[0], gather_distributed, block_size):
        return supcon_streaming(z, labels, temperature, normalize, reduction, gather_distributed, block_size)
    terms, num_pos = contrastive_terms(z, labels, temperature, normalize)
    return _reduce_supcon(terms, num_pos, reduction)


def fcl_loss(
    z: torch.Tensor,
    labels: torch.Tensor,
    groups: torch.Tensor,
    temperature: float = 0.1,
    conditioning: str = "none",
    normalize: bool = True,
    reduction: str = "mean",
    gather_distributed: bool = False,
    block_size: int | None = None,
) -> torch.Tensor:
    """Fair contrastive loss L_fcl of Shen et al. 2021 (eq. 3 uses ``L_scl − L_fcl``: **subtract** this value).

    ``conditioning="none"``: SupCon with the protected attribute as the label (positives share ``a``; the
    denominator runs over the whole batch). ``conditioning="class"``: the ConFair authors' equalized-odds
    flavour — SupCon on ``a`` computed inside each class separately (denominator and positives restricted to
    rows with the same ``y``), then averaged over the classes that have at least one anchor with a positive.
    Unknown attributes (``-1``) never form positives; their rows stay in the denominators.

    Args:
        z: embeddings ``[B, d]``.
        labels: task labels ``[B]`` (only used for ``conditioning="class"``; must be ``>= 0``).
        groups: protected attributes ``[B]``; ``-1`` = unknown.
        temperature: τ > 0.
        conditioning: ``"none"`` or ``"class"``.
        normalize: L2-normalise ``z``.
        reduction: as in :func:`supcon_loss`. For ``"class"``, ``"mean"`` averages each class's mean over
            its valid anchors, ``"confair"`` averages each class's ConFair-style mean over its rows,
            ``"sum"`` sums all ``ℓ_i``, and ``"none"`` returns the per-anchor ``ℓ_i`` of the within-class loss.
        gather_distributed: under an initialised process group, contrast this process's anchors with the rows
            of every process (labels and groups gathered with them; see :mod:`faircl.losses.distributed`). The
            value is the loss of the concatenated global batch on every rank, and the gradient is scaled so that
            DDP's mean over ranks gives exactly that loss's gradient. ``"none"`` returns the local anchors' terms.
            Without a process group it changes nothing.
        block_size: anchor rows per tile of the linear-memory path (peak memory ``O(B·(d + block_size))``);
            ``None`` = automatic: dense ``[B, B]`` up to ``DENSE_MAX_ROWS`` rows, streamed above. Giving it
            forces the streamed path.

    Returns:
        A scalar (or ``[B]`` for ``"none"``); 0 that back-propagates when no anchor has a positive.

    Examples:
        ``L_fcl`` is SupCon on the attribute; ConFair subtracts it:


        >>> import torch
        >>> from faircl.losses import fcl_loss, supcon_loss
        >>> z = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
        >>> labels, groups = torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 0, 1])
        >>> fcl_loss(z, labels, groups, temperature=1.0)
        tensor(1.5514)
        >>> torch.allclose(fcl_loss(z, labels, groups, temperature=1.0), supcon_loss(z, groups, temperature=1.0))
        True
    """
    check_embeddings("z", z, shape="[B, d]", nonempty=True)
    batch = z.shape[0]
    labels = check_ids("labels", labels, size=batch, allow_unknown=conditioning != "class")
    groups = check_ids("groups", groups, size=batch, allow_unknown=True)
    check_positive("temperature", temperature)
    check_choice("reduction", reduction, SUPCON_REDUCTIONS)
    if conditioning not in ("none", "class"):
        raise ValueError(f"`conditioning` must be 'none' or 'class', got {conditioning!r}")
    if use_streaming(batch, gather_distributed, block_size):
        return fcl_streaming(
            z, labels, groups, temperature, conditioning, normalize, reduction, gather_distributed, block_size
        )
    if conditioning == "none":
        terms, num_pos = contrastive_terms(z, groups, temperature, normalize)
        return _reduce_supcon(terms, num_pos, reduction)

    cls = compact_ids(labels)
    terms, num_pos = contrastive_terms(z, groups, temperature, normalize, block=cls)
    if reduction in ("none", "sum"):
        return _reduce_supcon(terms, num_pos, reduction)
    num_classes = int(cls.max()) + 1
    if reduction == "confair":
        per_row = terms / (1 + num_pos).to(terms.dtype)
        rows = torch.bincount(cls, minlength=num_classes).to(terms.dtype)
        class_loss = terms.new_zeros(num_classes).index_add(0, cls, per_row) / rows
        return class_loss.mean()
    per_anchor = terms / num_pos.clamp(min=1).to(terms.dtype)
    valid = torch.bincount(cls, weights=(num_pos > 0).to(terms.dtype), minlength=num_classes)
    class_sum = terms.new_zeros(num_classes).index_add(0, cls, per_anchor)
    class_loss = class_sum / valid.clamp(min=1)
    return class_loss.sum() / (valid > 0).sum().clamp(min=1).to(terms.dtype)


CS_REDUCTIONS = ("sum", "mean", "none")


def cs_infonce_loss(
    z1: torch.Tensor,
    z2: torch.Tensor,
    labels: torch.Tensor,
    groups: torch.Tensor,
    temperature: float = 0.1,
    normalize: bool = True,
    reduction: str = "sum",
    gather_distributed: bool = False,
    block_size: int | None = None,
) -> torch.Tensor:
    """Conditional supervised InfoNCE (Chi et al. 2022, eq. 2), to be **minimised** (it is ``−Σ w_i log ℓ_i``).

    The batch is the ``2N`` rows ``[z1; z2]``. For anchor ``i`` with other view ``i′``,

        ``ℓ_i = exp(z_i·z_i′/τ) / Σ_{k≠i, a_k=a_i, y_k=y_i} exp(z_i·z_k/τ)``  (``i′`` is in the denominator),

        ``L = Σ_{i=1}^{2N} 1/(N_{a_i,y_i} − 1) · (−log ℓ_i)``

    where ``N_{a,y}`` counts the rows of the ``2N`` batch in the (a, y) cell (both views). Since the weights of a
    cell sum to ``N_{a,y}/(N_{a,y}−1)``, the sum is about "number of cells × mean term" whatever the batch size.
    A cell holding a single example (only the pair) gives ``ℓ_i = 1`` and contributes 0. Rows with an unknown
    attribute (``-1``) belong to no cell: they contribute 0 and appear in no other anchor's denominator.

    Args:
        z1: first-view embeddings ``[N, d]``.
        z2: second-view embeddings ``[N, d]`` (row ``n`` is the other view of ``z1[n]``).
        labels: task labels ``[N]`` (``>= 0``).
        groups: protected attributes ``[N]``; ``-1`` = unknown.
        temperature: τ > 0 (the authors' code uses 2.0 on tanh-pooled, unnormalised features).
        normalize: L2-normalise the embeddings (the authors' code does not; the paper's similarity is a dot product).
        reduction: ``"sum"`` (default, eq. 2 as written), ``"mean"`` (eq. 2 divided by ``2N``), or ``"none"``:
            ``−log ℓ_i`` per anchor ``[2N]`` (view-1 anchors first) **before** the ``1/(N_{a,y}−1)`` weight.
        gather_distributed: under an initialised process group, contrast this process's anchors with the rows
            of every process (both views, labels and groups gathered with them; see
            :mod:`faircl.losses.distributed`); cells and ``N_{a,y}`` are those of the global batch. The value is
            the loss of the concatenated global batch on every rank, and the gradient is scaled so that DDP's mean
            over ranks gives exactly that loss's gradient. ``"none"`` returns the local anchors' terms; ``"mean"``
            divides by the global ``2N``. Without a process group it changes nothing.
        block_size: anchor rows per tile of the linear-memory path (peak memory ``O(B·(d + block_size))``);
            ``None`` = automatic: dense ``[B, B]`` up to ``DENSE_MAX_ROWS`` rows, streamed above. Giving it
            forces the streamed path.

    Returns:
        A scalar (or ``[2N]``); 0 that back-propagates when every cell holds a single example.

    Examples:
        Two examples of the same (class, group) cell, four rows in all: each anchor's term is ``log(1 + 2/e)`` at τ = 1
        (its other view over the three other rows of its cell), weighted by ``1/(N_{a,y} − 1) = 1/3`` and summed:


        >>> import torch
        >>> from faircl.losses import cs_infonce_loss
        >>> z1 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> z2 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> y, a = torch.tensor([0, 0]), torch.tensor([1, 1])
        >>> cs_infonce_loss(z1, z2, y, a, temperature=1.0)
        tensor(0.7353)


        An anchor alone with its other view in its cell contributes 0:


        >>> cs_infonce_loss(z1, z2, y, torch.tensor([0, 1]), temperature=1.0)
        tensor(0.)
    """
    check_embeddings("z1", z1, shape="[N, d]", nonempty=True)
    check_embeddings("z2", z2, shape="[N, d]")
    if z1.shape != z2.shape:
        raise ValueError(f"`z1` and `z2` must have the same shape [N, d], got {tuple(z1.shape)} and {tuple(z2.shape)}")
    n = z1.shape[0]
    labels = check_ids("labels", labels, size=n)
    groups = check_ids("groups", groups, size=n, allow_unknown=True)
    check_positive("temperature", temperature)
    check_choice("reduction", reduction, CS_REDUCTIONS)
    if use_streaming(2 * n, gather_distributed, block_size):
        return cs_infonce_streaming(
            z1, z2, labels, groups, temperature, normalize, reduction, gather_distributed, block_size
        )

    example = torch.arange(n, device=z1.device)
    known = groups >= 0
    # Unknown attribute: a private cell per example (holding just its two views), so it contributes exactly 0.
    cell = compact_ids(torch.where(known, labels, -1 - example), torch.where(known, groups, -1))
    cell2 = torch.cat([cell, cell])
    z = torch.cat([z1, z2], dim=0)
    other_view = torch.cat([example + n, example])
    terms, _ = contrastive_terms(z, other_view, temperature, normalize, block=cell2, partner=other_view)
    cell_size = torch.bincount(cell2)[cell2]
    # A pair alone in its cell has ℓ_i = 1 exactly; avoid a rounding residue of ~1e-16.
    terms = torch.where(cell_size > 2, terms, 0.0)
    if reduction == "none":
        return terms
    weighted = terms / (cell_size - 1).to(terms.dtype)
    return weighted.sum() if reduction == "sum" else weighted.mean()
