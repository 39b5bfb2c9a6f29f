"""PARADE: PARtial Attribute DE-correlation (Dullerud et al., ICLR 2022, §4).

A backbone ψ with two linear heads branching from its last layer, both L2-normalised:
φ_targ (similarity over the target class) and φ_SA (similarity over the sensitive attribute). Training minimises

    ``L_PARADE = L_targ + λ_SA · L_SA − λ_sep · c(φ_targ, φ_SA)``  (the paper's α_SA and ρ)

where ``L_targ`` / ``L_SA`` are ranking losses over triplets mined by class / by attribute inside the batch
(margin loss + distance-weighted mining by default), and ``c`` is DiVA's adversarial-separation correlation
(:class:`faircl.losses.Decorrelation`): an MLP ξ ascends ``c`` while the gradient reversal inside makes both
embeddings descend it. Only φ_targ is released: in eval mode (test / predict / ``collect``) ``forward`` returns the
target embedding as ``z`` (and ``h``, ``logits``); :meth:`PARADE.embed_both` gives both heads for inspection.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from faircl._checks import check_positive
from faircl.losses import Decorrelation
from faircl.mining.mined import TUPLE_LOSSES
from faircl.methods.dml import DML


class PARADE(DML):
    """PARADE on top of a :class:`~faircl.methods.dml.DML` backbone and target objective.

    Batches: SPC-n by class (``sampler: samples_per_class``, ``spc_by: class``); attribute triplets are mined from
    the same batch with the same miner (rows with unknown attribute ``-1`` take no part in ``L_SA``).

    Args:
        lambda_sa: α_SA, weight of the sensitive-attribute loss (paper grid {0.1, 0.3}).
        lambda_sep: ρ, weight of the de-correlation (separation) term (paper grid {100, 500, 1000, 1500}).
        decorr_hidden: hidden width of the correlation regressor ξ (DiVA: 512).
        decorr_lr: learning rate of ξ (default: the model's ``lr``).
        **kwargs: :class:`~faircl.methods.dml.DML` arguments (``loss`` must be a triplet loss: ``margin``,
            ``triplet`` or ``contrastive``; ``miner``; ``embed_dim``; ...) and FairModule arguments.
    """

    def __init__(
        self,
        lambda_sa: float = 0.1,
        lambda_sep: float = 500.0,
        decorr_hidden: int = 512,
        decorr_lr: float | None = None,
        **kwargs: Any,
    ) -> None:
        check_positive("lambda_sa", lambda_sa, strict=False)
        check_positive("lambda_sep", lambda_sep, strict=False)
        loss = kwargs.get("loss", "margin")
        if loss not in TUPLE_LOSSES:
            raise ValueError(f"PARADE needs a triplet loss for both heads ({', '.join(TUPLE_LOSSES)}), got loss={loss!r}")
        super().__init__(**kwargs)
        self.lambda_sa, self.lambda_sep, self.decorr_hidden, self.decorr_lr = (lambda_sa, lambda_sep, decorr_hidden,
                                                                               decorr_lr)
        self.embed_sa = nn.Linear(self.encoder.out_dim, self.embed_dim)
        self.objective_sa = self.metric_objective(max(self.num_groups, 1))
        self.decorrelation = Decorrelation(self.embed_dim, self.embed_dim, hidden=decorr_hidden)

    def objective_names(self) -> list[str]:
        return ["objective", "objective_sa"]

    def embed_both(self, x: Any) -> dict[str, torch.Tensor]:
        """Both embeddings: ``{"h": ψ(x), "z": φ_targ(x), "z_sa": φ_SA(x)}`` (each ``[B, embed_dim]`` normalised)."""
        h = self.encoder(x)
        return {"h": h, **self._both_heads(h)}

    def _both_heads(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"z": F.normalize(self.embed(h), dim=-1), "z_sa": F.normalize(self.embed_sa(h), dim=-1)}

    def embed_heads(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        """Training: ``z`` and ``z_sa``. Eval (test / predict / ``collect``): only the released ``z``."""
        return self._both_heads(h) if self.training else super().embed_heads(h)

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        l_targ, n_targ = self.objective(out["z"], batch["y"])
        l_sa, n_sa = self.objective_sa(out["z_sa"], batch["a"])
        corr = self.decorrelation(out["z"], out["z_sa"])
        terms = {"targ": l_targ, "sa": self.lambda_sa * l_sa, "decorr": -self.lambda_sep * corr,
                 "correlation": corr.detach()}
        if n_targ >= 0:
            terms["triplets"] = torch.tensor(float(n_targ), device=l_targ.device)
            terms["triplets_sa"] = torch.tensor(float(n_sa), device=l_targ.device)
        terms["loss"] = l_targ + terms["sa"] + terms["decorr"]
        return self.with_probe_loss(terms, batch, out)

    def module_lrs(self) -> dict[str, dict[str, float]]:
        """DML's objective learning rates plus ξ at ``decorr_lr`` when it is set."""
        lrs = super().module_lrs()
        if self.decorr_lr is not None:
            lrs["decorrelation"] = {"lr": self.decorr_lr}
        return lrs
