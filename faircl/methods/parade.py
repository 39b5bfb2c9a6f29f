"""PARADE: PARtial Attribute DE-correlation (Dullerud et al., ICLR 2022, §4).

A backbone ψ with two linear heads branching from its last layer, both L2-normalised:
φ_targ (similarity over the target class) and φ_SA (similarity over the sensitive attribute). Training minimises

    ``L_PARADE = L_targ + α_SA · L_SA − ρ · c(φ_targ, φ_SA)``

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

from faircl.losses import Decorrelation
from faircl.methods.dml import DML, TUPLE_LOSSES, MetricObjective


class PARADE(DML):
    """PARADE on top of a :class:`~faircl.methods.dml.DML` backbone and target objective.

    Batches: SPC-n by class (``sampler: samples_per_class``, ``spc_by: class``); attribute triplets are mined from
    the same batch with the same miner (rows with unknown attribute ``-1`` take no part in ``L_SA``).

    Args:
        alpha_sa: α_SA, weight of the sensitive-attribute loss (paper grid {0.1, 0.3}).
        rho: ρ, weight of the de-correlation term (paper grid {100, 500, 1000, 1500}).
        decorr_hidden: hidden width of the correlation regressor ξ (DiVA: 512).
        decorr_lr: learning rate of ξ (default: the model's ``lr``).
        **kwargs: :class:`~faircl.methods.dml.DML` arguments (``loss`` must be a triplet loss: ``margin``,
            ``triplet`` or ``contrastive``; ``miner``; ``embed_dim``; ...) and FairModule arguments.
    """

    def __init__(
        self,
        alpha_sa: float = 0.1,
        rho: float = 500.0,
        decorr_hidden: int = 512,
        decorr_lr: float | None = None,
        **kwargs: Any,
    ) -> None:
        if alpha_sa < 0 or rho < 0:
            raise ValueError(f"alpha_sa and rho must be >= 0, got alpha_sa={alpha_sa}, rho={rho}")
        loss = kwargs.get("loss", "margin")
        if loss not in TUPLE_LOSSES:
            raise ValueError(f"PARADE needs a triplet loss for both heads ({', '.join(TUPLE_LOSSES)}), got loss={loss!r}")
        super().__init__(**kwargs)

    def build_heads(self) -> None:
        """Target head and objective (from DML), the SA head φ_SA, its objective and the correlation regressor ξ."""
        super().build_heads()
        hp = self.hparams
        self.embed_sa = nn.Linear(self.encoder.out_dim, hp.embed_dim)
        self.objective_sa = self._objective(max(self.num_groups, 1))
        self.decorrelation = Decorrelation(hp.embed_dim, hp.embed_dim, hidden=hp.decorr_hidden)

    def objectives(self) -> list[MetricObjective]:
        return [self.objective, self.objective_sa]

    def embed_both(self, x: Any) -> dict[str, torch.Tensor]:
        """Both embeddings: ``{"h": ψ(x), "z": φ_targ(x), "z_sa": φ_SA(x)}`` (each ``[B, embed_dim]`` normalised)."""
        h = self.encoder(x)
        return {"h": h, "z": F.normalize(self.embed(h), dim=-1), "z_sa": F.normalize(self.embed_sa(h), dim=-1)}

    def forward(self, x: Any) -> dict[str, torch.Tensor]:
        """Training: ``h``, ``z``, ``z_sa``, ``logits``. Eval (test / predict): only the released ``h``, ``z``, ``logits``."""
        out = self.embed_both(x) if self.training else super().forward(x)
        if self.training:
            out["logits"] = self.classifier(out["z"].detach())
        return out

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        hp = self.hparams
        l_targ, n_targ = self.objective(out["z"], batch["y"])
        l_sa, n_sa = self.objective_sa(out["z_sa"], batch["a"])
        corr = self.decorrelation(out["z"], out["z_sa"])
        terms = {"targ": l_targ, "sa": hp.alpha_sa * l_sa, "decorr": -hp.rho * corr,
                 "correlation": corr.detach()}
        if n_targ >= 0:
            terms["triplets"] = torch.tensor(float(n_targ), device=l_targ.device)
            terms["triplets_sa"] = torch.tensor(float(n_sa), device=l_targ.device)
        return self._finish(terms, l_targ + terms["sa"] + terms["decorr"], batch, out)

    def param_groups(self) -> list[dict[str, Any]]:
        """DML groups plus ξ at ``decorr_lr`` when it is set."""
        groups = super().param_groups()
        lr = self.hparams.decorr_lr
        if lr is None:
            return groups
        xi = {id(p) for p in self.decorrelation.parameters()}
        groups[0]["params"] = [p for p in groups[0]["params"] if id(p) not in xi]
        groups.append({"params": [p for p in self.decorrelation.parameters() if p.requires_grad], "lr": lr})
        return groups
