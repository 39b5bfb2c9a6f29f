"""Any image folder described by a CSV: one row per image with its path, label and attribute column(s)."""

from __future__ import annotations

import numpy as np

from faircl.data.base import encode_groups
from faircl.data.io import SPLIT_ALIASES, DataError, label_values, read_csv_rows
from faircl.data.vision.base import ImageFairDataModule, ImageTable

__all__ = ["ImageCSV"]


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
        rows = read_csv_rows(path, required=[self.path_column, self.label_column])
        header = list(rows[0][1])
        absent = [c for c in required if c not in header]
        if absent:
            raise DataError(f"file {str(path)!r}, line 1: missing column(s) {absent}; header is {header}")
        # numeric labels compare as numbers ("1" and "1.0" are one class); numbers mixed with text raise
        labels, numeric = label_values([r[self.label_column] for _, r in rows],
                                       lambda k: f"file {str(path)!r}, line {rows[k][0]}, column {self.label_column!r}")
        if self.fixed_class_names is not None:
            classes = self.fixed_class_names
            keys, names_numeric = label_values(classes)
            if not (numeric and names_numeric):
                keys = [str(c).strip() for c in classes]
        else:
            classes = sorted(set(labels), key=float if numeric else None)
            keys = classes
        index = {c: k for k, c in enumerate(keys)}
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
                v = SPLIT_ALIASES.get(v, v)
                if v not in ("train", "val", "test"):
                    raise DataError(f"file {str(path)!r}, line {line}, column {self.split_column!r}: {v!r} is not "
                                    "train, val or test")
                split[k] = v
        root = self.data_dir / self.image_root
        paths = [str(root / r[self.path_column].strip()) for _, r in rows]
        return ImageTable(paths, y, a, [str(c) for c in classes], groups, split=split, source=str(path),
                          lines=[line for line, _ in rows])

