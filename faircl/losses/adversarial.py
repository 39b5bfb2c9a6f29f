"""Adversarial building blocks: gradient reversal, the diverse-adversaries difference loss, DiVA decorrelation."""

from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from faircl._checks import check_embeddings


class GradientReversal(torch.autograd.Function):
    """Identity forward, ``−λ · grad`` backward (Ganin & Lempitsky 2015). Use ``GradientReversal.apply(x, λ)``."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, lambda_: float = 1.0) -> torch.Tensor:
        ctx.lambda_ = float(lambda_)
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        return -ctx.lambda_ * grad_output, None


def grad_reverse(x: torch.Tensor, lambda_: float = 1.0) -> torch.Tensor:
    """Functional gradient reversal: ``x`` forward, ``−lambda_ · grad`` backward.

    Examples:
        >>> import torch
        >>> from faircl.losses import grad_reverse
        >>> x = torch.ones(2, requires_grad=True)
        >>> grad_reverse(x, 0.5).sum().backward()
        >>> x.grad
        tensor([-0.5000, -0.5000])
    """
    return GradientReversal.apply(x, lambda_)


class GradientReversalLayer(nn.Module):
    """Module form of :class:`GradientReversal` (place it in front of a discriminator).

    Args:
        lambda_: reversal strength λ ≥ 0 (mutable attribute, e.g. for a schedule).

    Examples:
        >>> import torch
        >>> from faircl.losses import GradientReversalLayer
        >>> layer = GradientReversalLayer(lambda_=2.0)
        >>> x = torch.ones(3, requires_grad=True)
        >>> layer(x).sum().backward()
        >>> x.grad
        tensor([-2., -2., -2.])
    """

    def __init__(self, lambda_: float = 1.0) -> None:
        super().__init__()
        if lambda_ < 0:
            raise ValueError(f"`lambda_` must be >= 0, got {lambda_}")
        self.lambda_ = float(lambda_)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return grad_reverse(x, self.lambda_)

    def extra_repr(self) -> str:
        return f"lambda_={self.lambda_}"


def _centred_unit_rows(h: torch.Tensor, eps: float) -> torch.Tensor:
    h = h.reshape(h.shape[0], -1)
    h = h.to(torch.promote_types(h.dtype, torch.float32))
    h = h - h.mean(dim=0, keepdim=True)
    return h / (h.norm(dim=1, keepdim=True) + eps)


def diversity_loss(hidden_states: Sequence[torch.Tensor] | torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Domain-separation (DSN, Bousmalis et al. 2016) form of the difference loss between adversaries' hidden states.

    Each ``H_k`` ``[B, h]`` is centred over the batch and its rows L2-normalised; the loss is
    ``Σ_{k<l} mean((H_kᵀ H_l)²)`` over the ``[h, h]`` cross-correlation entries. This is **not** the form of the
    diverse-adversaries authors' released code (Han et al. 2021 / fairlib), which uses no centring and a ``[B, B]``
    Gram matrix: see :func:`difference_loss` (``form="authors"``, the default of ``DiverseAdversarial``).

    Args:
        hidden_states: a list of ``K >= 2`` tensors ``[B, h]`` (widths may differ), or one tensor ``[K, B, h]``.
        eps: added to the row norms.

    Returns:
        A scalar ≥ 0, zero when the adversaries' hidden spaces are orthogonal over the batch.

    Examples:
        >>> import torch
        >>> from faircl.losses import diversity_loss
        >>> g = torch.Generator().manual_seed(0)
        >>> h, other = torch.randn(8, 4, generator=g), torch.randn(8, 4, generator=g)
        >>> float(diversity_loss([h, h])) > float(diversity_loss([h, other]))   # identical adversaries cost most
        True
    """
    hs = _check_hidden_list(hidden_states)
    units = [_centred_unit_rows(h, eps) for h in hs]
    loss = units[0].new_zeros(())
    for k in range(len(units)):
        for j in range(k + 1, len(units)):
            loss = loss + (units[k].T @ units[j]).pow(2).mean()
    return loss


DIFFERENCE_FORMS = ("authors", "dsn")


def _check_hidden_list(hidden_states: Sequence[torch.Tensor] | torch.Tensor) -> list[torch.Tensor]:
    hs = list(hidden_states)
    if len(hs) < 2:
        raise ValueError(f"`hidden_states` needs at least 2 adversaries, got {len(hs)}")
    batch = hs[0].shape[0]
    for k, h in enumerate(hs):
        if h.dim() < 2 or h.shape[0] != batch:
            raise ValueError(f"hidden state {k} must have shape [B={batch}, h], got {tuple(h.shape)}")
    return hs


