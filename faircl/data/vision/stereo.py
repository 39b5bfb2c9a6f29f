"""Moji-style stereotyped image data (the vision benchmark's protocols): about ``bias`` of the train rows have
attribute = label, validation and test are balanced, so a model that takes the attribute as a shortcut shows a TPR gap
between the groups there.

* :class:`StereoDigits` — ColoredDigits, two classes (digit ≥ 5), colour (red / green) with exactly ``bias`` of each
  label's train rows coloured as the label, and exactly half of each label's validation and test rows.
* :class:`StereoUTKFace` — the UTKFace subset restricted to White / Black faces, task gender, attribute race; the
  stereotype (male ↔ White, female ↔ Black) is induced in train by subsampling the counter-stereotyped rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from faircl.data.base import FairDataset
from faircl.data.synthetic import ColoredDigits
from faircl.data.vision.base import ImageTable
from faircl.data.vision.imbalance import subset
from faircl.data.vision.utkface import UTKFace

__all__ = ["StereoDigits", "StereoUTKFace", "exact_stereotype"]


def exact_stereotype(y: np.ndarray, share: float, rng: np.random.Generator) -> np.ndarray:
    """Binary attributes with exactly ``round(share · n_c)`` rows of every label ``c`` given ``a = c`` (the rest
    ``a = 1 − c``), placed at random: ``share = 0.5`` balances every (label, attribute) cell."""
    a = np.empty_like(y)
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        k = int(round(share * len(rows)))
        a[rows[:k]], a[rows[k:]] = c, 1 - c
    return a.astype(np.int64)


class StereoDigits(ColoredDigits):
    """ColoredDigits with the task ``digit ≥ 5`` and colour stereotyped on the *label*: exactly ``bias`` of each
    label's train rows have colour = label, and exactly half of each label's validation and test rows (balanced
    cells; :func:`exact_stereotype`).

    Args:
        bias: ``P(colour = label)`` in train.
        max_train: keep at most this many train rows (smoke runs).
        **kwargs: :class:`ColoredDigits` arguments.
    """

    def __init__(self, bias: float = 0.8, max_train: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_groups=2, bias=bias, binary_task=True, **kwargs)
        self.max_train = max_train

    def digit_splits(self) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], np.random.Generator]:
        img, digit, parts, rng = super().digit_splits()
        if self.max_train is not None:
            parts["train"] = parts["train"][:self.max_train]
        return img, digit, parts, rng

    def split_attributes(self, split: str, digit: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return exact_stereotype(y, self.bias if split == "train" else 0.5, rng)


class StereoUTKFace(UTKFace):
    """UTKFace, White and Black faces only (race ids 0 / 1), task gender, attribute race; in train only ``ceil(n ·
    (1 − bias) / bias)`` of the counter-stereotyped rows of each gender are kept (``n`` = its stereotyped rows:
    male ↔ White, female ↔ Black), so ``P(a = y) ≈ bias``; validation and test keep the balanced cells.

    Args:
        bias: the train share of rows with attribute = label.
        **kwargs: :class:`UTKFace` arguments (``target`` / ``attribute`` are fixed).
    """

    def __init__(self, data_dir: str | None = None, bias: float = 0.8, **kwargs: Any) -> None:
        super().__init__(data_dir=data_dir, target="gender", attribute="race", **kwargs)
        self.bias = bias

    def read_table(self) -> ImageTable:
        t = super().read_table()
        keep = np.flatnonzero(t.a <= 1)
        return ImageTable([t.paths[i] for i in keep], t.y[keep], t.a[keep], t.class_names, ["White", "Black"],
                          source=t.source, lines=[t.lines[i] for i in keep] if t.lines else [])

    def load_splits(self) -> dict[str, FairDataset]:
        out = super().load_splits()
        tr = out["train"]
        y, a = tr.y.numpy(), tr.a.numpy()
        rng = np.random.default_rng([self.seed, 4242])
        keep = [np.flatnonzero(y == a)]
        for c in (0, 1):
            agree, other = np.flatnonzero((y == c) & (a == c)), np.flatnonzero((y == c) & (a != c))
            k = min(len(other), int(np.ceil(len(agree) * (1 - self.bias) / self.bias)))
            keep.append(rng.choice(other, size=k, replace=False))
        out["train"] = subset(tr, np.sort(np.concatenate(keep)))
        return out
