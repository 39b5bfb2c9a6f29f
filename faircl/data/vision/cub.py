"""CUB-200-2011 with the bird's primary colour as the protected attribute (finDML §3.3)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from faircl.data.io import DataError
from faircl.data.vision.base import ImageFairDataModule, ImageTable

__all__ = ["CUB200"]


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
