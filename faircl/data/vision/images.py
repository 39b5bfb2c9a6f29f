"""Reading images for the image DataModules: files to ``uint8 [3, S, S]`` tensors, caching, input transforms."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from faircl.data.augment.image import SimCLRTransform
from faircl.data.io import DataError

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "load_image", "simclr_view_transform"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def load_image(path: str | os.PathLike, size: int | None = None) -> torch.Tensor:
    """Read an image file as an RGB ``uint8`` tensor ``[3, H, W]`` (resized to ``[3, size, size]`` when given).

    Raises:
        DataError: the file is missing or not a readable image (the message names the file).
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            if size is not None and im.size != (size, size):
                im = im.resize((size, size), Image.BILINEAR)
            arr = np.asarray(im, dtype=np.uint8)
    except FileNotFoundError as e:
        raise DataError(f"image file {str(path)!r} does not exist") from e
    except (UnidentifiedImageError, OSError) as e:
        raise DataError(f"image file {str(path)!r} is not a readable image: {e}") from e
    return torch.from_numpy(arr.copy()).permute(2, 0, 1).contiguous()


class _ReadImage:
    """Picklable loader ``path → uint8 [3, S, S]`` for DataLoader workers."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __call__(self, path: str) -> torch.Tensor:
        return load_image(path, self.size)


class _Cached:
    """Images decoded once into one ``uint8 [N, 3, S, S]`` tensor; indexable like the path list it replaces."""

    def __init__(self, paths: Sequence[str], size: int) -> None:
        self.paths = list(paths)
        self.data = torch.stack([load_image(p, size) for p in self.paths]) if self.paths else torch.zeros(
            (0, 3, size, size), dtype=torch.uint8)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.data[i]

    def take(self, rows: torch.Tensor) -> torch.Tensor:
        """The images of ``rows`` as one ``uint8 [B, 3, S, S]`` tensor (a batch in one indexing call)."""
        return self.data[rows]


class _ToInput:
    """``uint8 [3, S, S] → float [3, S, S]`` in ``[0, 1]``, then ``(x − mean) / std`` (torchvision v2)."""

    def __init__(self, mean: Sequence[float] | None, std: Sequence[float] | None) -> None:
        from torchvision.transforms import v2

        steps: list[Any] = [v2.ToDtype(torch.float32, scale=True)]
        if mean is not None and std is not None:
            steps.append(v2.Normalize(list(mean), list(std)))
        self.pipeline = v2.Compose(steps)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.pipeline(x)

    def batch(self, x: torch.Tensor) -> torch.Tensor:
        """The same transform of a whole batch ``uint8 [B, 3, S, S]`` (element-wise: equal to row by row)."""
        return self.pipeline(x)


def simclr_view_transform(size: int, strength: float = 0.5) -> Callable[[torch.Tensor], torch.Tensor]:
    """One random SimCLR view of a ``uint8 [3, S, S]`` image (Chen et al. 2020, §3 / appendix A).

    The one-view pipeline of :class:`faircl.data.augment.SimCLRTransform`: random resized crop (scale 0.2–1),
    horizontal flip, colour jitter (0.8·s, 0.8·s, 0.8·s, 0.2·s) with p = 0.8, grey with p = 0.2. The view is a float
    image in ``[0, 1]``; the DataModule's transform normalises it afterwards.
    """
    return SimCLRTransform(size=size, scale=(0.2, 1.0), s=strength).transform
