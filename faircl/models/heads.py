"""Small heads: linear / MLP classifiers and projection heads."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from faircl._checks import check_positive


def mlp(in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 2, activation: type[nn.Module] = nn.ReLU,
        dropout: float = 0.0) -> nn.Sequential:
    """``num_layers`` linear layers (``num_layers=1`` is a linear map) with ``activation`` between them."""
    check_positive("num_layers", num_layers, minimum=1)
    layers: list[nn.Module] = []
    d = in_dim
    for _ in range(num_layers - 1):
        layers += [nn.Linear(d, hidden_dim), activation()]
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
        d = hidden_dim
    layers.append(nn.Linear(d, out_dim))
    return nn.Sequential(*layers)


class ProjectionHead(nn.Module):
    """Projection ``h → z`` for contrastive losses, L2-normalised by default (SimCLR / SupCon style)."""

    def __init__(self, in_dim: int, out_dim: int = 128, hidden_dim: int | None = None, num_layers: int = 2,
                 normalize: bool = True) -> None:
        super().__init__()
        self.net = mlp(in_dim, hidden_dim or in_dim, out_dim, num_layers=num_layers)
        self.normalize = normalize

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        z = self.net(h)
        return F.normalize(z, dim=-1) if self.normalize else z
