"""Encoders ``x → h`` and the registry used by :class:`faircl.methods.base.FairModule`.

Every encoder takes ``input_dim`` (feature dimension, vocabulary size or image channels, as the datamodule reports
it) as its first argument and exposes ``out_dim``. Register a new one with :func:`register_encoder`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

_ENCODERS: dict[str, Callable[..., nn.Module]] = {}


def register_encoder(name: str) -> Callable:
    """Class decorator: make an encoder buildable by name (``encoder: <name>`` in configs)."""

    def deco(cls):
        _ENCODERS[name] = cls
        return cls

    return deco


def available_encoders() -> list[str]:
    return sorted(_ENCODERS)


def build_encoder(name: str, input_dim: int, **kwargs) -> nn.Module:
    """Build the encoder registered as ``name``; unknown names list the available ones."""
    if name not in _ENCODERS:
        raise ValueError(f"unknown encoder {name!r}; available: {', '.join(available_encoders())}")
    enc = _ENCODERS[name](input_dim, **kwargs)
    if not hasattr(enc, "out_dim"):
        raise TypeError(f"encoder {name!r} ({type(enc).__name__}) has no out_dim attribute")
    return enc


@register_encoder("mlp")
class FeatureEncoder(nn.Module):
    """MLP over fixed feature vectors: ``num_layers × (Linear, tanh)`` (Shen et al. use 2 × 300, tanh).

    Args:
        input_dim: feature dimension.
        hidden_dim: width of every layer (= ``out_dim``).
        num_layers: number of hidden layers.
        activation: ``tanh`` | ``relu``.
        dropout: dropout after each activation.
    """

    def __init__(self, input_dim: int, hidden_dim: int = 300, num_layers: int = 2, activation: str = "tanh",
                 dropout: float = 0.0) -> None:
        super().__init__()
        if input_dim < 1:
            raise ValueError("FeatureEncoder needs input_dim >= 1 (the datamodule's feature dimension)")
        act = {"tanh": nn.Tanh, "relu": nn.ReLU}[activation]
        layers: list[nn.Module] = []
        d = input_dim
        for _ in range(num_layers):
            layers += [nn.Linear(d, hidden_dim), act()]
            if dropout:
                layers.append(nn.Dropout(dropout))
            d = hidden_dim
        self.net = nn.Sequential(*layers) if layers else nn.Identity()
        self.out_dim = d

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.float())


@register_encoder("bow")
class BagOfWordsEncoder(nn.Module):
    """Mean of word embeddings over the non-padding ids (0 = padding) followed by a tanh layer.

    A fast text encoder for token-id inputs ``[B, L]``; ``input_dim`` is the vocabulary size.
    """

    def __init__(self, input_dim: int, embed_dim: int = 64, hidden_dim: int = 128) -> None:
        super().__init__()
        if input_dim < 2:
            raise ValueError("BagOfWordsEncoder needs input_dim = vocabulary size (>= 2)")
        self.embed = nn.Embedding(input_dim, embed_dim, padding_idx=0)
        self.proj = nn.Sequential(nn.Linear(embed_dim, hidden_dim), nn.Tanh())
        self.out_dim = hidden_dim

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        mask = (ids != 0).unsqueeze(-1).float()
        pooled = (self.embed(ids) * mask).sum(1) / mask.sum(1).clamp_min(1.0)
        return self.proj(pooled)


@register_encoder("conv")
class SmallConvEncoder(nn.Module):
    """A small CNN for small images ``[B, C, H, W]`` (e.g. ColoredDigits): 3 conv blocks + global average pooling."""

    def __init__(self, input_dim: int = 3, width: int = 32, out_dim: int = 128) -> None:
        super().__init__()
        c = input_dim or 3
        self.net = nn.Sequential(
            nn.Conv2d(c, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1, stride=2), nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.Conv2d(2 * width, 4 * width, 3, padding=1, stride=2), nn.BatchNorm2d(4 * width), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * width, out_dim), nn.ReLU(),
        )
        self.out_dim = out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@register_encoder("timm")
class TimmEncoder(nn.Module):
    """A timm backbone without its classifier (global pooled features).

    Args:
        input_dim: image channels.
        model_name: timm architecture, e.g. ``resnet18``, ``resnet50``.
        weights: optional path to a local checkpoint (``.pth``/``.safetensors`` state dict). Nothing is ever
            downloaded: without ``weights`` the backbone is randomly initialised (``pretrained=False``).
    """

    def __init__(self, input_dim: int = 3, model_name: str = "resnet18", weights: str | None = None) -> None:
        super().__init__()
        import timm

        self.backbone = timm.create_model(model_name, pretrained=False, num_classes=0, in_chans=input_dim or 3)
        if weights is not None:
            path = Path(weights)
            if not path.is_file():
                raise FileNotFoundError(
                    f"timm weights {str(path)!r} not found. Download the {model_name} checkpoint on a machine with "
                    "network access and pass its local path as encoder_kwargs.weights (or omit it for random init)."
                )
            if path.suffix == ".safetensors":
                from safetensors.torch import load_file

                state = load_file(str(path))
            else:
                state = torch.load(str(path), map_location="cpu", weights_only=True)
            missing, unexpected = self.backbone.load_state_dict(state, strict=False)
            unexpected = [k for k in unexpected if not k.startswith(("fc.", "head", "classifier"))]
            if unexpected:
                raise ValueError(f"weights {str(path)!r} do not fit {model_name}: unexpected keys {unexpected[:5]}")
        self.out_dim = self.backbone.num_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x)
