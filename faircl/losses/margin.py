"""Ranking losses for deep metric learning: margin (Wu et al. 2018), triplet, contrastive pairs, multi-similarity.

Distances are Euclidean between (by default L2-normalised) embeddings, computed in float32 or wider.
Triplets come from :mod:`faircl.mining` as ``(anchors, positives, negatives)`` index tensors; when none are given,
every valid triplet of the batch is used (a ``[B, B, B]`` mask: fine for DML batches of a few hundred rows).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from faircl._checks import check_embeddings, check_ids

from ._common import full_precision
from .pairs import Triplets, all_triplets, pair_masks, pairwise_distances


def _triplets(z: torch.Tensor, labels: torch.Tensor | None, triplets: Triplets | None) -> Triplets:
    check_embeddings("z", z, shape="[B, d]")
    if triplets is None:
        if labels is None:
            raise ValueError("pass `labels` [B] or `triplets` (anchors, positives, negatives)")
        return all_triplets(check_ids("labels", labels, size=z.shape[0], allow_unknown=True))
    if len(triplets) != 3:
        raise ValueError(f"`triplets` must be (anchors, positives, negatives), got {len(triplets)} tensors")
    a, p, n = (torch.as_tensor(t, dtype=torch.long, device=z.device) for t in triplets)
    if not (a.shape == p.shape == n.shape) or a.dim() != 1:
        raise ValueError(f"triplet index tensors must be 1-D of equal length, got {a.shape}, {p.shape}, {n.shape}")
    for name, t in zip(("anchors", "positives", "negatives"), (a, p, n)):
        if t.numel() and (int(t.min()) < 0 or int(t.max()) >= z.shape[0]):
            raise ValueError(f"triplet `{name}` indices must lie in [0, {z.shape[0]}), got range [{int(t.min())}, {int(t.max())}]")
    return a, p, n


def _zero(z: torch.Tensor) -> torch.Tensor:
    """A float32 zero connected to ``z``'s graph (zero gradients)."""
    return (z.float() * 0.0).sum()


def triplet_margin_loss(
    z: torch.Tensor,
    labels: torch.Tensor | None = None,
    triplets: Triplets | None = None,
    margin: float = 0.2,
    normalize: bool = True,
    reduction: str = "mean_nonzero",
) -> torch.Tensor:
    """Triplet loss (Hoffer & Ailon 2015; Dullerud et al. 2022, Definition 8): ``[d_ap − d_an + γ]_+``.

    Args:
        z: embeddings ``[B, d]``.
        labels: ``[B]`` labels, used to form all valid triplets when ``triplets`` is None.
        triplets: ``(anchors, positives, negatives)`` long ``[T]`` each (e.g. from a miner).
        margin: γ.
        normalize: L2-normalise ``z`` first.
        reduction: ``"mean_nonzero"`` (default; mean over triplets with a positive loss, as pytorch-metric-learning's
            ``AvgNonZeroReducer`` and "batch all" training), ``"mean"``, ``"sum"`` or ``"none"`` (``[T]``).

    Returns:
        A scalar (or ``[T]``); 0 connected to the graph when there is no triplet or none is active.

    Examples:
        Every valid triplet of the labels; only the violated ones count in ``"mean_nonzero"``:


        >>> import torch
        >>> from faircl.losses import triplet_margin_loss
        >>> z = torch.tensor([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])
        >>> triplet_margin_loss(z, torch.tensor([0, 0, 1]), margin=0.2)
        tensor(0.)
        >>> triplet_margin_loss(z, torch.tensor([0, 1, 0]), margin=0.2)
        tensor(0.8508)
    """
    if reduction not in ("mean_nonzero", "mean", "sum", "none"):
        raise ValueError(f"`reduction` must be 'mean_nonzero', 'mean', 'sum' or 'none', got {reduction!r}")
    a, p, n = _triplets(z, labels, triplets)
    with full_precision(z.device.type):
        d = pairwise_distances(z, normalize)
        losses = F.relu(d[a, p] - d[a, n] + margin)
    if reduction == "none":
        return losses
    if losses.numel() == 0:
        return _zero(z)
    if reduction == "sum":
        return losses.sum()
    if reduction == "mean":
        return losses.mean()
    return losses.sum() / (losses > 0).sum().clamp(min=1).to(losses.dtype)


