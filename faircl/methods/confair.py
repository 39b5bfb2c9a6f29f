"""ConFair: fair supervised contrastive learning (Shen et al. 2021, eq. 3), end-to-end ``Con_*`` and pipelined
``Con_*^ft``."""

from __future__ import annotations

from typing import Any

import torch
from torch.nn import functional as F

from faircl.losses import fcl_loss, supcon_loss
from faircl.methods.base import FairModule

FCL_CONDITIONING = ("none", "class")


class ConFair(FairModule):
    """``L_* = α·L_ce + β·(L_scl − λ_fcl·L_fcl)`` on single-view batches (Shen et al. 2021, eq. 3).

    ``L_scl`` is SupCon with the task label, ``L_fcl`` SupCon with the protected attribute; both act on
    ``z = l2(h)``, the L2-normalised encoder output (Shen: the tanh hidden layer of ``Enc``; no extra parameters),
    or on ``h`` itself with ``normalize=False`` (fairlib).
    Subtracting ``L_fcl`` pushes apart instances that share the attribute, mixing the groups.

    With ``pipeline=True`` this is ``Con_*^ft``: stage ``contrastive`` trains the encoder with ``L_scl − L_fcl``
    only (``stage1_epochs`` epochs), then stage ``classifier`` freezes it and trains the classifier with
    cross-entropy (a logistic regression with the default linear classifier).

    With ``pipeline=True`` each stage freezes what it does not train (the classifier in stage ``contrastive``, the
    encoder in stage ``classifier``) and the DDP wrapper is rebuilt at the stage start, so plain
    ``--trainer.strategy ddp`` works.

    Args:
        alpha: α, weight of ``L_ce``.
        beta: β, weight of ``L_scl − L_fcl``.
        lambda_fair: λ; if given, overrides α, β as in the authors' code: ``α = 1/(1+λ)``, ``β = λ/(1+λ)``.
        temperature: τ of both contrastive terms (0.01 in the authors' code).
        lambda_fcl: extra factor on ``L_fcl`` inside the bracket (1 in the paper).
        fcl_conditioning: ``none`` (the paper) or ``class`` (``L_fcl`` within each class, then averaged — the
            authors' equalized-odds flavour used on some datasets).
        reduction: SupCon reduction, ``mean`` (the paper) or ``confair`` (the authors' code, ``1/(1+|P(i)|)``).
        normalize: the contrastive terms see ``l2(h)`` (``True``: Shen et al.'s code, the default) or the raw
            tanh hidden layer ``h`` (``False``: fairlib's FCL, ``model.hidden()``, the version most users run).
        pipeline: train ``Con_*^ft`` instead of the end-to-end ``Con_*``.
        stage1_epochs: epochs of the contrastive stage when ``pipeline=True``.
        gather_distributed: under DDP, contrast the local anchors with every process's rows (the loss of the global
            batch, exact gradients after DDP averaging).
        grad_cache_chunk: train with a gradient cache of this many rows per chunk (memory of a ``chunk``-row
            step, gradients of the whole batch; manual optimisation, see :mod:`faircl.methods.scale`).
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments.
    """

    def __init__(
        self,
        alpha: float = 1.0,
        beta: float = 1.0,
        lambda_fair: float | None = None,
        temperature: float = 0.1,
        lambda_fcl: float = 1.0,
        fcl_conditioning: str = "none",
        reduction: str = "mean",
        normalize: bool = True,
        pipeline: bool = False,
        stage1_epochs: int = 5,
        gather_distributed: bool = True,
        grad_cache_chunk: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if fcl_conditioning not in FCL_CONDITIONING:
            raise ValueError(f"fcl_conditioning={fcl_conditioning!r} is not one of {FCL_CONDITIONING}")
        if reduction not in ("mean", "confair"):
            raise ValueError(f"reduction={reduction!r} must be 'mean' or 'confair'")
        if lambda_fair is not None:
            if lambda_fair < 0:
                raise ValueError(f"lambda_fair must be >= 0, got {lambda_fair}")
            alpha, beta = 1.0 / (1.0 + lambda_fair), lambda_fair / (1.0 + lambda_fair)
        if alpha < 0 or beta < 0:
            raise ValueError(f"alpha and beta must be >= 0, got {alpha} and {beta}")
        if pipeline and stage1_epochs < 1:
            raise ValueError(f"stage1_epochs must be >= 1 with pipeline=True, got {stage1_epochs}")
        self.alpha, self.beta, self.temperature, self.lambda_fcl = alpha, beta, temperature, lambda_fcl
        self.fcl_conditioning, self.reduction = fcl_conditioning, reduction
        self.normalize = bool(normalize)
        self.pipeline, self.stage1_epochs = pipeline, stage1_epochs
        if grad_cache_chunk is not None and grad_cache_chunk < 1:
            raise ValueError(f"grad_cache_chunk must be >= 1 or None, got {grad_cache_chunk}")
        self.gather_distributed, self.grad_cache_chunk = gather_distributed, grad_cache_chunk
        self.automatic_optimization = grad_cache_chunk is None

    def embed_heads(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        h = h if h.dtype == torch.float64 else h.float()
        return {"z": F.normalize(h, dim=-1) if self.normalize else h}

    def stage_epochs(self) -> list[tuple[str, int | None]]:
        if self.pipeline:
            return [("contrastive", self.stage1_epochs), ("classifier", None)]
        return [("train", None)]

    def on_stage_start(self, stage: str) -> None:
        if stage == "classifier":
            self.freeze_module(self.encoder)
            self.unfreeze_module(self.classifier)
        elif stage == "contrastive":
            self.freeze_module(self.classifier)

    def contrastive_terms(self, out: dict[str, torch.Tensor], labels: torch.Tensor,
                          groups: torch.Tensor) -> dict[str, torch.Tensor]:
        """``L_scl`` (SupCon on the labels) and ``L_fcl`` (SupCon on the groups, optionally within classes)."""
        gather = self.gather_distributed
        scl = supcon_loss(out["z"], labels, temperature=self.temperature, normalize=False, reduction=self.reduction,
                          gather_distributed=gather)
        fcl = fcl_loss(out["z"], labels, groups, temperature=self.temperature, conditioning=self.fcl_conditioning,
                       normalize=False, reduction=self.reduction, gather_distributed=gather)
        return {"scl": scl, "fcl": fcl}

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        y, a = batch["y"], batch["a"]
        if self.stage == "classifier":
            ce = F.cross_entropy(out["logits"].float(), y)
            return {"ce": ce, "loss": ce}
        terms = self.contrastive_terms(out, y, a)
        contrast = terms["scl"] - self.lambda_fcl * terms["fcl"]
        if self.stage == "contrastive":
            terms["loss"] = contrast
            return terms
        terms["ce"] = F.cross_entropy(out["logits"].float(), y)
        terms["loss"] = self.alpha * terms["ce"] + self.beta * contrast
        return terms
