"""Deep metric learning baselines of the finDML benchmark (Dullerud et al., ICLR 2022, §5 and Supplement B).

One method, :class:`DML`, with a ``loss`` × ``miner`` choice covering the objectives the paper benchmarks:

========================  ==========================================================================
``loss``                  objective (``miner`` applies to the tuple losses only)
========================  ==========================================================================
``margin``                margin loss with learnable β (Wu et al. 2018), ``faircl.losses.MarginLoss``
``triplet``               triplet loss ``[d_ap − d_an + γ]_+`` (``faircl.losses.triplet_margin_loss``)
``contrastive``           contrastive pair loss (Hadsell et al. 2006) over mined pairs or all pairs
``multisimilarity``       multi-similarity loss (Wang et al. 2019), ``faircl.losses.multi_similarity_loss``
``proxynca``              ProxyNCA (Movshovitz-Attias et al. 2017), pytorch-metric-learning
``arcface``               ArcFace (Deng et al. 2019), pytorch-metric-learning
========================  ==========================================================================

``miner``: ``distance`` (distance-weighted sampling, Wu et al.), ``semihard`` (Schroff et al.), ``all`` (every
valid triplet / pair of the batch) or ``none`` (required by the losses that do their own weighting).
Batches should be SPC-n (``sampler: samples_per_class`` in the datamodule) so that every anchor has positives.

The embedding is ``z = normalize(W ψ(x))`` (dimension 128 by default). An *online linear probe* on the detached
embedding (trained with cross-entropy, no gradient into the encoder) provides ``logits``, so the prediction-fairness
metrics (``GroupFairness``) and Leakage@ŷ are reported for DML models too; it does not change the embedding.
At test time :meth:`DML.extra_test_metrics` adds the finDML representation metrics: per-group Recall@k, NMI and
U_KL of ``z`` and their gaps.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from faircl.losses import MarginLoss, contrastive_pair_loss, multi_similarity_loss, triplet_margin_loss
from faircl.methods.base import FairModule
from faircl.metrics.representation import representation_report
from faircl.mining import mine_triplets, pairwise_distances

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


class DML(FairModule):
    """Deep metric learning baseline: ``z = normalize(W ψ(x))`` trained with a ranking / proxy loss.

    Args:
        loss: ``margin`` | ``triplet`` | ``contrastive`` | ``multisimilarity`` | ``proxynca`` | ``arcface``.
        miner: ``distance`` | ``semihard`` | ``all`` | ``none`` (see the module docstring).
        embed_dim: embedding dimension (128 in finDML).
        margin: γ of the margin / triplet loss (0.2).
        beta: initial β of the margin loss (1.2).
        beta_lr: learning rate of β (Wu et al.: 5e-4).
        per_class_beta: one β per class.
        pos_margin / neg_margin: contrastive pair margins.
        ms_alpha / ms_beta / ms_base: multi-similarity hyper-parameters (2, 50, 0.5).
        arcface_margin / arcface_scale: ArcFace hyper-parameters (28.6°, 64).
        proxy_lr: learning rate of the ProxyNCA proxies / ArcFace class weights.
        online_probe: train the online linear probe ``z.detach() → logits`` (for the prediction-fairness metrics).
        recall_k: ``k`` of the per-group Recall@k reported at test (Recall@1 is always reported).
        representation_metrics: report the finDML representation metrics at test.
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments (encoder, lr, ...).
    """

    def __init__(
        self,
        loss: str = "margin",
        miner: str = "distance",
        embed_dim: int = 128,
        margin: float = 0.2,
        beta: float = 1.2,
        beta_lr: float = 5e-4,
        per_class_beta: bool = False,
        pos_margin: float = 0.0,
        neg_margin: float = 1.0,
        ms_alpha: float = 2.0,
        ms_beta: float = 50.0,
        ms_base: float = 0.5,
        arcface_margin: float = 28.6,
        arcface_scale: float = 64.0,
        proxy_lr: float = 0.01,
        online_probe: bool = True,
        recall_k: int = 1,
        representation_metrics: bool = True,
        **kwargs: Any,
    ) -> None:
        if embed_dim < 1:
            raise ValueError(f"embed_dim must be >= 1, got {embed_dim}")
        if recall_k < 1:
            raise ValueError(f"recall_k must be >= 1, got {recall_k}")
        super().__init__(**kwargs)

    # ------------------------------------------------------------------ model
    def _objective(self, num_labels: int) -> MetricObjective:
        hp = self.hparams
        return MetricObjective(hp.loss, hp.miner, num_labels, hp.embed_dim, margin=hp.margin, beta=hp.beta,
                               per_class_beta=hp.per_class_beta, pos_margin=hp.pos_margin, neg_margin=hp.neg_margin,
                               ms_alpha=hp.ms_alpha, ms_beta=hp.ms_beta, ms_base=hp.ms_base,
                               arcface_margin=hp.arcface_margin, arcface_scale=hp.arcface_scale)

    def build_heads(self) -> None:
        """Embedding head ``out_dim → embed_dim``, the target objective, and the online probe on ``z``."""
        hp = self.hparams
        self.embed = nn.Linear(self.encoder.out_dim, hp.embed_dim)
        self.objective = self._objective(self.num_classes)
        self.add_online_probe(hp.embed_dim, on="z", trained=hp.online_probe)

    def embed_heads(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{"z": normalize(W h) [B, embed_dim]}`` (the probe's ``logits`` come from ``z.detach()``)."""
        return {"z": F.normalize(self.embed(h), dim=-1)}

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        metric, num_triplets = self.objective(out["z"], batch["y"])
        terms = {"metric": metric, "loss": metric}
        if num_triplets >= 0:
            terms["triplets"] = torch.tensor(float(num_triplets), device=metric.device)
        return self.with_probe_loss(terms, batch, out)

    def module_lrs(self) -> dict[str, dict[str, float]]:
        """Own learning rates of the objectives' parameters: β (``beta_lr``) or proxies (``proxy_lr``), no decay."""
        hp = self.hparams
        lr = hp.beta_lr if hp.loss == "margin" else hp.proxy_lr
        return {name: {"lr": lr, "weight_decay": 0.0} for name in self.objective_names()}

    def objective_names(self) -> list[str]:
        """Attribute names of every metric objective of the model (PARADE adds the sensitive-attribute one)."""
        return ["objective"]

    # ------------------------------------------------------------------ evaluation
    def extra_test_metrics(self, outputs: dict[str, torch.Tensor]) -> dict[str, float]:
        """finDML representation metrics of the test embeddings ``z`` (:func:`faircl.metrics.representation_report`)."""
        if not self.hparams.representation_metrics or "z" not in outputs:
            return {}
        return representation_report(outputs["z"], outputs["y"], outputs["a"], num_classes=self.num_classes,
                                     num_groups=self.num_groups, group_names=self._group_names(),
                                     ks=(self.hparams.recall_k,))
