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
from faircl.models.heads import ProjectionHead, mlp


def chi_contrastive_terms(z1: torch.Tensor, z2: torch.Tensor, labels: torch.Tensor, groups: torch.Tensor,
                          temperature: float, cs_temperature: float, cs_normalize: bool) -> dict[str, torch.Tensor]:
    """``L_sup`` on the ``2N`` stacked views and ``L_CS-InfoNCE`` (Chi et al. eq. 2) of a two-view batch.

    Args:
        z1: first-view embeddings ``[N, d]``.
        z2: second-view embeddings ``[N, d]``.
        labels: task labels ``[N]``.
        groups: protected attributes ``[N]`` (``-1`` = unknown).
        temperature: τ of ``L_sup``.
        cs_temperature: τ of ``L_CS``.
        cs_normalize: L2-normalise the embeddings inside ``L_CS``.

    Returns:
        ``{"sup": L_sup, "cs": L_CS}``.
    """
    sup = supcon_loss(torch.cat([z1, z2]), torch.cat([labels, labels]), temperature=temperature)
    cs = cs_infonce_loss(z1, z2, labels, groups, temperature=cs_temperature, normalize=cs_normalize)
    return {"sup": sup, "cs": cs}


class TwoStageCL(FairModule):
    """Two-stage fair contrastive learning: ``L_sup + λ_CS·L_CS`` pre-training, then a CE classifier on frozen
    features.

    ``forward`` returns ``h`` (encoder output), ``z`` (L2-normalised projection used by the losses) and ``logits``
    (the stage-2 classifier; untrained during stage 1).

    Under DDP, stages leave some parameters without gradients (the heads of the other stage, the frozen
    encoder): use ``--trainer.strategy ddp_find_unused_parameters_true``.

    Args:
        lambda_cs: λ, weight of ``L_CS-InfoNCE`` (paper grid 0–10; ``0`` is plain SupCon pre-training).
        temperature: τ of ``L_sup`` (paper grid 0.1–2).
        cs_temperature: τ of ``L_CS`` (default: ``temperature``).
        cs_normalize: L2-normalise the embeddings inside ``L_CS`` (the authors' code does not; the paper's
            similarity is a dot product of the encoder features).
        proj_dim: output size of the projection head.
        stage1_epochs: epochs of stage 1; the remaining epochs of the run train the classifier.
        stage2_hidden: hidden width of the stage-2 MLP classifier (``0``: the encoder width).
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments (encoder, optimiser, ...).
    """

    def __init__(
        self,
        lambda_cs: float = 1.0,
        temperature: float = 0.1,
        cs_temperature: float | None = None,
        cs_normalize: bool = True,
        proj_dim: int = 128,
        stage1_epochs: int = 5,
        stage2_hidden: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if lambda_cs < 0:
            raise ValueError(f"lambda_cs must be >= 0, got {lambda_cs}")
        if stage1_epochs < 1:
            raise ValueError(f"stage1_epochs must be >= 1, got {stage1_epochs}")
        self.lambda_cs, self.temperature = lambda_cs, temperature
        self.cs_temperature = temperature if cs_temperature is None else cs_temperature
        self.cs_normalize, self.proj_dim, self.stage1_epochs = cs_normalize, proj_dim, stage1_epochs
        self.stage2_hidden = stage2_hidden

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

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self.stage == "classifier":
            ce = F.cross_entropy(out["logits"].float(), batch["y"])
            return {"ce": ce, "loss": ce}
        z2 = self.projection(self.encoder(self.require_views(batch)))
        terms = chi_contrastive_terms(out["z"], z2, batch["y"], batch["a"], self.temperature, self.cs_temperature,
                                      self.cs_normalize)
        terms["loss"] = terms["sup"] + self.lambda_cs * terms["cs"]
        return terms
