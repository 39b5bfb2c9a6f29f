"""One-stage conditional supervised contrastive learning (Chi et al. 2022, §3.2, eq. 4)."""

from __future__ import annotations

from typing import Any

import torch
from torch.nn import functional as F

from faircl.methods.base import FairModule
from faircl.methods.two_stage_cl import chi_contrastive_terms
from faircl.models.heads import ProjectionHead


class OneStageCL(FairModule):
    """End-to-end ``(1−γ)·L_CE + γ·L_sup + λ_CS·L_CS-InfoNCE`` on two augmented views (CE on the first view).

    ``forward`` returns ``h``, ``z`` (L2-normalised projection of ``h``) and ``logits``.

    Args:
        lambda_cs: λ, weight of ``L_CS-InfoNCE``.
        gamma: γ ∈ [0, 1], share of ``L_sup`` against ``L_CE`` (0.3 in the authors' code).
        temperature: τ of ``L_sup``.
        cs_temperature: τ of ``L_CS`` (default: ``temperature``).
        cs_normalize: L2-normalise the embeddings inside ``L_CS``.
        proj_dim: output size of the projection head.
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments.
    """

    def __init__(
        self,
        lambda_cs: float = 1.0,
        gamma: float = 0.3,
        temperature: float = 0.1,
        cs_temperature: float | None = None,
        cs_normalize: bool = True,
        proj_dim: int = 128,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if lambda_cs < 0:
            raise ValueError(f"lambda_cs must be >= 0, got {lambda_cs}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.lambda_cs, self.gamma, self.temperature = lambda_cs, gamma, temperature
        self.cs_temperature = temperature if cs_temperature is None else cs_temperature
        self.cs_normalize, self.proj_dim = cs_normalize, proj_dim

    def build_heads(self) -> None:
        super().build_heads()
        self.projection = ProjectionHead(self.encoder.out_dim, self.proj_dim)

    def embed_heads(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"z": self.projection(h)}

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        ce = F.cross_entropy(out["logits"].float(), batch["y"])
        z2 = self.projection(self.encoder(self.require_views(batch)))
        terms = chi_contrastive_terms(out["z"], z2, batch["y"], batch["a"], self.temperature, self.cs_temperature,
                                      self.cs_normalize)
        terms["ce"] = ce
        terms["loss"] = (1 - self.gamma) * ce + self.gamma * terms["sup"] + self.lambda_cs * terms["cs"]
        return terms
