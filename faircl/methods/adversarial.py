"""Adversarial debiasing baselines: a gradient-reversal discriminator (Elazar & Goldberg 2018; conditional variant
for equalized odds, Zhao et al. 2019) and diverse adversaries (Han et al. 2021), as compared in Chi et al. 2022 §4
and Shen et al. 2021."""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from faircl._checks import check_choice, check_positive
from faircl.losses import grad_reverse
from faircl.losses.adversarial import DIFFERENCE_FORMS, difference_loss
from faircl.methods.base import FairModule


class Discriminator(nn.Module):
    """MLP predicting the protected attribute: ``in_dim → hidden (×num_layers, ReLU) → num_groups``.

    ``forward`` returns ``(logits [B, num_groups], hidden [B, hidden_dim])``; the hidden state is what the diverse
    adversaries' difference loss acts on.
    """

    def __init__(self, in_dim: int, hidden_dim: int, num_groups: int, num_layers: int = 2) -> None:
        super().__init__()
        check_positive("adv_layers", num_layers, minimum=1)
        layers: list[nn.Module] = []
        d = in_dim
        for _ in range(num_layers):
            layers += [nn.Linear(d, hidden_dim), nn.ReLU()]
            d = hidden_dim
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(d, num_groups)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.body(x)
        return self.out(hidden), hidden


class Adversarial(FairModule):
    """Cross-entropy plus discriminator(s) on the reversed hidden state ``R(h)``.

    ``L = L_ce(y) + Σ_k L_ce(D_k(R(h) [⊕ onehot(y)]), a) + λ_diff·L_diff``. The reversal ``R`` is the identity
    forward and multiplies the gradient by ``−λ_adv`` backward, so each discriminator learns to predict ``a`` at full
    strength while the encoder receives ``−λ_adv`` times the discriminators' gradient and unlearns ``a``. Rows with an
    unknown attribute (``-1``) are left out of the adversarial term.

    ``L_diff`` (``n_adv > 1``) is computed, as in the diverse-adversaries authors' code (Han et al. 2021), on the
    discriminators' hidden states of the **detached** representation ``sg(h)``: it trains only the discriminators
    (keeps them apart) and sends no gradient to the encoder. Through ``R`` it would instead push the encoder
    towards representations on which the adversaries disagree, a different objective.

    Args:
        lambda_adv: λ_adv, strength of the reversed gradient (Chi grids: 0.1–2).
        conditional: the discriminators also see the one-hot task label (equalized-odds variant: the encoder hides
            ``a`` *within* each class instead of overall).
        n_adv: number of discriminators (1 for plain adversarial training).
        lambda_diff: weight of the orthogonality difference loss between discriminators' hidden states (used when
            ``n_adv > 1``).
        diff_form: ``"authors"`` (default: the released code's ``[B, B]`` Gram form, no centring, detached norms)
            or ``"dsn"`` (centred cross-correlation of the domain-separation paper); see
            :func:`faircl.losses.adversarial.difference_loss`.
        adv_hidden: hidden width of each discriminator.
        adv_layers: hidden layers of each discriminator.
        adv_lr: learning rate of the discriminators (default: ``lr``).
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments.
    """

    supports_grad_cache = False  # the discriminators train inside the loss, which the gradient cache does not reach

    def __init__(
        self,
        lambda_adv: float = 1.0,
        conditional: bool = False,
        n_adv: int = 1,
        lambda_diff: float = 0.0,
        diff_form: Literal["authors", "dsn"] = "authors",
        adv_hidden: int = 256,
        adv_layers: int = 2,
        adv_lr: float | None = None,
        **kwargs: Any,
    ) -> None:
        check_positive("lambda_adv", lambda_adv, strict=False)
        check_positive("n_adv", n_adv, minimum=1)
        check_positive("lambda_diff", lambda_diff, strict=False)
        check_choice("diff_form", diff_form, DIFFERENCE_FORMS)
        super().__init__(**kwargs)
        self.lambda_adv, self.conditional, self.n_adv, self.lambda_diff = lambda_adv, conditional, n_adv, lambda_diff
        self.diff_form, self.adv_hidden, self.adv_layers, self.adv_lr = diff_form, adv_hidden, adv_layers, adv_lr
        in_dim = self.encoder.out_dim + (self.num_classes if conditional else 0)
        self.discriminators = nn.ModuleList(
            Discriminator(in_dim, adv_hidden, self.num_groups, adv_layers) for _ in range(n_adv))

    def adversary_input(self, h: torch.Tensor, labels: torch.Tensor, detach: bool = False) -> torch.Tensor:
        """``R(h)`` (``sg(h)`` when ``detach``), with ``onehot(labels)`` appended when ``conditional``
        (``[B, d (+C)]``)."""
        rev = h.detach().float() if detach else grad_reverse(h.float(), self.lambda_adv)
        if self.conditional:
            rev = torch.cat([rev, F.one_hot(labels, self.num_classes).to(rev.dtype)], dim=1)
        return rev

    def adversarial_terms(self, h: torch.Tensor, labels: torch.Tensor,
                          groups: torch.Tensor) -> dict[str, torch.Tensor]:
        """Discriminators' cross-entropy (summed over discriminators) and, for ``n_adv > 1``, the difference loss
        (on the discriminators' hidden states of the detached ``h``: it reaches only the discriminators)."""
        known = groups >= 0
        inp = self.adversary_input(h[known], labels[known])
        if not bool(known.any()):
            zero = h.sum() * 0.0  # no attribute known in this batch: a 0 that keeps the graph
            return {"adv": zero, "diff": zero} if self.n_adv > 1 else {"adv": zero}
        adv = h.new_zeros((), dtype=torch.float32)
        for disc in self.discriminators:
            logits, _ = disc(inp)
            adv = adv + F.cross_entropy(logits.float(), groups[known])
        terms = {"adv": adv}
        if self.n_adv > 1:
            if len(inp) > 1:
                inp_sg = self.adversary_input(h[known], labels[known], detach=True)
                hidden = [disc(inp_sg)[1] for disc in self.discriminators]
                terms["diff"] = difference_loss(hidden, form=self.diff_form)
            else:
                terms["diff"] = adv * 0.0
        return terms

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        ce = self.classifier_terms(batch, out)["ce"]
        terms = {"ce": ce, **self.adversarial_terms(out["h"], batch["y"], batch["a"])}
        loss = ce + terms["adv"]
        if "diff" in terms:
            loss = loss + self.lambda_diff * terms["diff"]
        terms["loss"] = loss
        return terms

    def module_lrs(self) -> dict[str, dict[str, float]]:
        return {} if self.adv_lr is None else {"discriminators": {"lr": self.adv_lr}}


class DiverseAdversarial(Adversarial):
    """Diverse adversaries (Han et al. 2021): ``n_adv`` discriminators kept apart by the difference loss.

    Same objective as :class:`Adversarial` with defaults ``n_adv = 3`` and ``λ_diff = 100`` (Chi et al. Table 3).

    Args:
        n_adv: number of discriminators (≥ 2).
        lambda_diff: weight of the orthogonality difference loss.
        **kwargs: :class:`Adversarial` arguments (``lambda_adv``, ``conditional``, ...).
    """

    def __init__(self, n_adv: int = 3, lambda_diff: float = 100.0, **kwargs: Any) -> None:
        check_positive("n_adv", n_adv, minimum=2)  # diverse adversaries: at least two discriminators
        super().__init__(n_adv=n_adv, lambda_diff=lambda_diff, **kwargs)
