"""One-stage conditional supervised contrastive learning (Chi et al. 2022, §3.2, eq. 4)."""

from __future__ import annotations

from typing import Any, Literal

import torch

from faircl._checks import check_choice, check_in_range, check_positive
from faircl.losses.conditional import CS_REDUCTIONS, chi_contrastive_terms
from faircl.methods.base import FairModule
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
            :func:`faircl.losses.conditional.reduce_cs_terms`.
        proj_dim: output size of the projection head.
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments (``gather_distributed``, ``grad_cache_chunk``,
            ...).
    """

    requires_views = True

    def __init__(
        self,
        lambda_cs: float = 1.0,
        gamma: float = 0.3,
        temperature: float = 0.1,
        cs_temperature: float | None = None,
        cs_normalize: bool = True,
        cs_reduction: Literal["code", "paper"] = "code",
        proj_dim: int = 128,
        **kwargs: Any,
    ) -> None:
        check_positive("lambda_cs", lambda_cs, strict=False)
        check_in_range("gamma", gamma, 0.0, 1.0)
        check_positive("temperature", temperature)
        check_choice("cs_reduction", cs_reduction, CS_REDUCTIONS)
        super().__init__(**kwargs)
        self.lambda_cs, self.gamma, self.temperature = lambda_cs, gamma, temperature
        self.cs_temperature = temperature if cs_temperature is None else cs_temperature
        self.cs_normalize, self.cs_reduction, self.proj_dim = cs_normalize, cs_reduction, proj_dim
        self.projection = ProjectionHead(self.encoder.out_dim, proj_dim)

    def embed_heads(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"z": self.projection(h)}

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        ce = self.classifier_terms(batch, out)["ce"]
        terms = chi_contrastive_terms(out["z"], self.second_view(batch)["z"], batch["y"], batch["a"],
                                      self.temperature, self.cs_temperature, self.cs_normalize, self.cs_reduction,
                                      self.hparams.gather_distributed)
        terms["ce"] = ce
        terms["loss"] = (1 - self.gamma) * ce + self.gamma * terms["sup"] + self.lambda_cs * terms["cs"]
        return terms
