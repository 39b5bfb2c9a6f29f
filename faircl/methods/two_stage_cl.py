"""Two-stage conditional supervised contrastive learning (Chi et al. 2022, §3.2, eq. 3).

Stage 1 (``contrastive``) trains the encoder and a projection head with ``L_sup + λ_CS·L_CS-InfoNCE`` on two
augmented views; stage 2 (``classifier``) freezes them and trains a 2-layer MLP classifier with cross-entropy. Both
stages run in one ``fit``; the stage is derived from the epoch, so a checkpoint resumes into the right one.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.nn import functional as F

from faircl.losses import cs_infonce_loss, supcon_loss
from faircl.methods.base import FairModule
from faircl.methods.scale import view_outputs
from faircl.models.heads import ProjectionHead, mlp


CS_REDUCTIONS = ("code", "paper")


def reduce_cs_terms(z1: torch.Tensor, z2: torch.Tensor, labels: torch.Tensor, groups: torch.Tensor,
                    temperature: float, normalize: bool, cs_reduction: str = "code",
                    gather_distributed: bool = False) -> torch.Tensor:
    """``L_CS-InfoNCE`` under the reduction that puts λ on the scale of Chi et al.'s experiments.

    * ``"code"`` (default): the mean over the ``2N`` anchors of the **unweighted** per-anchor terms ``−log ℓ_i``
      (anchors alone with their pair in their (a, y) cell count as 0), as in the authors' released code, where
      ``L_sup`` is also a mean over anchors. The paper's λ grid (0–10) was run with this reduction.
    * ``"paper"``: eq. 2 as printed, ``Σ_i 1/(N_{a_i,y_i} − 1)·(−log ℓ_i)``. Its weights of a cell sum to about 1,
      so the value is about "number of (a, y) cells × mean term": against a per-anchor-mean ``L_sup`` the same λ
      acts about #cells times more strongly than under ``"code"``. Kept for comparison with the equation.

    Departure from the paper as written: the default follows the authors' code (the reduction under which the
    reported λ values were measured), not the weighted sum of eq. 2.
    """
    if cs_reduction not in CS_REDUCTIONS:
        raise ValueError(f"cs_reduction={cs_reduction!r} must be one of {CS_REDUCTIONS}")
    if cs_reduction == "paper":
        return cs_infonce_loss(z1, z2, labels, groups, temperature=temperature, normalize=normalize,
                               gather_distributed=gather_distributed)
    terms = cs_infonce_loss(z1, z2, labels, groups, temperature=temperature, normalize=normalize, reduction="none",
                            gather_distributed=gather_distributed)
    return terms.mean()


def chi_contrastive_terms(z1: torch.Tensor, z2: torch.Tensor, labels: torch.Tensor, groups: torch.Tensor,
                          temperature: float, cs_temperature: float, cs_normalize: bool,
                          cs_reduction: str = "code", gather_distributed: bool = False) -> dict[str, torch.Tensor]:
    """``L_sup`` on the ``2N`` stacked views and ``L_CS-InfoNCE`` (Chi et al. eq. 2) of a two-view batch.

    Args:
        z1: first-view embeddings ``[N, d]``.
        z2: second-view embeddings ``[N, d]``.
        labels: task labels ``[N]``.
        groups: protected attributes ``[N]`` (``-1`` = unknown).
        temperature: τ of ``L_sup``.
        cs_temperature: τ of ``L_CS``.
        cs_normalize: L2-normalise the embeddings inside ``L_CS``.
        cs_reduction: ``"code"`` (mean of the unweighted per-anchor terms) or ``"paper"`` (eq. 2's weighted sum);
            see :func:`reduce_cs_terms`.
        gather_distributed: contrast the local anchors with every process's rows (the losses'
            ``gather_distributed``); the value and, after DDP averaging, the gradients are those of the
            concatenated global batch.

    Returns:
        ``{"sup": L_sup, "cs": L_CS}``.
    """
    sup = supcon_loss(torch.cat([z1, z2]), torch.cat([labels, labels]), temperature=temperature,
                      gather_distributed=gather_distributed)
    cs = reduce_cs_terms(z1, z2, labels, groups, cs_temperature, cs_normalize, cs_reduction, gather_distributed)
    return {"sup": sup, "cs": cs}


class TwoStageCL(FairModule):
    """Two-stage fair contrastive learning: ``L_sup + λ_CS·L_CS`` pre-training, then a CE classifier on frozen
    features.

    ``forward`` returns ``h`` (encoder output), ``z`` (L2-normalised projection used by the losses) and ``logits``
    (the stage-2 classifier; untrained during stage 1).

    Each stage freezes the parameters it does not train (the classifier in stage 1; the encoder and projection in
    stage 2) and the DDP wrapper is rebuilt at the stage start, so plain ``--trainer.strategy ddp`` works.

    Args:
        lambda_cs: λ, weight of ``L_CS-InfoNCE`` (paper grid 0–10; ``0`` is plain SupCon pre-training).
        temperature: τ of ``L_sup`` (paper grid 0.1–2).
        cs_temperature: τ of ``L_CS`` (default: ``temperature``).
        cs_normalize: L2-normalise the embeddings inside ``L_CS`` (the authors' code does not; the paper's
            similarity is a dot product of the encoder features).
        cs_reduction: ``"code"`` (default: mean over the ``2N`` anchors of the unweighted terms, as in the authors'
            code, so λ is on the scale of the paper's grid) or ``"paper"`` (eq. 2's ``1/(N_{a,y}−1)``-weighted
            sum, about #cells times larger); see :func:`reduce_cs_terms`.
        proj_dim: output size of the projection head.
        stage1_epochs: epochs of stage 1; the remaining epochs of the run train the classifier.
        stage2_hidden: hidden width of the stage-2 MLP classifier (``0``: the encoder width).
        gather_distributed: under DDP, contrast the local anchors with every process's rows (the loss of the global
            batch, exact gradients after DDP averaging).
        grad_cache_chunk: train with a gradient cache of this many rows per chunk (memory of a ``chunk``-row
            step, gradients of the whole batch; manual optimisation, see :mod:`faircl.methods.scale`).
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments (encoder, optimiser, ...).
    """

    requires_views = True

    def __init__(
        self,
        lambda_cs: float = 1.0,
        temperature: float = 0.1,
        cs_temperature: float | None = None,
        cs_normalize: bool = True,
        cs_reduction: str = "code",
        proj_dim: int = 128,
        stage1_epochs: int = 5,
        stage2_hidden: int = 0,
        gather_distributed: bool = True,
        grad_cache_chunk: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if lambda_cs < 0:
            raise ValueError(f"lambda_cs must be >= 0, got {lambda_cs}")
        if stage1_epochs < 1:
            raise ValueError(f"stage1_epochs must be >= 1, got {stage1_epochs}")
        if cs_reduction not in CS_REDUCTIONS:
            raise ValueError(f"cs_reduction={cs_reduction!r} must be one of {CS_REDUCTIONS}")
        self.cs_reduction = cs_reduction
        self.lambda_cs, self.temperature = lambda_cs, temperature
        self.cs_temperature = temperature if cs_temperature is None else cs_temperature
        self.cs_normalize, self.proj_dim, self.stage1_epochs = cs_normalize, proj_dim, stage1_epochs
        self.stage2_hidden = stage2_hidden
        if grad_cache_chunk is not None and grad_cache_chunk < 1:
            raise ValueError(f"grad_cache_chunk must be >= 1 or None, got {grad_cache_chunk}")
        self.gather_distributed, self.grad_cache_chunk = gather_distributed, grad_cache_chunk
        self.automatic_optimization = grad_cache_chunk is None

    def build_heads(self) -> None:
        d = self.encoder.out_dim
        self.projection = ProjectionHead(d, self.proj_dim)
        # The stage-2 classifier exists from the start so the optimiser holds it in both stages.
        self.classifier = mlp(d, self.stage2_hidden or d, self.num_classes, num_layers=2)

    def embed_heads(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"z": self.projection(h)}

    def stage_epochs(self) -> list[tuple[str, int | None]]:
        return [("contrastive", self.stage1_epochs), ("classifier", None)]

    def on_stage_start(self, stage: str) -> None:
        if stage == "classifier":
            self.freeze_module(self.encoder)
            self.freeze_module(self.projection)
            self.unfreeze_module(self.classifier)
        else:
            self.freeze_module(self.classifier)

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self.stage == "classifier":
            ce = F.cross_entropy(out["logits"].float(), batch["y"])
            return {"ce": ce, "loss": ce}
        z2 = view_outputs(self, batch)["z"]
        terms = chi_contrastive_terms(out["z"], z2, batch["y"], batch["a"], self.temperature, self.cs_temperature,
                                      self.cs_normalize, self.cs_reduction, self.gather_distributed)
        terms["loss"] = terms["sup"] + self.lambda_cs * terms["cs"]
        return terms