def difference_loss(hidden_states: Sequence[torch.Tensor] | torch.Tensor, form: str = "authors",
                    eps: float = 1e-6) -> torch.Tensor:
    """Difference (orthogonality) loss of diverse adversaries (Han et al. 2021, eq. of ``L_diff``).

    ``form="authors"`` (default), as in the authors' released code: each ``H_k`` ``[B, h]`` (flattened) is divided
    row-wise by its L2 norm **detached** from the graph (``+ eps``), without centring, and the loss is
    ``Σ_{k<l} mean_{i,j}((Ĥ_k Ĥ_lᵀ)_{ij}²)`` over the ``[B, B]`` Gram matrix (all widths must be equal).
    ``form="dsn"``: the centred ``[h, h]`` cross-correlation of the domain-separation paper
    (:func:`diversity_loss`); the two are different losses with different gradients.

    Args:
        hidden_states: a list of ``K >= 2`` tensors ``[B, h]`` (``[B, h_k]`` allowed for ``"dsn"``), or one
            tensor ``[K, B, h]``.
        form: ``"authors"`` or ``"dsn"``.
        eps: added to the row norms.

    Returns:
        A scalar ≥ 0.
    """
    if form not in DIFFERENCE_FORMS:
        raise ValueError(f"form={form!r} must be one of {DIFFERENCE_FORMS}")
    if form == "dsn":
        return diversity_loss(hidden_states, eps)
    hs = _check_hidden_list(hidden_states)
    widths = {int(h[0].numel()) for h in hs}
    if len(widths) > 1:
        raise ValueError(f"the authors' difference loss needs hidden states of one width, got widths {sorted(widths)}")
    units = []
    for h in hs:
        h = h.reshape(h.shape[0], -1)
        h = h.to(torch.promote_types(h.dtype, torch.float32))
        units.append(h / (h.norm(dim=1, keepdim=True).detach() + eps))
    loss = units[0].new_zeros(())
    for k in range(len(units)):
        for j in range(k + 1, len(units)):
            loss = loss + (units[k] @ units[j].T).pow(2).mean()
    return loss


class Decorrelation(nn.Module):
    """Adversarial separation of two embeddings (DiVA, Milbich et al. 2020), as used by PARADE (Dullerud et al. §4).

    ``c = mean_{i, j} ( ẑ_targ ⊙ norm(ξ(ẑ_sa)) )²_{ij}`` with ``ẑ = norm(R(z))``, ``R`` a gradient reversal and
    ξ an MLP ``dim_sa → hidden → dim_targ``. The caller **subtracts** ``ρ · c`` from its loss: ξ then ascends
    ``c`` (it learns to predict one embedding from the other) while, through ``R``, the embeddings descend it
    (they become decorrelated).

    Args:
        dim_targ: width of the target embedding φ_targ.
        dim_sa: width of the sensitive-attribute embedding φ_SA.
        hidden: hidden width of ξ (DiVA: 512).
        lambda_: gradient-reversal strength.

    Shapes:
        ``forward(z_targ [B, dim_targ], z_sa [B, dim_sa]) -> scalar``.
    """

    def __init__(self, dim_targ: int, dim_sa: int, hidden: int = 512, lambda_: float = 1.0) -> None:
        super().__init__()
        for name, v in (("dim_targ", dim_targ), ("dim_sa", dim_sa), ("hidden", hidden)):
            if int(v) < 1:
                raise ValueError(f"`{name}` must be >= 1, got {v}")
        self.dim_targ, self.dim_sa = int(dim_targ), int(dim_sa)
        self.reversal = GradientReversalLayer(lambda_)
        self.regressor = nn.Sequential(nn.Linear(dim_sa, hidden), nn.ReLU(), nn.Linear(hidden, dim_targ))

    def forward(self, z_targ: torch.Tensor, z_sa: torch.Tensor) -> torch.Tensor:
        check_embeddings("z_targ", z_targ, shape="[B, d]")
        check_embeddings("z_sa", z_sa, shape="[B, d]")
        if z_targ.shape[1] != self.dim_targ or z_sa.shape[1] != self.dim_sa or z_targ.shape[0] != z_sa.shape[0]:
            raise ValueError(
                f"expected z_targ [B, {self.dim_targ}] and z_sa [B, {self.dim_sa}], got {tuple(z_targ.shape)} and {tuple(z_sa.shape)}"
            )
        t = F.normalize(self.reversal(z_targ), dim=-1)
        s = F.normalize(self.reversal(z_sa), dim=-1)
        return (t * F.normalize(self.regressor(s), dim=-1)).pow(2).mean()
