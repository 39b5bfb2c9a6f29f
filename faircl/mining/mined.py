"""DML's objective: a ranking / proxy loss composed with a triplet miner (the finDML benchmark's ``loss`` × ``miner``
choice, Dullerud et al., ICLR 2022, Supplement B), as one module over embeddings and integer labels.

It composes a miner of :mod:`faircl.mining` with a loss of :mod:`faircl.losses`, so it lives with the miners
(``faircl.mining.mined``): the miners build on the losses' pair structure, and the losses never import the miners.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from faircl.losses.margin import MarginLoss, contrastive_pair_loss, multi_similarity_loss, triplet_margin_loss
from faircl.losses.pairs import pairwise_distances
from faircl.mining import mine_triplets

__all__ = ["LOSSES", "MINERS", "PML_LOSSES", "TUPLE_LOSSES", "MetricObjective", "mined_contrastive_loss"]

LOSSES = ("margin", "triplet", "contrastive", "multisimilarity", "proxynca", "arcface")
MINERS = ("distance", "semihard", "all", "none")
TUPLE_LOSSES = ("margin", "triplet", "contrastive")
PML_LOSSES = ("proxynca", "arcface")

Triplets = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def _pml_losses():
    """pytorch-metric-learning's ``losses`` module, imported only when a ProxyNCA / ArcFace model is built.

    ProxyNCA and ArcFace are benchmark baselines only: no faircl method builds on them, they carry their own
    learnable proxies / class weights and several published variants (scales, margins, proxy initialisation).
    Using pytorch-metric-learning's maintained and tested implementations (optional extra ``dml``) keeps the
    baselines comparable with the DML literature at no maintenance cost; everything faircl's methods need
    (margin, triplet, contrastive, multi-similarity losses and the miners) is implemented in ``faircl.losses`` /
    ``faircl.mining`` and verified there.
    """
    try:
        from pytorch_metric_learning import losses
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "DML(loss='proxynca'|'arcface') needs pytorch-metric-learning; install the optional extra: "
            "pip install 'faircl[dml]' (or pip install pytorch-metric-learning)"
        ) from err
    return losses


def mined_contrastive_loss(z: torch.Tensor, triplets: Triplets, pos_margin: float = 0.0, neg_margin: float = 1.0,
                           normalize: bool = True) -> torch.Tensor:
    """Contrastive pair loss (Hadsell et al. 2006) over the pairs of mined triplets (Wu et al.'s "contrastive + D").

    Each triplet ``(a, p, n)`` gives the positive pair ``(a, p)`` and the negative pair ``(a, n)``:
    ``mean⁺_{(a,p)} [d_ap − m_pos]_+ + mean⁺_{(a,n)} [m_neg − d_an]_+``, each mean over its non-zero terms
    (the reduction of :func:`faircl.losses.contrastive_pair_loss`).

    Args:
        z: embeddings ``[B, d]``.
        triplets: long index tensors ``[T]`` each.
        pos_margin / neg_margin: the pair margins.
        normalize: L2-normalise ``z`` first.
    """
    a, p, n = triplets
    if a.numel() == 0:
        return (z.float() * 0.0).sum()
    with torch.autocast(device_type=z.device.type, enabled=False):
        d = pairwise_distances(z.float() if z.dtype in (torch.float16, torch.bfloat16) else z, normalize)
        pos = F.relu(d[a, p] - pos_margin)
        neg = F.relu(neg_margin - d[a, n])
    return pos.sum() / (pos > 0).sum().clamp(min=1) + neg.sum() / (neg > 0).sum().clamp(min=1)


class MetricObjective(nn.Module):
    """One DML objective ``(loss, miner)`` over embeddings and integer labels, with its learnable state.

    Args:
        loss: one of :data:`LOSSES`.
        miner: one of :data:`MINERS` (``none`` for ``multisimilarity`` / ``proxynca`` / ``arcface``).
        num_labels: number of label values (classes, or attribute groups for PARADE's SA head).
        embed_dim: embedding width (for the proxy / class-weight losses).
        margin: γ of the margin and triplet losses.
        beta: initial β of the margin loss.
        per_class_beta: one β per label value instead of a shared one.
        pos_margin / neg_margin: margins of the contrastive pair loss.
        ms_alpha / ms_beta / ms_base: multi-similarity α, β, λ.
        arcface_margin / arcface_scale: ArcFace angular margin (degrees) and scale.
    """

    def __init__(self, loss: str = "margin", miner: str = "distance", num_labels: int = 2, embed_dim: int = 128,
                 margin: float = 0.2, beta: float = 1.2, per_class_beta: bool = False, pos_margin: float = 0.0,
                 neg_margin: float = 1.0, ms_alpha: float = 2.0, ms_beta: float = 50.0, ms_base: float = 0.5,
                 arcface_margin: float = 28.6, arcface_scale: float = 64.0) -> None:
        super().__init__()
        if loss not in LOSSES:
            raise ValueError(f"loss={loss!r} is not one of {LOSSES}")
        if miner not in MINERS:
            raise ValueError(f"miner={miner!r} is not one of {MINERS}")
        if loss in TUPLE_LOSSES and miner == "none":
            raise ValueError(f"loss={loss!r} needs triplets: choose miner 'distance', 'semihard' or 'all'")
        if loss not in TUPLE_LOSSES and miner not in ("none", "all"):
            raise ValueError(f"loss={loss!r} weights all pairs / proxies itself: set miner='none' (got {miner!r})")
        self.loss, self.miner = loss, miner
        self.margin, self.pos_margin, self.neg_margin = margin, pos_margin, neg_margin
        self.ms = (ms_alpha, ms_beta, ms_base)
        if loss == "margin":
            self.criterion = MarginLoss(margin=margin, beta=beta, num_classes=num_labels if per_class_beta else None)
        elif loss == "proxynca":
            self.criterion = _pml_losses().ProxyNCALoss(num_classes=num_labels, embedding_size=embed_dim)
        elif loss == "arcface":
            self.criterion = _pml_losses().ArcFaceLoss(num_classes=num_labels, embedding_size=embed_dim,
                                                       margin=arcface_margin, scale=arcface_scale)
        else:
            self.criterion = None

    def learnable_parameters(self) -> list[nn.Parameter]:
        """β of the margin loss, or the proxies / class weights (they get their own learning rate)."""
        return [p for p in self.parameters() if p.requires_grad]

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Loss of embeddings ``z`` ``[B, d]`` with labels ``[B]`` and the number of mined triplets (``-1`` if none)."""
        if self.loss in TUPLE_LOSSES:
            if self.loss == "contrastive" and self.miner == "all":
                return contrastive_pair_loss(z, labels, self.pos_margin, self.neg_margin), -1
            triplets = mine_triplets(z, labels, self.miner)
            if self.loss == "margin":
                value = self.criterion(z, labels, triplets=triplets)
            elif self.loss == "triplet":
                value = triplet_margin_loss(z, triplets=triplets, margin=self.margin)
            else:
                value = mined_contrastive_loss(z, triplets, self.pos_margin, self.neg_margin)
            return value, int(triplets[0].numel())
        if self.loss == "multisimilarity":
            return multi_similarity_loss(z, labels, *self.ms), -1
        known = labels >= 0  # proxy losses need a label for every row
        if not bool(known.any()):
            return (z.float() * 0.0).sum() + 0.0 * sum(p.sum() for p in self.criterion.parameters()), -1
        return self.criterion(z[known].float(), labels[known]), -1
