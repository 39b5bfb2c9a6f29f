"""Views of images (SimCLR, torchvision ``transforms.v2``) and of fixed feature vectors (:class:`FeatureNoise`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from faircl.data.augment.base import TwoViews, _Seeded

__all__ = ["SimCLRTransform", "FeatureNoise"]


class _Forked(_Seeded):
    """Runs a torch-RNG-driven transform under the augmenter's own seed (global torch state restored)."""

    def _run(self, fn: Callable[[Any], Any], x: Any) -> Any:
        if self.seed is None:
            return fn(x)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._random().getrandbits(63))
            return fn(x)


class SimCLRTransform(TwoViews):
    """SimCLR augmentations (Chen et al. 2020, App. A) giving two views of an image.

    One view: random resized crop to ``size`` (scale ``scale``), horizontal flip (p 0.5), colour jitter
    (``0.8·s, 0.8·s, 0.8·s, 0.2·s`` with probability ``p_jitter``), grayscale (``p_gray``), optional Gaussian blur
    (kernel ≈ 10 % of ``size``, σ ∈ [0.1, 2], probability ``p_blur``), then float conversion and optional
    normalisation. Accepts PIL images and ``uint8``/float tensors ``[C, H, W]`` (or batches ``[B, C, H, W]``, which
    get one draw for the whole batch). Output: two float tensors ``[C, size, size]``; grayscale keeps ``C``.

    Args:
        size: output side length.
        scale: crop area range.
        s: colour-jitter strength.
        p_jitter: probability of colour jitter.
        p_gray: probability of grayscale.
        p_blur: probability of blur (0 turns it off; SimCLR uses 0.5 on ImageNet, none on CIFAR).
        mean, std: normalisation (``None``: no normalisation).
        seed: seed (see the module docstring).

    ``self.transform`` is the one-view pipeline (what ``FairDataModule.view_transform`` wants).
    """

    def __init__(
        self,
        size: int | tuple[int, int],
        scale: tuple[float, float] = (0.08, 1.0),
        s: float = 1.0,
        p_jitter: float = 0.8,
        p_gray: float = 0.2,
        p_blur: float = 0.0,
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
        seed: int | None = None,
    ) -> None:
        from torchvision.transforms import v2

        side = size if isinstance(size, int) else size[0]
        ops: list[Any] = [
            v2.ToImage(),
            v2.RandomResizedCrop(size, scale=scale, antialias=True),
            v2.RandomHorizontalFlip(),
            v2.RandomApply([v2.ColorJitter(0.8 * s, 0.8 * s, 0.8 * s, 0.2 * s)], p=p_jitter),
            v2.RandomGrayscale(p=p_gray),
        ]
        if p_blur > 0:
            kernel = max(3, int(0.1 * side) // 2 * 2 + 1)
            ops.append(v2.RandomApply([v2.GaussianBlur(kernel, sigma=(0.1, 2.0))], p=p_blur))
        ops.append(v2.ToDtype(torch.float32, scale=True))
        if (mean is None) != (std is None):
            raise ValueError("give both mean and std for normalisation, or neither")
        if mean is not None:
            ops.append(v2.Normalize(list(mean), list(std)))
        self.pipeline = v2.Compose(ops)
        self._seeded = _Forked(seed)
        super().__init__(self._one_view)

    def _one_view(self, x: Any) -> torch.Tensor:
        return self._seeded._run(self.pipeline, x).as_subclass(torch.Tensor)


class FeatureNoise(_Seeded):
    """One random view of a fixed feature vector: ``x · m + σ·ε`` with ``ε ~ N(0, I)``, ``m ~ Bernoulli(1 − p)``.

    Features are zeroed with probability ``dropout`` without rescaling (a corrupted view, not a regulariser), then
    Gaussian noise of standard deviation ``std`` is added. Works on ``[d]`` or ``[B, d]`` float tensors (or arrays)
    and returns a float tensor of the same shape. Use ``TwoViews(FeatureNoise(...))`` for a pair.

    Args:
        std: noise standard deviation (≥ 0).
        dropout: feature-masking probability in [0, 1).
        seed: seed (see the module docstring).
    """

    def __init__(self, std: float = 0.1, dropout: float = 0.0, seed: int | None = None) -> None:
        super().__init__(seed)
        if not float(std) >= 0:
            raise ValueError(f"std must be >= 0, got {std!r}")
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.std, self.dropout = float(std), float(dropout)

    def __call__(self, x: Any) -> torch.Tensor:
        x = torch.as_tensor(x)
        if not x.is_floating_point():
            x = x.float()
        g = self._torch_generator() if self.seed is not None else None
        out = x
        if self.dropout > 0:
            keep = torch.rand(x.shape, generator=g, dtype=x.dtype) >= self.dropout
            out = out * keep
        if self.std > 0:
            out = out + self.std * torch.randn(x.shape, generator=g, dtype=x.dtype)
        return out

    def __repr__(self) -> str:
        return f"FeatureNoise(std={self.std}, dropout={self.dropout}, seed={self.seed})"
