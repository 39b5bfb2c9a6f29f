"""One-stage conditional supervised contrastive learning (Chi et al. 2022, §3.2, eq. 4)."""

from __future__ import annotations

from typing import Any

import torch
from torch.nn import functional as F

from faircl.methods.base import FairModule
from faircl.methods.scale import view_outputs
from faircl.methods.two_stage_cl import CS_REDUCTIONS, chi_contrastive_terms
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
        cs_reduction: ``"code"`` (default, the authors' code: mean over the ``2N`` anchors of the unweighted
            per-anchor terms, the scale of the paper's λ grid) or ``"paper"`` (eq. 2's weighted sum); see
            :func:`faircl.methods.two_stage_cl.reduce_cs_terms`.
        proj_dim: output size of the projection head.
        gather_distributed: under DDP, contrast the local anchors with every process's rows (the loss of the global
            batch, exact gradients after DDP averaging).
        grad_cache_chunk: train with a gradient cache of this many rows per chunk (see :mod:`faircl.methods.scale`).
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments.
    """

    requires_views = True

    def __init__(
        self,
        lambda_cs: float = 1.0,
        gamma: float = 0.3,
        temperature: float = 0.1,
        cs_temperature: float | None = None,
        cs_normalize: bool = True,
        cs_reduction: str = "code",
        proj_dim: int = 128,
        gather_distributed: bool = True,
        grad_cache_chunk: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if lambda_cs < 0:
            raise ValueError(f"lambda_cs must be >= 0, got {lambda_cs}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        if cs_reduction not in CS_REDUCTIONS:
            raise ValueError(f"cs_reduction={cs_reduction!r} must be one of {CS_REDUCTIONS}")
        self.cs_reduction = cs_reduction
        self.lambda_cs, self.gamma, self.temperature = lambda_cs, gamma, temperature
        self.cs_temperature = temperature if cs_temperature is None else cs_temperature
        self.cs_normalize, self.proj_dim = cs_normalize, proj_dim
        if grad_cache_chunk is not None and grad_cache_chunk < 1:
            raise ValueError(f"grad_cache_chunk must be >= 1 or None, got {grad_cache_chunk}")
        self.gather_distributed, self.grad_cache_chunk = gather_distributed, grad_cache_chunk
        self.automatic_optimization = grad_cache_chunk is None

    def build_heads(self) -> None:
        super().build_heads()
        self.projection = ProjectionHead(self.encoder.out_dim, self.proj_dim)

    def embed_heads(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"z": self.projection(h)}

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        ce = F.cross_entropy(out["logits"].float(), batch["y"])
        z2 = view_outputs(self, batch)["z"]
        terms = chi_contrastive_terms(out["z"], z2, batch["y"], batch["a"], self.temperature, self.cs_temperature,
                                      self.cs_normalize, self.cs_reduction, self.gather_distributed)
        terms["ce"] = ce
        terms["loss"] = (1 - self.gamma) * ce + self.gamma * terms["sup"] + self.lambda_cs * terms["cs"]
        return terms