class MarginLoss(nn.Module):
    """Margin loss with a learnable boundary β (Wu et al. 2018; Dullerud et al. 2022, Definition 9).

    For each triplet ``(a, p, n)``: ``[d_ap − β_{y_a} + γ]_+ + [β_{y_a} − d_an + γ]_+``; the sum over triplets is
    divided by the number of active (non-zero) terms. With ``nu > 0`` the β regulariser ``ν·β`` of Wu et al. is
    added (per-class β: ``ν Σ_a β_{y_a}`` over the same divisor). The layout follows pytorch-metric-learning's
    ``MarginLoss`` so the two agree numerically. Give β its own learning rate (Wu et al. / PARADE: 5e-4) through
    an optimiser parameter group on ``self.beta``.

    Args:
        margin: γ (0.2).
        beta: initial β (1.2).
        num_classes: if set, one β per class (indexed by the anchor's label) instead of a shared β.
        learn_beta: make β an ``nn.Parameter`` (otherwise a buffer).
        nu: weight of the β regulariser.
        normalize: L2-normalise embeddings first.

    Examples:
        >>> import torch
        >>> from faircl.losses import MarginLoss, all_triplets
        >>> loss_fn = MarginLoss(margin=0.2, beta=1.2)
        >>> z = torch.tensor([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])
        >>> labels = torch.tensor([0, 0, 1])
        >>> loss_fn(z, labels, all_triplets(labels))
        tensor(0.5056, grad_fn=<DivBackward0>)
        >>> loss_fn.beta
        Parameter containing:
        tensor([1.2000], requires_grad=True)
    """

    def __init__(
        self,
        margin: float = 0.2,
        beta: float = 1.2,
        num_classes: int | None = None,
        learn_beta: bool = True,
        nu: float = 0.0,
        normalize: bool = True,
    ) -> None:
        super().__init__()
        if num_classes is not None and num_classes < 1:
            raise ValueError(f"`num_classes` must be >= 1 or None, got {num_classes}")
        self.margin = float(margin)
        self.nu = float(nu)
        self.normalize = normalize
        self.per_class = num_classes is not None
        init = torch.full((num_classes or 1,), float(beta))
        if learn_beta:
            self.beta = nn.Parameter(init)
        else:
            self.register_buffer("beta", init)

    def forward(
        self, z: torch.Tensor, labels: torch.Tensor | None = None, triplets: Triplets | None = None
    ) -> torch.Tensor:
        """Loss of embeddings ``z`` ``[B, d]`` over ``triplets`` (or all valid triplets of ``labels`` ``[B]``)."""
        a, p, n = _triplets(z, labels, triplets)
        if self.per_class:
            if labels is None:
                raise ValueError("a per-class β needs `labels` [B] to look up each anchor's class")
            labels = check_ids("labels", labels, size=z.shape[0])
            if labels.numel() and int(labels.max()) >= self.beta.shape[0]:
                raise ValueError(f"`labels` must be < num_classes={self.beta.shape[0]} for a per-class β, got {int(labels.max())}")
            beta = self.beta.index_select(0, labels[a])  # repeated rows: a deterministic backward
        else:
            beta = self.beta.expand(a.shape[0])
        with full_precision(z.device.type):
            d = pairwise_distances(z, self.normalize)
            beta = beta.to(d.dtype)
            # Triplets repeat (anchor, positive) and (anchor, negative) pairs: gather from the flat matrix with
            # index_select, whose backward is a serial (deterministic) index_add on CPU.
            flat, width = d.reshape(-1), d.shape[1]
            pos = F.relu(flat.index_select(0, a * width + p) - beta + self.margin)
            neg = F.relu(beta - flat.index_select(0, a * width + n) + self.margin)
        active = ((pos > 0).sum() + (neg > 0).sum()).to(pos.dtype)
        loss = (pos + neg).sum() / active.clamp(min=1) if a.numel() else _zero(z) + 0.0 * self.beta.sum()
        if self.nu:
            if not self.per_class:
                loss = loss + self.nu * self.beta[0]
            elif a.numel():
                loss = loss + self.nu * beta.sum() / active.clamp(min=1) * (active > 0)
        return loss


