"""UTKFace aligned face crops: gender / age bins / race."""

from __future__ import annotations

import numpy as np

from faircl.data.io import int_in, read_csv_rows
from faircl.data.vision.base import ImageFairDataModule, ImageTable

__all__ = ["UTK_RACES", "UTK_GENDERS", "UTKFace"]


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

    data_folder = "utkface_subset"  # under $FAIRCL_DATA when data_dir is not given

    def __init__(self, data_dir: str | None = None, target: str = "gender", attribute: str = "race",
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
        rows = read_csv_rows(csv_path, required=("filename", "age", "gender", "race"))
        paths, ages, genders, races, lines = [], [], [], [], []
        for line, row in rows:
            paths.append(str(image_dir / row["filename"]))
            ages.append(int_in(row["age"], csv_path, "age", line, 0, 200))
            genders.append(int_in(row["gender"], csv_path, "gender", line, 0, 1))
            races.append(int_in(row["race"], csv_path, "race", line, 0, 4))
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
