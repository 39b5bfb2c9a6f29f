"""Image DataModules: UTKFace, CelebA (with Fitzpatrick skin tone), CUB-200-2011, a generic image folder + CSV, and
the embedded :class:`~faircl.data.synthetic.ColoredDigits` (re-exported here).

Every loader reads the published file formats, reports malformed rows as :class:`~faircl.data.base.DataError` naming
file, column and line, and shares one pipeline (:class:`ImageFairDataModule`):

* images are read with PIL, converted to RGB, resized to ``image_size`` and kept as ``uint8 [3, S, S]`` tensors
  (optionally cached in memory: ``cache=True``); the final transform scales to ``[0, 1]`` and normalises;
* ``two_views=True`` draws two SimCLR views (random resized crop, flip, colour jitter, grey) of every training image;
* splits are the dataset's official ones where they exist, otherwise a seeded split stratified by (class, group);
* ``induce_imbalance`` shrinks N randomly drawn classes (or given / drawn attribute groups) by 90 % in train, as in
  the finDML benchmark (Dullerud et al. 2022, §3.3), with a ``imbalance_draw`` index so a benchmark can average over
  several draws;
* rows whose image file is missing raise (``missing_images="error"``) or are dropped with a printed count and names
  (``missing_images="drop"``).
"""

from __future__ import annotations

import csv
import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from faircl.data.base import DataError, FairDataModule, FairDataset, encode_groups
from faircl.data.synthetic import ColoredDigits

__all__ = [
    "ColoredDigits", "ImageFairDataModule", "ImageTable", "UTKFace", "CelebA", "CUB200", "ImageCSV",
    "induce_imbalance", "imbalance_rows", "srgb_to_lab", "individual_typology_angle", "fitzpatrick_type",
    "FITZPATRICK_NAMES", "load_image",
]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
MISSING_POLICIES = ("error", "drop")


# ---------------------------------------------------------------------------------------------------------- images
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


def simclr_view_transform(size: int, strength: float = 0.5) -> Callable[[torch.Tensor], torch.Tensor]:
    """One random SimCLR view of a ``uint8 [3, S, S]`` image (Chen et al. 2020, §3 / appendix A).

    Uses :class:`faircl.data.augment.SimCLRTransform` when the package provides it, otherwise the same recipe with
    torchvision v2: random resized crop (scale 0.2–1), horizontal flip, colour jitter (0.8·s, 0.8·s, 0.8·s, 0.2·s)
    with p = 0.8, grey with p = 0.2.
    """
    try:
        from faircl.data.augment import SimCLRTransform
    except ImportError:  # the package without its augmentation module
        SimCLRTransform = None
    if SimCLRTransform is not None:
        # One view, float in [0, 1]; the DataModule's transform normalises it afterwards.
        return SimCLRTransform(size=size, scale=(0.2, 1.0), s=strength).transform
    from torchvision.transforms import v2

    s = float(strength)
    return v2.Compose([
        v2.RandomResizedCrop(size, scale=(0.2, 1.0), antialias=True),
        v2.RandomHorizontalFlip(),
        v2.RandomApply([v2.ColorJitter(0.8 * s, 0.8 * s, 0.8 * s, 0.2 * s)], p=0.8),
        v2.RandomGrayscale(p=0.2),
    ])


# ---------------------------------------------------------------------------------------------------------- imbalance
def imbalance_rows(
    labels: np.ndarray,
    *,
    num_values: int,
    n: int = 0,
    values: Sequence[int] | None = None,
    ratio: float = 0.9,
    seed: int = 0,
    draw: int = 0,
) -> tuple[np.ndarray, list[int]]:
    """Rows kept after shrinking some label values by ``ratio`` (finDML §3.3: 50 random classes reduced by 90 %).

    finDML also tops the other classes up to the size of the balanced control; with a fixed dataset there is nothing
    to top up from, so the imbalanced train split is smaller than the balanced one.

    Args:
        labels: ``[N]`` class ids or attribute ids (``-1`` rows are always kept).
        num_values: number of possible ids.
        n: how many ids to draw at random (ignored when ``values`` is given).
        values: the ids to shrink (e.g. the minority races); overrides the random draw.
        ratio: fraction of each chosen id's rows removed (rounded down, at least one row kept when any exist).
        seed: base seed; ``draw`` indexes independent draws of the chosen ids and removed rows.

    Returns:
        ``(kept row indices sorted [M], chosen ids)``.
    """
    labels = np.asarray(labels)
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"imbalance ratio must be in [0, 1), got {ratio}")
    rng = np.random.default_rng([int(seed), int(draw), 7919])
    if values is not None:
        chosen = sorted({int(v) for v in values})
        bad = [v for v in chosen if not 0 <= v < num_values]
        if bad:
            raise ValueError(f"imbalance values {bad} are outside [0, {num_values})")
    else:
        if not 0 <= n <= num_values:
            raise ValueError(f"cannot shrink {n} of {num_values} ids")
        chosen = sorted(int(v) for v in rng.choice(num_values, size=n, replace=False))
    keep = np.ones(len(labels), dtype=bool)
    for v in chosen:
        rows = np.flatnonzero(labels == v)
        n_drop = min(int(math.floor(ratio * len(rows))), max(len(rows) - 1, 0))
        if n_drop:
            keep[rng.choice(rows, size=n_drop, replace=False)] = False
    return np.flatnonzero(keep), chosen