def contrastive_pair_loss(
    z: torch.Tensor,
    labels: torch.Tensor,
    pos_margin: float = 0.0,
    neg_margin: float = 1.0,
    normalize: bool = True,
) -> torch.Tensor:
    """Contrastive pair loss (Hadsell et al. 2006; Dullerud et al. 2022, Definition 7) over all pairs of the batch.

    ``mean⁺ [d_ij − m_pos]_+`` over positive pairs plus ``mean⁺ [m_neg − d_ij]_+`` over negative pairs, each mean
    taken over its active (non-zero) pairs (as pytorch-metric-learning's ``ContrastiveLoss``). Rows with label
    ``-1`` form no pair.

    Args:
        z: embeddings ``[B, d]``.
        labels: ``[B]`` integer labels.
        pos_margin: distance below which positive pairs cost nothing.
        neg_margin: γ, distance beyond which negative pairs cost nothing.
        normalize: L2-normalise ``z`` first.

    Examples:
        >>> import torch
        >>> from faircl.losses import contrastive_pair_loss
        >>> z = torch.tensor([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])
        >>> contrastive_pair_loss(z, torch.tensor([0, 0, 1]))
        tensor(0.7380)
    """
    check_embeddings("z", z, shape="[B, d]")
    labels = check_ids("labels", labels, size=z.shape[0], allow_unknown=True)
    pos_mask, neg_mask = pair_masks(labels)
    with full_precision(z.device.type):
        d = pairwise_distances(z, normalize)
        pos = torch.where(pos_mask, F.relu(d - pos_margin), 0.0)
        neg = torch.where(neg_mask, F.relu(neg_margin - d), 0.0)

    def mean_nonzero(x: torch.Tensor) -> torch.Tensor:
        return x.sum() / (x > 0).sum().clamp(min=1).to(x.dtype)

    return mean_nonzero(pos) + mean_nonzero(neg)


def multi_similarity_loss(
    z: torch.Tensor,
    labels: torch.Tensor,
    alpha: float = 2.0,
    beta: float = 50.0,
    base: float = 0.5,
    normalize: bool = True,
) -> torch.Tensor:
    """Multi-similarity loss (Wang et al. 2019; Dullerud et al. 2022, Definition 11) over all pairs, without mining.

    With cosine similarities ``s``, per anchor
    ``1/α log(1 + Σ_{p∈P(i)} exp(−α(s_ip − λ))) + 1/β log(1 + Σ_{n∈N(i)} exp(β(s_in − λ)))``,
    averaged over all anchors (λ = ``base``). Rows with label ``-1`` form no pair.

    Examples:
        >>> import torch
        >>> from faircl.losses import multi_similarity_loss
        >>> z = torch.tensor([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])
        >>> multi_similarity_loss(z, torch.tensor([0, 0, 1]))
        tensor(0.2126)
    """
    check_embeddings("z", z, shape="[B, d]")
    labels = check_ids("labels", labels, size=z.shape[0], allow_unknown=True)
    pos_mask, neg_mask = pair_masks(labels)
    with full_precision(z.device.type):
        zf = z.to(torch.promote_types(z.dtype, torch.float32))
        if normalize:
            zf = F.normalize(zf, dim=1)
        s = zf @ zf.T
        zero_col = s.new_zeros(s.shape[0], 1)  # the "1 +" inside each log, as exp(0)
        pos_logits = torch.cat([zero_col, (-alpha * (s - base)).masked_fill(~pos_mask, float("-inf"))], 1)
        neg_logits = torch.cat([zero_col, (beta * (s - base)).masked_fill(~neg_mask, float("-inf"))], 1)
        per_anchor = torch.logsumexp(pos_logits, 1) / alpha + torch.logsumexp(neg_logits, 1) / beta
    return per_anchor.mean()
