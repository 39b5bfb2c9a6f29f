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

from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from faircl._checks import check_positive
from faircl.mining.mined import LOSSES, MINERS, PML_LOSSES, TUPLE_LOSSES, MetricObjective, mined_contrastive_loss
from faircl.methods.base import FairModule
from faircl.metrics.representation import representation_report

__all__ = ["DML", "LOSSES", "MINERS", "PML_LOSSES", "TUPLE_LOSSES", "MetricObjective", "mined_contrastive_loss"]


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

    supports_grad_cache = False  # β, the proxies (and PARADE's ξ) train inside the loss, out of the cache's reach

    def __init__(
        self,
        loss: Literal["margin", "triplet", "contrastive", "multisimilarity", "proxynca", "arcface"] = "margin",
        miner: Literal["distance", "semihard", "all", "none"] = "distance",
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
        check_positive("embed_dim", embed_dim, minimum=1)
        check_positive("recall_k", recall_k, minimum=1)
        super().__init__(**kwargs)
        # the objective's options, for every objective of the model (PARADE builds a second one)
        self.objective_options = dict(loss=loss, miner=miner, embed_dim=embed_dim, margin=margin, beta=beta,
                                      per_class_beta=per_class_beta, pos_margin=pos_margin, neg_margin=neg_margin,
                                      ms_alpha=ms_alpha, ms_beta=ms_beta, ms_base=ms_base,
                                      arcface_margin=arcface_margin, arcface_scale=arcface_scale)
        self.loss, self.embed_dim, self.beta_lr, self.proxy_lr = loss, embed_dim, beta_lr, proxy_lr
        self.online_probe, self.recall_k, self.representation_metrics = (online_probe, recall_k,
                                                                         representation_metrics)
        self.embed = nn.Linear(self.encoder.out_dim, embed_dim)
        self.objective = self.metric_objective(self.num_classes)
        self.add_online_probe(embed_dim, on="z", trained=online_probe)

    def metric_objective(self, num_labels: int) -> MetricObjective:
        """A :class:`~faircl.mining.mined.MetricObjective` with this model's options over ``num_labels`` labels."""
        return MetricObjective(num_labels=num_labels, **self.objective_options)

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
        lr = self.beta_lr if self.loss == "margin" else self.proxy_lr
        return {name: {"lr": lr, "weight_decay": 0.0} for name in self.objective_names()}

    def objective_names(self) -> list[str]:
        """Attribute names of every metric objective of the model (PARADE adds the sensitive-attribute one)."""
        return ["objective"]

    # ------------------------------------------------------------------ evaluation
    def extra_test_metrics(self, outputs: dict[str, torch.Tensor]) -> dict[str, float]:
        """finDML representation metrics of the test embeddings ``z`` (:func:`faircl.metrics.representation_report`)."""
        if not self.representation_metrics or "z" not in outputs:
            return {}
        return representation_report(outputs["z"], outputs["y"], outputs["a"], num_classes=self.num_classes,
                                     num_groups=self.num_groups, group_names=self.group_names(),
                                     ks=(self.recall_k,))