def induce_imbalance(
    ds: FairDataset,
    *,
    by: str = "class",
    n: int = 0,
    values: Sequence[int] | None = None,
    ratio: float = 0.9,
    seed: int = 0,
    draw: int = 0,
) -> tuple[FairDataset, list[int]]:
    """A copy of ``ds`` where ``n`` random classes (``by="class"``) or attribute groups (``by="attribute"``), or the
    given ``values``, keep only ``1 − ratio`` of their rows. Returns ``(dataset, chosen ids)``."""
    if by not in ("class", "attribute"):
        raise ValueError(f"imbalance by={by!r} must be 'class' or 'attribute'")
    labels = (ds.y if by == "class" else ds.a).numpy()
    num = ds.num_classes if by == "class" else ds.num_groups
    rows, chosen = imbalance_rows(labels, num_values=num, n=n, values=values, ratio=ratio, seed=seed, draw=draw)
    return subset(ds, rows), chosen


def subset(ds: FairDataset, rows: np.ndarray) -> FairDataset:
    """The rows ``rows`` of ``ds`` as a new :class:`FairDataset` (same loader and transforms)."""
    rows = np.asarray(rows, dtype=np.int64)
    x = ds.x
    if isinstance(x, torch.Tensor):
        x_sub: Any = x[torch.from_numpy(rows)]
    elif isinstance(x, _Cached):
        x_sub = _Cached.__new__(_Cached)
        x_sub.paths = [x.paths[i] for i in rows]
        x_sub.data = x.data[torch.from_numpy(rows)]
    else:
        x_sub = [x[i] for i in rows]
    out = FairDataset(x_sub, ds.y[rows], ds.a[rows], num_classes=ds.num_classes, num_groups=ds.num_groups,
                      loader=ds.loader, transform=ds.transform, view_transform=ds.view_transform, source=ds.source)
    return out


# ---------------------------------------------------------------------------------------------------------- base
@dataclass
class ImageTable:
    """What a reader returns: one row per image.

    Attributes:
        paths: absolute image paths ``[N]``.
        y: task labels ``[N]``; a: attribute ids ``[N]`` (``-1`` unknown).
        class_names / group_names: display names.
        split: optional ``[N]`` array of ``"train" | "val" | "test"`` (official partitions); None → seeded split.
        source: file the rows come from (for messages).
        lines: line number of each row in ``source`` (for messages).
    """

    paths: list[str]
    y: np.ndarray
    a: np.ndarray
    class_names: list[str]
    group_names: list[str]
    split: np.ndarray | None = None
    source: str = ""
    lines: list[int] = field(default_factory=list)


