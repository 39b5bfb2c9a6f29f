"""Moji (Blodgett et al. 2016; Elazar & Goldberg 2018): DeepMoji features, sentiment and dialect."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from faircl.data.augment.image import FeatureNoise
from faircl.data.base import FairDataModule, FairDataset
from faircl.data.io import DataError, require_path, where

__all__ = ["Moji"]


_MOJI_FILES = {  # file: (sentiment y: 1 = happy, race a: 1 = AAE)
    "pos_pos": (1, 1), "pos_neg": (1, 0), "neg_pos": (0, 1), "neg_neg": (0, 0),
}


class Moji(FairDataModule):
    """Moji (Blodgett et al. 2016; Elazar & Goldberg 2018): tweet sentiment with the author's dialect (race proxy).

    ``data_dir`` holds ``train/``, ``dev/`` and ``test/``, each with the DeepMoji feature files ``pos_pos.npy``
    (happy, AAE), ``pos_neg.npy`` (happy, SAE), ``neg_pos.npy`` (sad, AAE) and ``neg_neg.npy`` (sad, SAE), each a
    float array ``[n, 2304]``. Labels: ``sad`` = 0, ``happy`` = 1; groups: ``SAE`` = 0, ``AAE`` = 1.

    The training set is subsampled to the stereotyping ``ratio`` of Elazar & Goldberg / Shen et al.: sentiment and race
    each balanced, with ``ratio`` of the happy tweets AAE and ``ratio`` of the sad tweets SAE (0.8 gives 40% happy-AAE,
    10% happy-SAE, 10% sad-AAE, 40% sad-SAE). As in fairlib, the first rows of each file are taken. ``n_train`` rows
    are drawn (100k in the papers); when a file is too short the total shrinks so that the ratio holds exactly. Dev
    and test are used whole (they are balanced).

    Args:
        data_dir: the folder above ``train/``, ``dev/``, ``test/``.
        ratio: stereotyping ratio of the training set (0.5 = no correlation).
        n_train: training rows (``None`` = as many as the files allow at this ratio).
        view_noise: std of the Gaussian feature noise making the second view (``two_views=True``).
    """

    def __init__(self, data_dir: str | None = None, ratio: float = 0.8, n_train: int | None = 100_000,
                 view_noise: float = 0.05, **kwargs) -> None:
        super().__init__(**kwargs)
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(f"ratio must be in [0, 1], got {ratio}")
        if n_train is not None and n_train < 4:
            raise ValueError(f"n_train must be >= 4 or None, got {n_train}")
        self.data_dir = Path(data_dir).expanduser() if data_dir is not None else None
        self.ratio, self.n_train, self.view_noise = ratio, n_train, view_noise
        self.class_names = ["sad", "happy"]
        self.group_names = ["SAE", "AAE"]
        self._dim = 0

    @property
    def input_dim(self) -> int:
        self.splits  # noqa: B018
        return self._dim

    def _load(self, folder: Path) -> dict[str, np.ndarray]:
        arrays = {}
        for stem in _MOJI_FILES:
            path = require_path(folder / f"{stem}.npy", "Moji feature file",
                                "Expected DeepMoji features {train,dev,test}/{pos_pos,pos_neg,neg_pos,neg_neg}.npy.")
            try:
                arr = np.load(path, mmap_mode="r", allow_pickle=False)
            except ValueError as err:
                raise DataError(f"cannot read {where(path)} as a numeric .npy array: {err}") from err
            if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.number):
                raise DataError(f"{where(path)}: expected a numeric [rows, features] array, got shape {arr.shape} "
                                f"dtype {arr.dtype}")
            bad = np.flatnonzero(~np.isfinite(np.asarray(arr, dtype=np.float64)).all(1))
            if len(bad):
                col = int(np.flatnonzero(~np.isfinite(np.asarray(arr[bad[0]], dtype=np.float64)))[0])
                raise DataError(f"{where(path, f'feature {col}', int(bad[0]))}: non-finite value "
                                f"({len(bad)} bad row(s))")
            arrays[stem] = arr
        dims = {s: a.shape[1] for s, a in arrays.items()}
        if len(set(dims.values())) != 1:
            raise DataError(f"Moji files in {str(folder)!r} have different feature sizes {dims}")
        return arrays

    def load_splits(self) -> dict[str, FairDataset]:
        if self.data_dir is None:
            raise ValueError("Moji needs data_dir (the folder holding train/, dev/ and test/ with the DeepMoji .npy "
                             "files)")
        root = require_path(self.data_dir, "Moji data_dir")
        out = {}
        for split, folder in (("train", "train"), ("val", "dev"), ("test", "test")):
            arrays = self._load(require_path(root / folder, f"Moji {folder}/ folder"))
            if split == "train":
                share = {s: 0.5 * (self.ratio if y == a else 1 - self.ratio) for s, (y, a) in _MOJI_FILES.items()}
                cap = min(len(arrays[s]) / share[s] for s in share if share[s] > 0)
                total = cap if self.n_train is None else min(self.n_train, cap)
                take = {s: min(int(round(total * share[s])), len(arrays[s])) for s in share}
            else:
                take = {s: len(arrays[s]) for s in arrays}
            xs, ys, as_ = [], [], []
            for stem, (y, a) in _MOJI_FILES.items():
                n = take[stem]
                xs.append(np.asarray(arrays[stem][:n], dtype=np.float32))
                ys.append(np.full(n, y))
                as_.append(np.full(n, a))
            self._dim = int(xs[0].shape[1])
            out[split] = FairDataset(torch.from_numpy(np.concatenate(xs)), np.concatenate(ys), np.concatenate(as_),
                                     num_classes=2, num_groups=2, source=str(root / folder))
        return out

    def view_transform(self) -> Callable:
        return FeatureNoise(std=self.view_noise, seed=self.seed)
