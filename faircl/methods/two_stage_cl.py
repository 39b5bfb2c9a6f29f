"""Two-stage conditional supervised contrastive learning (Chi et al. 2022, §3.2, eq. 3).

Stage 1 (``contrastive``) trains the encoder and a projection head with ``L_sup + λ·L_CS-InfoNCE`` on two augmented
views; stage 2 (``classifier``) freezes them and trains a 2-layer MLP classifier with cross-entropy. Both stages run
in one ``fit``; the stage is derived from the epoch, so a checkpoint resumes into the right one.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.nn import functional as F

from faircl.methods.base import FairModule
from faircl.models.heads import ProjectionHead, mlp


def second_view(method: FairModule, batch: dict[str, Any]) -> Any:
    """The second augmented view ``batch["x2"]``, or a clear error saying how to get one."""
    if "x2" not in batch:
        raise KeyError(
            f"{type(method).__name__} trains on two augmented views but the batch has no 'x2': set "
            "`data.init_args.two_views: true` (the datamodule must define a view_transform)"
        )
    return batch["x2"]


def chi_contrastive_terms(z1: torch.Tensor, z2: torch.Tensor, y: torch.Tensor, a: torch.Tensor,
                          temperature: float, cs_temperature: float, cs_normalize: bool) -> dict[str, torch.Tensor]:
    """``L_sup`` on the ``2N`` stacked views and ``L_CS-InfoNCE`` (Chi et al. eq. 2) of a two-view batch.

    Args:
        z1: first-view embeddings ``[N, d]``.
        z2: second-view embeddings ``[N, d]``.
        y: task labels ``[N]``.
        a: protected attributes ``[N]`` (``-1`` = unknown).
        temperature: τ of ``L_sup``.
        cs_temperature: τ of ``L_CS``.
        cs_normalize: L2-normalise the embeddings inside ``L_CS``.

    Returns:
        ``{"sup": L_sup, "cs": L_CS}``.
    """
    from faircl.losses import cs_infonce_loss, supcon_loss

    sup = supcon_loss(torch.cat([z1, z2]), torch.cat([y, y]), temperature=temperature)
    cs = cs_infonce_loss(z1, z2, y, a, temperature=cs_temperature, normalize=cs_normalize)
    return {"sup": sup, "cs": cs}


class TwoStageCL(FairModule):
    """Two-stage fair contrastive learning: ``L_sup + λ·L_CS`` pre-training, then a CE classifier on frozen features.

    ``forward`` returns ``h`` (encoder output), ``z`` (L2-normalised projection used by the losses) and ``logits``
    (the stage-2 classifier; untrained during stage 1).

    Under DDP, stages leave some parameters without gradients (the heads of the other stage, the frozen
    encoder): use ``--trainer.strategy ddp_find_unused_parameters_true``.

    Args:
        lam: λ, weight of ``L_CS-InfoNCE`` (paper grid 0–10; ``0`` is plain SupCon pre-training).
        temperature: τ of ``L_sup`` (paper grid 0.1–2).
        cs_temperature: τ of ``L_CS`` (default: ``temperature``).
        cs_normalize: L2-normalise the embeddings inside ``L_CS`` (the authors' code does not; the paper's
            similarity is a dot product of the encoder features).
        proj_dim: output size of the projection head.
        contrastive_epochs: epochs of stage 1; the remaining epochs of the run train the classifier.
        stage2_hidden: hidden width of the stage-2 MLP classifier (``0``: the encoder width).
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments (encoder, optimiser, ...).
    """

    def __init__(
        self,
        lam: float = 1.0,
        temperature: float = 0.1,
        cs_temperature: float | None = None,
        cs_normalize: bool = True,
        proj_dim: int = 128,
        contrastive_epochs: int = 5,
        stage2_hidden: int = 0,
        **kwargs: Any,
    ) -> None:
        if lam < 0:
            raise ValueError(f"lam must be >= 0, got {lam}")
        if contrastive_epochs < 1:
            raise ValueError(f"contrastive_epochs must be >= 1, got {contrastive_epochs}")
        self.lam, self.temperature = lam, temperature
        self.cs_temperature = temperature if cs_temperature is None else cs_temperature
        self.cs_normalize, self.proj_dim, self.contrastive_epochs = cs_normalize, proj_dim, contrastive_epochs
        self.stage2_hidden = stage2_hidden
        super().__init__(**kwargs)

    def build_heads(self) -> None:
        d = self.encoder.out_dim
        self.projection = ProjectionHead(d, self.proj_dim)
        # The stage-2 classifier exists from the start so the optimiser holds it in both stages.
        self.classifier = mlp(d, self.stage2_hidden or d, self.num_classes, num_layers=2)

    def forward(self, x: Any) -> dict[str, torch.Tensor]:
        h = self.encoder(x)
        return {"h": h, "z": self.projection(h), "logits": self.classifier(h)}

    def stage_epochs(self) -> list[tuple[str, int | None]]:
        return [("contrastive", self.contrastive_epochs), ("classifier", None)]

    def on_stage_start(self, stage: str) -> None:
        if stage == "classifier":
            self.freeze_module(self.encoder)
            self.freeze_module(self.projection)

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        if self.stage == "classifier" and self.encoder.training:
            # Lightning puts the whole module back in train mode after validation; the frozen encoder stays in eval.
            self.encoder.eval()
            self.projection.eval()
        return super().training_step(batch, batch_idx)

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self.stage == "classifier":
            ce = F.cross_entropy(out["logits"].float(), batch["y"])
            return {"ce": ce, "loss": ce}
        z2 = self.projection(self.encoder(second_view(self, batch)))
        terms = chi_contrastive_terms(out["z"], z2, batch["y"], batch["a"], self.temperature, self.cs_temperature,
                                      self.cs_normalize)
        terms["loss"] = terms["sup"] + self.lam * terms["cs"]
        return terms
