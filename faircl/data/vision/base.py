"""The shared pipeline of the image DataModules (UTKFace, CelebA, CUB-200-2011, a generic image folder + CSV).

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

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from faircl.data.base import FairDataModule, FairDataset
from faircl.data.io import DataError, stratified_split, stratified_take
from faircl.data.locations import default_data_dir, missing_data_dir
from faircl.data.summary import say
from faircl.data.vision.images import (IMAGENET_MEAN, IMAGENET_STD, _Cached, _ReadImage, _ToInput,
                                       simclr_view_transform)
from faircl.data.vision.imbalance import induce_imbalance

__all__ = ["ImageTable", "ImageFairDataModule", "MISSING_POLICIES"]

MISSING_POLICIES = ("error", "drop")


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
        max_rows: keep about this many rows (seeded, stratified by (class, group)) before splitting; for tests.
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
    #: folder under ``$FAIRCL_DATA`` used when ``data_dir`` is not given (``None``: the working directory)
    data_folder: str | None = None

    def __init__(
        self,
        data_dir: str | None = None,
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
        self.data_dir = default_data_dir(data_dir, self.data_folder) or Path(".")
        self._data_dir_given = data_dir is not None
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

    @property
    def input_kind(self) -> str:
        return "images"

    def view_transform(self) -> Callable:
        return simclr_view_transform(self.image_size, self.view_strength)

    # -------------------------------------------------------------- helpers for readers
    def _require(self, *names: str) -> Path:
        """Path of ``data_dir/<names>``; a clear error when the folder or file is missing."""
        if not self._data_dir_given and self.data_folder and str(self.data_dir) == ".":
            raise DataError(missing_data_dir(type(self).__name__, self.data_folder))
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
            keep = keep[stratified_take(table.y[keep], table.a[keep], self.max_rows, self.seed)]
        y, a = table.y[keep], table.a[keep]
        paths = [table.paths[i] for i in keep]
        if table.split is not None:
            split = np.asarray(table.split)[keep]
        else:
            split = np.full(len(y), "train", dtype=object)
            for name, rows in stratified_split(y, a, self.val_fraction, self.test_fraction, self.seed).items():
                split[rows] = name
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
            say(f"{type(self).__name__}: induced imbalance, kept {1 - self.imbalance_ratio:.0%} of the train rows "
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
            say(msg + "; dropped (missing_images='drop')")
        return np.flatnonzero(exists)
