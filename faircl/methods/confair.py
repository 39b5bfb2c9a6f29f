"""ConFair: fair supervised contrastive learning (Shen et al. 2021, eq. 3), end-to-end ``Con_*`` and pipelined
``Con_*^ft``."""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch.nn import functional as F

from faircl._checks import check_choice, check_positive
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
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments (``gather_distributed``, ``grad_cache_chunk``,
            ...).
    """

    def __init__(
        self,
        alpha: float = 1.0,
        beta: float = 1.0,
        lambda_fair: float | None = None,
        temperature: float = 0.1,
        lambda_fcl: float = 1.0,
        fcl_conditioning: Literal["none", "class"] = "none",
        reduction: Literal["mean", "confair"] = "mean",
        normalize: bool = True,
        pipeline: bool = False,
        stage1_epochs: int = 5,
        **kwargs: Any,
    ) -> None:
        check_choice("fcl_conditioning", fcl_conditioning, FCL_CONDITIONING)
        check_choice("reduction", reduction, ("mean", "confair"))
        check_positive("temperature", temperature)
        if lambda_fair is not None:
            check_positive("lambda_fair", lambda_fair, strict=False)
            alpha, beta = 1.0 / (1.0 + lambda_fair), lambda_fair / (1.0 + lambda_fair)
        check_positive("alpha", alpha, strict=False)
        check_positive("beta", beta, strict=False)
        if pipeline:
            check_positive("stage1_epochs", stage1_epochs, minimum=1)
        super().__init__(**kwargs)
        self.alpha, self.beta, self.lambda_fair = alpha, beta, lambda_fair  # alpha, beta: derived from λ when given
        self.temperature, self.lambda_fcl = temperature, lambda_fcl
        self.fcl_conditioning, self.reduction = fcl_conditioning, reduction
        self.normalize = bool(normalize)
        self.pipeline, self.stage1_epochs = pipeline, stage1_epochs

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
        gather = self.hparams.gather_distributed
        scl = supcon_loss(out["z"], labels, temperature=self.temperature, normalize=False, reduction=self.reduction,
                          gather_distributed=gather)
        fcl = fcl_loss(out["z"], labels, groups, temperature=self.temperature, conditioning=self.fcl_conditioning,
                       normalize=False, reduction=self.reduction, gather_distributed=gather)
        return {"scl": scl, "fcl": fcl}

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        y, a = batch["y"], batch["a"]
        if self.stage == "classifier":
            return self.classifier_terms(batch, out)
        terms = self.contrastive_terms(out, y, a)
        contrast = terms["scl"] - self.lambda_fcl * terms["fcl"]
        if self.stage == "contrastive":
            terms["loss"] = contrast
            return terms
        terms["ce"] = self.classifier_terms(batch, out)["ce"]
        terms["loss"] = self.alpha * terms["ce"] + self.beta * contrast
        return terms
