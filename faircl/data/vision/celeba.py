"""CelebA with binary attributes or Fitzpatrick skin-tone groups (finDML appendix D.2)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from faircl.data.base import encode_groups
from faircl.data.io import DataError
from faircl.data.summary import say
from faircl.data.vision.base import ImageFairDataModule, ImageTable

__all__ = ["FITZPATRICK_NAMES", "CelebA", "srgb_to_lab", "individual_typology_angle", "fitzpatrick_type",
           "skin_patches_ita", "read_celeba_attributes", "read_celeba_partition", "read_celeba_landmarks"]


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

    data_folder = "celeba_tiny"  # under $FAIRCL_DATA when data_dir is not given

    def __init__(self, data_dir: str | None = None, target: str = "Smiling", protected: str | list[str] = "Male",
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
        say(f"CelebA: {str(path)!r} declares {declared} images on line 1 but holds {len(files)} rows; using the rows")
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
