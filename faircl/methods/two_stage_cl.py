"""Two-stage conditional supervised contrastive learning (Chi et al. 2022, §3.2, eq. 3).

Stage 1 (``contrastive``) trains the encoder and a projection head with ``L_sup + λ_CS·L_CS-InfoNCE`` on two
augmented views; stage 2 (``classifier``) freezes them and trains a 2-layer MLP classifier with cross-entropy. Both
stages run in one ``fit``; the stage is derived from the epoch, so a checkpoint resumes into the right one.
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from faircl._checks import check_choice, check_positive
from faircl.losses.conditional import CS_REDUCTIONS, chi_contrastive_terms
from faircl.methods.base import FairModule
from faircl.models.heads import ProjectionHead, mlp


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
            sum, about #cells times larger); see :func:`faircl.losses.conditional.reduce_cs_terms`.
        proj_dim: output size of the projection head.
        stage1_epochs: epochs of stage 1; the remaining epochs of the run train the classifier.
        stage2_hidden: hidden width of the stage-2 MLP classifier (``0``: the encoder width).
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments (encoder, optimiser, ``gather_distributed``,
            ``grad_cache_chunk``, ...).
    """

    requires_views = True

    def __init__(
        self,
        lambda_cs: float = 1.0,
        temperature: float = 0.1,
        cs_temperature: float | None = None,
        cs_normalize: bool = True,
        cs_reduction: Literal["code", "paper"] = "code",
        proj_dim: int = 128,
        stage1_epochs: int = 5,
        stage2_hidden: int = 0,
        **kwargs: Any,
    ) -> None:
        check_positive("lambda_cs", lambda_cs, strict=False)
        check_positive("temperature", temperature)
        check_positive("stage1_epochs", stage1_epochs, minimum=1)
        check_choice("cs_reduction", cs_reduction, CS_REDUCTIONS)
        super().__init__(**kwargs)
        self.lambda_cs, self.temperature, self.cs_normalize, self.cs_reduction = (lambda_cs, temperature,
                                                                                  cs_normalize, cs_reduction)
        self.cs_temperature = temperature if cs_temperature is None else cs_temperature
        self.proj_dim, self.stage1_epochs, self.stage2_hidden = proj_dim, stage1_epochs, stage2_hidden
        d = self.encoder.out_dim
        self.projection = ProjectionHead(d, proj_dim)
        # The stage-2 classifier exists from the start so the optimiser holds it in both stages.
        self.classifier = mlp(d, stage2_hidden or d, self.num_classes, num_layers=2)

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
            return self.classifier_terms(batch, out)
        terms = chi_contrastive_terms(out["z"], self.second_view(batch)["z"], batch["y"], batch["a"],
                                      self.temperature, self.cs_temperature, self.cs_normalize, self.cs_reduction,
                                      self.hparams.gather_distributed)
        terms["loss"] = terms["sup"] + self.lambda_cs * terms["cs"]
        return terms