class ImageFairDataModule(FairDataModule):
    """Shared pipeline of the image DataModules (subclasses implement :meth:`read_table`).

    Args:
        data_dir: dataset folder.
        image_size: side ``S`` of the square ``[3, S, S]`` inputs.
        normalize: ``imagenet`` (ImageNet mean/std) or ``none`` (inputs in ``[0, 1]``).
        cache: decode and resize every image once, into memory (fast epochs on small data).
        val_fraction / test_fraction: shares of the seeded split (used when the dataset has no official split).
        missing_images: ``error`` (default) or ``drop`` rows whose image file does not exist (count and names
            printed).
        max_rows: keep at most this many rows (seeded, stratified by (class, group)) before splitting; for tests.
        induce_imbalance: number of classes (``imbalance_by="class"``) or groups (``"attribute"``) to shrink in train,
            drawn at random; ``0`` = off. ``imbalance_values`` names the ids instead of drawing them.
        imbalance_by: ``class`` or ``attribute``.
        imbalance_values: explicit ids to shrink (e.g. minority races), overriding the draw.
        imbalance_ratio: fraction of the chosen rows removed (0.9 in finDML).
        imbalance_draw: index of the random draw (average benchmarks over several draws).
        view_strength: colour-jitter strength ``s`` of the SimCLR views.
        **kwargs: :class:`~faircl.data.base.FairDataModule` arguments (batch size, sampler, ``two_views``, seed, ...).
    """

    _abstract = True  # a shared base (subclasses implement its hook): not selectable with --data

    def __init__(
        self,
        data_dir: str = ".",
        image_size: int = 64,
        normalize: str = "imagenet",
        cache: bool = False,
        val_fraction: float = 0.1,
        test_fraction: float = 0.2,
        missing_images: str = "error",
        max_rows: int | None = None,
        induce_imbalance: int = 0,
        imbalance_by: str = "class",
        imbalance_values: list[int] | None = None,
        imbalance_ratio: float = 0.9,
        imbalance_draw: int = 0,
        view_strength: float = 0.5,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if image_size < 8:
            raise ValueError(f"image_size must be >= 8, got {image_size}")
        if normalize not in ("imagenet", "none"):
            raise ValueError(f"normalize={normalize!r} must be 'imagenet' or 'none'")
        if missing_images not in MISSING_POLICIES:
            raise ValueError(f"missing_images={missing_images!r} must be one of {MISSING_POLICIES}")
        if imbalance_by not in ("class", "attribute"):
            raise ValueError(f"imbalance_by={imbalance_by!r} must be 'class' or 'attribute'")
        if not (0 <= val_fraction < 1 and 0 < test_fraction < 1 and val_fraction + test_fraction < 1):
            raise ValueError(f"need 0 <= val_fraction, 0 < test_fraction and their sum < 1, got {val_fraction}, "
                             f"{test_fraction}")
        self.data_dir = Path(data_dir)
        self.image_size = image_size
        self.normalize = normalize
        self.cache = cache
        self.val_fraction, self.test_fraction = val_fraction, test_fraction
        self.missing_images = missing_images
        self.max_rows = max_rows
        self.induce_imbalance = induce_imbalance
        self.imbalance_by = imbalance_by
        self.imbalance_values = imbalance_values
        self.imbalance_ratio = imbalance_ratio
        self.imbalance_draw = imbalance_draw
        self.view_strength = view_strength
        self.class_names: list[str] = []
        self.group_names: list[str] = []
        #: ids shrunk by ``induce_imbalance`` (classes or groups), and the images dropped as missing
        self.imbalanced_ids: list[int] = []
        self.missing: list[str] = []

    # -------------------------------------------------------------- subclass API
    def read_table(self) -> ImageTable:
        """Parse the dataset's label files into an :class:`ImageTable` (override)."""
        raise NotImplementedError(f"{type(self).__name__} must implement read_table()")

    @property
    def input_dim(self) -> int:
        return 3

    def view_transform(self) -> Callable:
        return simclr_view_transform(self.image_size, self.view_strength)

    # -------------------------------------------------------------- helpers for readers
    def _require(self, *names: str) -> Path:
        """Path of ``data_dir/<names>``; a clear error when the folder or file is missing."""
        if not self.data_dir.is_dir():
            raise DataError(f"{type(self).__name__}: data_dir {str(self.data_dir)!r} is not a directory")
        path = self.data_dir.joinpath(*names)
        if not path.exists():
            present = sorted(p.name for p in self.data_dir.iterdir())[:20]
            raise DataError(f"{type(self).__name__}: expected file {str(path)!r} is missing (data_dir holds "
                            f"{present})")
        return path

    # -------------------------------------------------------------- pipeline
    def load_splits(self) -> dict[str, FairDataset]:
        table = self.read_table()
        self.class_names, self.group_names = list(table.class_names), list(table.group_names)
        keep = self._drop_missing(table)
        if self.max_rows is not None and len(keep) > self.max_rows:
            keep = keep[_stratified_take(table.y[keep], table.a[keep], len(table.group_names), self.max_rows,
                                         self.seed)]
        y, a = table.y[keep], table.a[keep]
        paths = [table.paths[i] for i in keep]
        if table.split is not None:
            split = np.asarray(table.split)[keep]
        else:
            split = _seeded_split(y, a, len(table.group_names), self.val_fraction, self.test_fraction, self.seed)
        mean, std = (IMAGENET_MEAN, IMAGENET_STD) if self.normalize == "imagenet" else (None, None)
        to_input = _ToInput(mean, std)
        out: dict[str, FairDataset] = {}
        for name in ("train", "val", "test"):
            rows = np.flatnonzero(split == name)
            p = [paths[i] for i in rows]
            x: Any = _Cached(p, self.image_size) if self.cache else p
            ds = FairDataset(x, y[rows], a[rows], num_classes=len(self.class_names),
                             num_groups=len(self.group_names), loader=None if self.cache else _ReadImage(
                                 self.image_size), transform=to_input, source=f"{table.source} [{name}]")
            out[name] = ds
        if self.induce_imbalance or self.imbalance_values:
            out["train"], self.imbalanced_ids = induce_imbalance(
                out["train"], by=self.imbalance_by, n=self.induce_imbalance, values=self.imbalance_values,
                ratio=self.imbalance_ratio, seed=self.seed, draw=self.imbalance_draw)
            names = self.class_names if self.imbalance_by == "class" else self.group_names
            print(f"{type(self).__name__}: induced imbalance, kept {1 - self.imbalance_ratio:.0%} of the train rows "
                  f"of {self.imbalance_by} {[names[i] for i in self.imbalanced_ids]} (draw {self.imbalance_draw})")
        return out

    def _drop_missing(self, table: ImageTable) -> np.ndarray:
        exists = np.array([os.path.isfile(p) for p in table.paths], dtype=bool)
        missing = np.flatnonzero(~exists)
        self.missing = [table.paths[i] for i in missing]
        if len(missing):
            first = missing[0]
            line = f", line {table.lines[first]}" if table.lines else ""
            names = ", ".join(os.path.basename(table.paths[i]) for i in missing[:5])
            msg = (f"{type(self).__name__}: {len(missing)} of {len(table.paths)} rows of {table.source!r} have no "
                   f"image file (first{line}: {table.paths[first]!r}; e.g. {names})")
            if self.missing_images == "error":
                raise DataError(msg + "; pass missing_images='drop' to skip them")
            print(msg + "; dropped (missing_images='drop')")
        return np.flatnonzero(exists)


def _cells(y: np.ndarray, a: np.ndarray, num_groups: int) -> np.ndarray:
    return y.astype(np.int64) * (num_groups + 1) + np.where(a < 0, num_groups, a)


def _seeded_split(y: np.ndarray, a: np.ndarray, num_groups: int, val_fraction: float, test_fraction: float,
                  seed: int) -> np.ndarray:
    """``"train" | "val" | "test"`` per row, seeded and stratified by (class, group) cell.

    Rows are shuffled within their cell and laid out cell after cell; position ``k`` goes to test when
    ``floor((k+1)·t) > floor(k·t)`` (``t = test_fraction``), and the rest to val by the same rule. So the split sizes are
    exact overall, every cell gets its share within one row, and tiny data still gets non-empty val/test splits.
    """
    rng = np.random.default_rng([int(seed), 104729])
    cells = _cells(y, a, num_groups)
    order = np.concatenate([rng.permutation(np.flatnonzero(cells == c)) for c in np.unique(cells)])
    split = np.full(len(y), "train", dtype=object)
    k = np.arange(len(order))
    is_test = np.floor((k + 1) * test_fraction) > np.floor(k * test_fraction)
    split[order[is_test]] = "test"
    rest = order[~is_test]
    vf = val_fraction / (1.0 - test_fraction)
    k = np.arange(len(rest))
    split[rest[np.floor((k + 1) * vf) > np.floor(k * vf)]] = "val"
    return split


def _stratified_take(y: np.ndarray, a: np.ndarray, num_groups: int, n: int, seed: int) -> np.ndarray:
    """About ``n`` row indices, the same share of every (class, group) cell, seeded; sorted."""
    rng = np.random.default_rng([int(seed), 15485863])
    cells = _cells(y, a, num_groups)
    frac = n / len(y)
    take = []
    for c in np.unique(cells):
        rows = np.flatnonzero(cells == c)
        k = max(1, int(round(frac * len(rows))))
        take.append(rng.choice(rows, size=min(k, len(rows)), replace=False))
    return np.sort(np.concatenate(take))


# ---------------------------------------------------------------------------------------------------------- UTKFace
UTK_RACES = ["White", "Black", "Asian", "Indian", "Others"]
UTK_GENDERS = ["male", "female"]


class UTKFace(ImageFairDataModule):
    """UTKFace aligned face crops with ``labels.csv`` (``filename, age, gender, ...race...``) and ``images/``.

    Gender ``0 = male, 1 = female``; race ``0 = White, 1 = Black, 2 = Asian, 3 = Indian, 4 = Others`` (the UTKFace file
    name convention ``[age]_[gender]_[race]_[datetime].jpg``). No official split: a seeded split stratified by
    (class, group).

    Args:
        data_dir: folder holding ``labels.csv`` and ``images/`` (or the images next to the CSV).
        target: ``gender`` | ``age_bins`` | ``race``.
        attribute: ``race`` | ``gender``.
        age_bins: increasing bin edges for ``target="age_bins"``: edges ``[20, 40, 60]`` give classes ``<20``,
            ``20-39``, ``40-59``, ``>=60``.
        **kwargs: :class:`ImageFairDataModule` arguments.
    """

    def __init__(self, data_dir: str = ".", target: str = "gender", attribute: str = "race",
                 age_bins: list[int] | None = None, **kwargs) -> None:
        super().__init__(data_dir=data_dir, **kwargs)
        if target not in ("gender", "age_bins", "race"):
            raise ValueError(f"UTKFace target={target!r} must be 'gender', 'age_bins' or 'race'")
        if attribute not in ("race", "gender"):
            raise ValueError(f"UTKFace attribute={attribute!r} must be 'race' or 'gender'")
        if target == attribute:
            raise ValueError(f"UTKFace target and attribute are both {target!r}")
        self.target, self.attribute = target, attribute
        self.age_bins = list(age_bins) if age_bins is not None else [20, 40, 60]
        if any(b2 <= b1 for b1, b2 in zip(self.age_bins, self.age_bins[1:])) or not self.age_bins:
            raise ValueError(f"age_bins must be a non-empty increasing list of edges, got {self.age_bins}")

    def _age_names(self) -> list[str]:
        e = self.age_bins
        return [f"<{e[0]}"] + [f"{lo}-{hi - 1}" for lo, hi in zip(e, e[1:])] + [f">={e[-1]}"]

    def read_table(self) -> ImageTable:
        csv_path = self._require("labels.csv")
        image_dir = self.data_dir / "images" if (self.data_dir / "images").is_dir() else self.data_dir
        rows = _read_csv(csv_path, required=("filename", "age", "gender", "race"))
        paths, ages, genders, races, lines = [], [], [], [], []
        for line, row in rows:
            paths.append(str(image_dir / row["filename"]))
            ages.append(_int_in(row["age"], csv_path, "age", line, 0, 200))
            genders.append(_int_in(row["gender"], csv_path, "gender", line, 0, 1))
            races.append(_int_in(row["race"], csv_path, "race", line, 0, 4))
            lines.append(line)
        ages_a, genders_a, races_a = np.array(ages), np.array(genders), np.array(races)
        if self.target == "gender":
            y, classes = genders_a, UTK_GENDERS
        elif self.target == "race":
            y, classes = races_a, UTK_RACES
        else:
            y, classes = np.searchsorted(np.array(self.age_bins), ages_a, side="right"), self._age_names()
        a, groups = (races_a, UTK_RACES) if self.attribute == "race" else (genders_a, UTK_GENDERS)
        return ImageTable(paths, y.astype(np.int64), a.astype(np.int64), list(classes), list(groups),
                          source=str(csv_path), lines=lines)


# ---------------------------------------------------------------------------------------------------------- CelebA
#: Fitzpatrick categories from the mean ITA (Cheng et al. 2021, finDML appendix D.2 table 23): lower bounds in degrees.
FITZPATRICK_NAMES = ["I", "II", "III", "IV", "V", "VI"]
_ITA_LOWER = (50.0, 40.0, 30.0, 20.0, 10.0)

#: Landmarks of the aligned 178×218 CelebA crops (mean positions), used when no landmark file is given.
_CELEBA_ALIGNED = (178, 218)
_CELEBA_MEAN_LANDMARKS = {"lefteye_x": 69, "righteye_x": 108, "nose_x": 89, "nose_y": 134}


def srgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB (``[..., 3]`` in ``[0, 1]``) → CIELAB ``[..., 3]`` (L in ``[0, 100]``), D65 white, CIE 1976 formulas."""
    rgb = np.asarray(rgb, dtype=np.float64)
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124564, 0.3575761, 0.1804375],
                  [0.2126729, 0.7151522, 0.0721750],
                  [0.0193339, 0.1191920, 0.9503041]])
    xyz = lin @ m.T / np.array([0.95047, 1.0, 1.08883])
    eps, kappa = 216 / 24389, 24389 / 27
    f = np.where(xyz > eps, np.cbrt(xyz), (kappa * xyz + 16) / 116)
    L = 116 * f[..., 1] - 16
    a = 500 * (f[..., 0] - f[..., 1])
    b = 200 * (f[..., 1] - f[..., 2])
    return np.stack([L, a, b], axis=-1)


def individual_typology_angle(rgb: np.ndarray) -> float:
    """ITA in degrees of a skin patch ``[..., 3]`` (sRGB in ``[0, 1]``): ``arctan((L − 50) / b) · 180 / π`` over the
    patch's mean L and b in CIELAB (finDML appendix D.2). ``arctan2`` keeps it defined when ``b ≤ 0``."""
    lab = srgb_to_lab(np.asarray(rgb).reshape(-1, 3))
    L, b = float(lab[:, 0].mean()), float(lab[:, 2].mean())
    return math.degrees(math.atan2(L - 50.0, b))


def fitzpatrick_type(ita: float) -> int:
    """Fitzpatrick category id (0 = I … 5 = VI) of an ITA: I ≥ 50° > II ≥ 40° > III ≥ 30° > IV ≥ 20° > V ≥ 10° > VI."""
    for k, lower in enumerate(_ITA_LOWER):
        if ita >= lower:
            return k
    return len(_ITA_LOWER)


def skin_patches_ita(image: np.ndarray, landmarks: dict[str, float] | None = None, patch: int = 20,
                     reference: tuple[int, int] = _CELEBA_ALIGNED) -> float:
    """Mean ITA of three square skin patches of an RGB ``uint8 [H, W, 3]`` face: the cheeks below each eye at nose
    height ``(x_lefteye, y_nose)``, ``(x_righteye, y_nose)`` and the nose ``(x_nose, y_nose)`` (finDML D.2).

    ``landmarks`` are in the coordinates of ``reference`` (width, height) — the aligned CelebA crop — and are scaled to
    the image; without them the mean aligned-CelebA positions are used. ``patch`` is the side in reference pixels.
    """
    lm = dict(_CELEBA_MEAN_LANDMARKS)
    if landmarks:
        lm.update({k: v for k, v in landmarks.items() if k in lm})
    h, w = image.shape[:2]
    sx, sy = w / reference[0], h / reference[1]
    half_x, half_y = max(1, round(patch * sx / 2)), max(1, round(patch * sy / 2))
    yc = round(lm["nose_y"] * sy)
    itas = []
    for key in ("lefteye_x", "righteye_x", "nose_x"):
        xc = round(lm[key] * sx)
        crop = image[max(0, yc - half_y):yc + half_y, max(0, xc - half_x):xc + half_x]
        if crop.size:
            itas.append(individual_typology_angle(crop.astype(np.float64) / 255.0))
    if not itas:
        raise ValueError("no skin patch inside the image")
    return float(np.mean(itas))


class CelebA(ImageFairDataModule):
    """CelebA over the official ``list_attr_celeba.txt`` and an image folder (``img_align_celeba/`` or ``images/``).

    File format: line 1 the image count, line 2 the 40 attribute names, then ``filename v1 … v40`` with ``v ∈ {1, −1}``.
    A count that disagrees with the rows is reported, not fatal (cut copies keep the original header). The optional
    ``list_eval_partition.txt`` (``filename 0|1|2`` = train/val/test) gives the official split; otherwise a seeded one.

    Args:
        data_dir: folder holding ``list_attr_celeba.txt``.
        target: attribute name predicted as a binary task (e.g. ``Smiling``).
        protected: attribute name(s) forming the protected groups (intersectional when several, e.g.
            ``[Male, Young]``).
        skin_tone: protected groups are the six Fitzpatrick skin-tone categories from the ITA of skin patches
            (:func:`skin_patches_ita`; finDML appendix D.2), computed from the images (and
            ``list_landmarks_align_celeba.txt`` when present); replaces ``protected``.
        image_folder: image sub-folder (default: ``img_align_celeba`` if present, else ``images``).
        **kwargs: :class:`ImageFairDataModule` arguments (``missing_images="drop"`` for partial image folders).
    """

    def __init__(self, data_dir: str = ".", target: str = "Smiling", protected: str | list[str] = "Male",
                 skin_tone: bool = False, image_folder: str | None = None, **kwargs) -> None:
        super().__init__(data_dir=data_dir, **kwargs)
        self.target = target
        self.protected = [protected] if isinstance(protected, str) else list(protected)
        if not self.protected and not skin_tone:
            raise ValueError("CelebA needs at least one protected attribute name or skin_tone=True")
        self.skin_tone = skin_tone
        self.image_folder = image_folder
        #: mean ITA (degrees) of every row, filled when ``skin_tone=True``
        self.ita: np.ndarray | None = None

    def _image_dir(self) -> Path:
        if self.image_folder is not None:
            path = self.data_dir / self.image_folder
            if not path.is_dir():
                raise DataError(f"CelebA: image folder {str(path)!r} does not exist")
            return path
        for name in ("img_align_celeba", "images"):
            if (self.data_dir / name).is_dir():
                return self.data_dir / name
        raise DataError(f"CelebA: no image folder 'img_align_celeba/' or 'images/' in {str(self.data_dir)!r}")

    def read_table(self) -> ImageTable:
        attr_path = self._require("list_attr_celeba.txt")
        names, files, values, lines = read_celeba_attributes(attr_path)
        for col in [self.target, *self.protected]:
            if col not in names:
                raise DataError(f"CelebA: attribute {col!r} is not a column of {str(attr_path)!r}; columns: {names}")
        image_dir = self._image_dir()
        paths = [str(image_dir / f) for f in files]
        y = (values[:, names.index(self.target)] > 0).astype(np.int64)
        split = None
        part_path = self.data_dir / "list_eval_partition.txt"
        if part_path.exists():
            split = read_celeba_partition(part_path, files)
        table = ImageTable(paths, y, np.zeros(len(files), dtype=np.int64), [f"not {self.target}", self.target], [],
                           split=split, source=str(attr_path), lines=lines)
        if self.skin_tone:
            table.group_names = list(FITZPATRICK_NAMES)
            table.a = self._skin_tone_groups(table, files)
        else:
            cols = [[("1" if v > 0 else "0") for v in values[:, names.index(c)]] for c in self.protected]
            ids, _ = encode_groups(cols, categories=[["0", "1"]] * len(cols))
            table.a = ids
            combos: list[list[str]] = [[]]
            for c in self.protected:
                combos = [prev + [v] for prev in combos for v in (f"not {c}", c)]
            table.group_names = ["|".join(cmb) for cmb in combos]
        return table

    def _skin_tone_groups(self, table: ImageTable, files: list[str]) -> np.ndarray:
        landmarks = {}
        lm_path = self.data_dir / "list_landmarks_align_celeba.txt"
        if lm_path.exists():
            landmarks = read_celeba_landmarks(lm_path)
        ita = np.full(len(files), np.nan)
        a = np.full(len(files), -1, dtype=np.int64)
        from PIL import Image

        for i, (path, name) in enumerate(zip(table.paths, files)):
            if not os.path.isfile(path):
                continue  # reported by the missing-image check
            with Image.open(path) as im:
                arr = np.asarray(im.convert("RGB"))
            ita[i] = skin_patches_ita(arr, landmarks.get(name))
            a[i] = fitzpatrick_type(ita[i])
        self.ita = ita
        return a


def _split_fields(line: str) -> list[str]:
    return line.split()


def read_celeba_attributes(path: str | os.PathLike) -> tuple[list[str], list[str], np.ndarray, list[int]]:
    """Parse ``list_attr_celeba.txt``: ``(attribute names, file names, values int8 [N, 40] in {−1, 1}, line numbers)``.

    Raises:
        DataError: naming the file and line of a malformed header or row.
    """
    path = Path(path)
    with open(path, encoding="utf-8") as fh:
        raw = fh.read().splitlines()
    if len(raw) < 2:
        raise DataError(f"file {str(path)!r}: expected a count on line 1 and attribute names on line 2")
    try:
        declared = int(raw[0].strip())
    except ValueError:
        raise DataError(f"file {str(path)!r}, line 1: expected the number of images, got {raw[0][:40]!r}") from None
    names = _split_fields(raw[1])
    if not names:
        raise DataError(f"file {str(path)!r}, line 2: no attribute names")
    files, rows, lines = [], [], []
    for ln, text in enumerate(raw[2:], start=3):
        fields = _split_fields(text)
        if not fields:
            continue
        if len(fields) != len(names) + 1:
            raise DataError(f"file {str(path)!r}, line {ln}: expected a file name and {len(names)} values, got "
                            f"{len(fields)} fields")
        vals = []
        for col, v in zip(names, fields[1:]):
            if v not in ("1", "-1"):
                raise DataError(f"file {str(path)!r}, line {ln}, column {col!r}: value {v!r} is not 1 or -1")
            vals.append(int(v))
        files.append(fields[0])
        rows.append(vals)
        lines.append(ln)
    if declared != len(files):
        print(f"CelebA: {str(path)!r} declares {declared} images on line 1 but holds {len(files)} rows; using the rows")
    return names, files, np.asarray(rows, dtype=np.int8).reshape(len(files), len(names)), lines


def read_celeba_partition(path: str | os.PathLike, files: Sequence[str]) -> np.ndarray:
    """``list_eval_partition.txt`` (``filename 0|1|2``) → ``"train" | "val" | "test"`` for each of ``files``."""
    path = Path(path)
    names = {"0": "train", "1": "val", "2": "test"}
    part: dict[str, str] = {}
    with open(path, encoding="utf-8") as fh:
        for ln, text in enumerate(fh, start=1):
            fields = text.split()
            if not fields:
                continue
            if len(fields) != 2 or fields[1] not in names:
                raise DataError(f"file {str(path)!r}, line {ln}: expected 'filename 0|1|2', got {text.strip()[:60]!r}")
            part[fields[0]] = names[fields[1]]
    absent = [f for f in files if f not in part]
    if absent:
        raise DataError(f"file {str(path)!r} has no partition for {len(absent)} image(s), e.g. {absent[:3]}")
    return np.array([part[f] for f in files], dtype=object)


def read_celeba_landmarks(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """``list_landmarks_align_celeba.txt`` (count, 10 names, ``filename x y …``) → per file ``{name: value}``."""
    path = Path(path)
    with open(path, encoding="utf-8") as fh:
        raw = fh.read().splitlines()
    if len(raw) < 2:
        raise DataError(f"file {str(path)!r}: expected a count on line 1 and landmark names on line 2")
    names = raw[1].split()
    out = {}
    for ln, text in enumerate(raw[2:], start=3):
        fields = text.split()
        if not fields:
            continue
        if len(fields) != len(names) + 1:
            raise DataError(f"file {str(path)!r}, line {ln}: expected a file name and {len(names)} coordinates")
        try:
            out[fields[0]] = {n: float(v) for n, v in zip(names, fields[1:])}
        except ValueError:
            raise DataError(f"file {str(path)!r}, line {ln}: coordinates must be numbers") from None
    return out


# ---------------------------------------------------------------------------------------------------------- CUB-200
class CUB200(ImageFairDataModule):
    """CUB-200-2011 (Wah et al. 2011) with the bird's primary colour as the protected attribute (finDML §3.3).

    Reads the official files: ``images.txt`` (``id path``), ``image_class_labels.txt`` (``id class``, 1-based),
    ``train_test_split.txt`` (``id is_train``), ``classes.txt`` (optional names), ``attributes.txt`` (``id name``, in
    ``data_dir``, ``data_dir/attributes/`` or the parent folder as in the archive) and
    ``attributes/image_attribute_labels.txt`` (``image attribute is_present certainty [time]``).

    Colour: an image may carry several ``has_primary_color::<colour>`` labels; finDML takes "the mode". We read this as:
    among the colours labelled present on the image, the one labelled most often over the images of its class
    (``color_by="image"``, default), or the class's most frequent colour for every image of the class
    (``color_by="class"``). Images with no colour label get their class's mode. Ties go to the lower attribute id.
    Validation rows are a seeded ``val_fraction`` of the official train split.

    Args:
        data_dir: the ``CUB_200_2011`` folder (holding ``images/`` and the text files).
        color_by: ``image`` or ``class``.
        **kwargs: :class:`ImageFairDataModule` arguments.
    """

    def __init__(self, data_dir: str = ".", color_by: str = "image", **kwargs) -> None:
        super().__init__(data_dir=data_dir, **kwargs)
        if color_by not in ("image", "class"):
            raise ValueError(f"CUB200 color_by={color_by!r} must be 'image' or 'class'")
        self.color_by = color_by

    def _attributes_file(self) -> Path:
        for cand in (self.data_dir / "attributes.txt", self.data_dir / "attributes" / "attributes.txt",
                     self.data_dir.parent / "attributes.txt"):
            if cand.exists():
                return cand
        raise DataError(f"CUB200: attributes.txt not found in {str(self.data_dir)!r}, its 'attributes/' folder or its "
                        "parent")

    def read_table(self) -> ImageTable:
        images_path = self._require("images.txt")
        ids_paths = _read_id_table(images_path, ("image_id", "path"))
        labels = _read_id_table(self._require("image_class_labels.txt"), ("image_id", "class_id"))
        is_train = _read_id_table(self._require("train_test_split.txt"), ("image_id", "is_training_image"))
        attr_names = dict(_read_id_table(self._attributes_file(), ("attribute_id", "attribute_name"), rest=True))
        colors = {int(i): n.split("::", 1)[1] for i, n in attr_names.items() if n.startswith("has_primary_color::")}
        if not colors:
            raise DataError("CUB200: attributes.txt has no 'has_primary_color::<colour>' attributes")
        present = _read_primary_colors(self._require("attributes", "image_attribute_labels.txt"), set(colors))

        image_dir = self.data_dir / "images"
        ids = [int(i) for i, _ in ids_paths]
        path_of = {int(i): p for i, p in ids_paths}
        label_of = {int(i): _to_int(c, "image_class_labels.txt", "class_id") for i, c in labels}
        train_of = {int(i): t for i, t in is_train}
        for name, mapping in (("image_class_labels.txt", label_of), ("train_test_split.txt", train_of)):
            absent = [i for i in ids if i not in mapping]
            if absent:
                raise DataError(f"CUB200: {name} has no row for image id(s) {absent[:5]} listed in images.txt")
        class_ids = sorted(set(label_of.values()))
        class_index = {c: k for k, c in enumerate(class_ids)}
        class_names = [str(c) for c in class_ids]
        classes_path = self.data_dir / "classes.txt"
        if classes_path.exists():
            names = dict(_read_id_table(classes_path, ("class_id", "class_name")))
            class_names = [names.get(str(c), str(c)) for c in class_ids]
        y = np.array([class_index[label_of[i]] for i in ids], dtype=np.int64)

        color_ids = sorted(colors)
        col_index = {c: k for k, c in enumerate(color_ids)}
        class_counts: dict[int, Counter] = {}
        for i in ids:
            class_counts.setdefault(label_of[i], Counter()).update(present.get(i, ()))

        def mode(counter: Counter, among: Sequence[int] | None = None) -> int:
            cands = among if among else list(counter)
            if not cands:
                return -1
            return min(cands, key=lambda c: (-counter.get(c, 0), c))

        a = np.empty(len(ids), dtype=np.int64)
        for r, i in enumerate(ids):
            cls_counter = class_counts[label_of[i]]
            own = sorted(present.get(i, ()))
            pick = mode(cls_counter, own if self.color_by == "image" and own else None)
            a[r] = col_index[pick] if pick >= 0 else -1
        split = np.array(["train" if train_of[i] == "1" else "test" for i in ids], dtype=object)
        bad = [i for i in ids if train_of[i] not in ("0", "1")]
        if bad:
            raise DataError(f"CUB200: train_test_split.txt, image id {bad[0]}: is_training_image must be 0 or 1")
        rng = np.random.default_rng([int(self.seed), 32452843])
        for c in np.unique(y):
            rows = np.flatnonzero((y == c) & (split == "train"))
            n_val = int(round(self.val_fraction * len(rows)))
            split[rng.choice(rows, size=n_val, replace=False)] = "val"
        return ImageTable([str(image_dir / path_of[i]) for i in ids], y, a, class_names,
                          [colors[c] for c in color_ids], split=split, source=str(images_path))


def _read_id_table(path: Path, columns: tuple[str, str], rest: bool = False) -> list[tuple[str, str]]:
    """Whitespace-separated ``id value`` rows (``rest=True``: the value is the rest of the line)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for ln, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            fields = text.split(None, 1) if rest else text.split()
            if len(fields) != 2:
                raise DataError(f"file {str(path)!r}, line {ln}: expected 2 fields ({', '.join(columns)}), got "
                                f"{len(fields)}")
            if not fields[0].isdigit():
                raise DataError(f"file {str(path)!r}, line {ln}, column {columns[0]!r}: {fields[0]!r} is not an id")
            out.append((fields[0], fields[1].strip()))
    if not out:
        raise DataError(f"file {str(path)!r} has no rows")
    return out


def _read_primary_colors(path: Path, color_attrs: set[int]) -> dict[int, set[int]]:
    """``image_attribute_labels.txt`` → per image the primary-colour attribute ids labelled present.

    Rows are ``image_id attribute_id is_present certainty_id [time]``; the official file has a few rows with extra
    fields, so four or more fields are accepted and the first three are read.
    """
    out: dict[int, set[int]] = {}
    with open(path, encoding="utf-8") as fh:
        for ln, text in enumerate(fh, start=1):
            fields = text.split()
            if not fields:
                continue
            if len(fields) < 4:
                raise DataError(f"file {str(path)!r}, line {ln}: expected 'image_id attribute_id is_present "
                                f"certainty_id time', got {len(fields)} fields")
            try:
                img, attr, flag = int(fields[0]), int(fields[1]), int(fields[2])
            except ValueError:
                raise DataError(f"file {str(path)!r}, line {ln}: image_id, attribute_id and is_present must be "
                                "integers") from None
            if flag not in (0, 1):
                raise DataError(f"file {str(path)!r}, line {ln}, column 'is_present': {flag} is not 0 or 1")
            if flag and attr in color_attrs:
                out.setdefault(img, set()).add(attr)
    return out


def _to_int(value: str, source: str, column: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise DataError(f"file {source!r}, column {column!r}: {value!r} is not an integer") from None


# ---------------------------------------------------------------------------------------------------------- CSV
def _read_csv(path: Path, required: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """Rows of a CSV with a header, as ``(line number, row dict)``; missing columns or short rows raise DataError."""
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        absent = [c for c in required if c not in header]
        if absent:
            raise DataError(f"file {str(path)!r}, line 1: missing column(s) {absent}; header is {header}")
        out = []
        for row in reader:
            line = reader.line_num
            if None in row or any(row.get(c) is None for c in header):
                raise DataError(f"file {str(path)!r}, line {line}: expected {len(header)} fields ({header})")
            for c in required:
                if not str(row[c]).strip():
                    raise DataError(f"file {str(path)!r}, line {line}, column {c!r}: empty value")
            out.append((line, row))
    if not out:
        raise DataError(f"file {str(path)!r} has a header but no rows")
    return out


def _int_in(value: str, path: Path, column: str, line: int, lo: int, hi: int) -> int:
    try:
        v = int(str(value).strip())
    except ValueError:
        raise DataError(f"file {str(path)!r}, line {line}, column {column!r}: {value!r} is not an integer") from None
    if not lo <= v <= hi:
        raise DataError(f"file {str(path)!r}, line {line}, column {column!r}: {v} outside [{lo}, {hi}]")
    return v


class ImageCSV(ImageFairDataModule):
    """Any image folder described by a CSV: one row per image with its path, label and attribute column(s).

    Labels and attribute values may be strings or integers; classes are the sorted distinct labels (numeric order when
    all are integers) unless ``class_names`` fixes them. Several attribute columns form intersectional groups
    (:func:`~faircl.data.base.encode_groups`); ``x``, an empty cell or ``unknown`` is an unknown attribute (``-1``).

    Args:
        data_dir: folder holding the CSV; image paths are relative to ``data_dir / image_root``.
        csv: CSV file name (relative to ``data_dir``).
        path_column / label_column: column names of the image path and the task label.
        attribute_columns: protected attribute column(s).
        split_column: optional column with ``train`` / ``val`` / ``test`` (otherwise a seeded split).
        image_root: sub-folder the paths are relative to.
        class_names: fixed class order (labels outside it raise).
        **kwargs: :class:`ImageFairDataModule` arguments.
    """

    def __init__(self, data_dir: str = ".", csv: str = "labels.csv", path_column: str = "path",
                 label_column: str = "label", attribute_columns: str | list[str] = "group",
                 split_column: str | None = None, image_root: str = "", class_names: list[str] | None = None,
                 **kwargs) -> None:
        super().__init__(data_dir=data_dir, **kwargs)
        self.csv, self.path_column, self.label_column = csv, path_column, label_column
        self.attribute_columns = [attribute_columns] if isinstance(attribute_columns, str) else list(
            attribute_columns)
        self.split_column, self.image_root = split_column, image_root
        self.fixed_class_names = list(class_names) if class_names is not None else None

    def read_table(self) -> ImageTable:
        path = self._require(self.csv)
        required = [self.path_column, self.label_column, *self.attribute_columns]
        if self.split_column:
            required.append(self.split_column)
        rows = _read_csv(path, required=[self.path_column, self.label_column])
        header = list(rows[0][1])
        absent = [c for c in required if c not in header]
        if absent:
            raise DataError(f"file {str(path)!r}, line 1: missing column(s) {absent}; header is {header}")
        labels = [r[self.label_column].strip() for _, r in rows]
        if self.fixed_class_names is not None:
            classes = self.fixed_class_names
        else:
            distinct = sorted(set(labels))
            classes = sorted(distinct, key=int) if all(_is_int(v) for v in distinct) else distinct
        index = {c: k for k, c in enumerate(classes)}
        y = np.empty(len(rows), dtype=np.int64)
        for k, ((line, _), lab) in enumerate(zip(rows, labels)):
            if lab not in index:
                raise DataError(f"file {str(path)!r}, line {line}, column {self.label_column!r}: label {lab!r} is not "
                                f"one of {classes}")
            y[k] = index[lab]
        try:
            a, groups = encode_groups([[r[c] for _, r in rows] for c in self.attribute_columns])
        except DataError as e:
            raise DataError(f"file {str(path)!r}: {e}") from None
        split = None
        if self.split_column:
            split = np.empty(len(rows), dtype=object)
            for k, (line, r) in enumerate(rows):
                v = r[self.split_column].strip().lower()
                v = {"valid": "val", "validation": "val", "dev": "val"}.get(v, v)
                if v not in ("train", "val", "test"):
                    raise DataError(f"file {str(path)!r}, line {line}, column {self.split_column!r}: {v!r} is not "
                                    "train, val or test")
                split[k] = v
        root = self.data_dir / self.image_root
        paths = [str(root / r[self.path_column].strip()) for _, r in rows]
        return ImageTable(paths, y, a, [str(c) for c in classes], groups, split=split, source=str(path),
                          lines=[line for line, _ in rows])


def _is_int(v: str) -> bool:
    try:
        int(v)
        return True
    except ValueError:
        return False
