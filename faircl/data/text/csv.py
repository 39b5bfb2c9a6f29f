"""Any delimited text file(s) with named text, label and attribute columns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from faircl.data.base import encode_groups
from faircl.data.io import (SPLIT_ALIASES, UNKNOWN_VALUES, DataError, category_key, is_unknown, label_values,
                            read_table, require_columns, require_path, sorted_categories, stratified_split, texts_of, where)
from faircl.data.text.base import RawSplit, TextDataModule

__all__ = ["TextCSV"]


class TextCSV(TextDataModule):
    """Any delimited text file(s) with named text, label and attribute columns.

    ``files`` is one file (relative to ``data_dir`` or absolute), a list of files (concatenated) or a mapping
    ``{"train": ..., "val": ..., "test": ...}``. With one table, ``split_column`` (values mapped by ``split_values``)
    selects the split of every row; without it, seeded stratified splits are made.

    Labels: with ``label_threshold``, ``label ≥ threshold`` → 1 else 0 (e.g. toxicity scores); otherwise the
    distinct values in ``class_names`` order (default: sorted, numerically when all are numbers); a value outside
    ``class_names`` raises. A numeric label column is compared as numbers (``1`` and ``1.0`` are one class); a column
    mixing numbers and text raises :class:`DataError`. Attributes: one or several columns (intersectional groups ``female|black``); values in
    ``unknown_values`` give attribute ``-1`` (or drop the row with ``drop_unknown``).

    Args:
        data_dir: base folder of relative ``files``.
        files: file, list of files, or split → file mapping.
        text_column / label_column: column names.
        attribute_columns: one column name or a list.
        split_column: optional column naming the split of each row.
        split_values: split column value → ``train``/``val``/``test`` (default accepts train, val/dev/valid, test).
        class_names: label values in class order.
        label_threshold: binarise a numeric label column.
        unknown_values: attribute values meaning unknown.
        attribute_categories: per attribute column, its known values in group order (default: sorted observed).
        drop_unknown: drop rows whose attribute is unknown.
        sep: field separator (default: tab for ``.tsv``, else comma).
        allow_pickle: read ``.pkl`` / ``.pickle`` files (loading a pickle runs code from it: trusted files only).
        val_fraction / test_fraction: shares of the seeded stratified split.
    """

    def __init__(
        self,
        data_dir: str | None = None,
        files: str | list[str] | dict[str, str] = "data.csv",
        text_column: str = "text",
        label_column: str = "label",
        attribute_columns: str | list[str] = "group",
        split_column: str | None = None,
        split_values: dict[str, str] | None = None,
        class_names: list[str] | None = None,
        label_threshold: float | None = None,
        unknown_values: list[str] | None = None,
        attribute_categories: list[list[str]] | None = None,
        drop_unknown: bool = False,
        sep: str | None = None,
        allow_pickle: bool = False,
        val_fraction: float = 0.1,
        test_fraction: float = 0.2,
        **kwargs,
    ) -> None:
        super().__init__(data_dir=data_dir, **kwargs)
        self.files = files
        self.text_column, self.label_column = text_column, label_column
        self.attribute_columns = [attribute_columns] if isinstance(attribute_columns, str) else list(attribute_columns)
        self.split_column = split_column
        self.split_values = dict(split_values or SPLIT_ALIASES)
        self.class_order, self.label_threshold = class_names, label_threshold
        self.unknown_values = list(UNKNOWN_VALUES if unknown_values is None else unknown_values)
        self.attribute_categories, self.drop_unknown = attribute_categories, drop_unknown
        self.sep, self.val_fraction, self.test_fraction = sep, val_fraction, test_fraction
        self.allow_pickle = allow_pickle

    def _path(self, name: str) -> Path:
        p = Path(name).expanduser()
        if not p.is_absolute() and self.data_dir is not None:
            p = self.data_dir / p
        return require_path(p, "TextCSV file")

    def _frame(self, paths: list[Path]) -> list[tuple[Path, Any]]:
        frames = []
        for p in paths:
            df = read_table(p, self.sep, allow_pickle=self.allow_pickle)
            need = [self.text_column, self.label_column, *self.attribute_columns]
            if self.split_column:
                need.append(self.split_column)
            require_columns(df, need, p)
            frames.append((p, df))
        return frames

    def load_raw(self) -> dict[str, RawSplit]:
        if isinstance(self.files, dict):
            missing = [s for s in ("train", "val", "test") if s not in self.files]
            if missing:
                raise ValueError(f"files mapping needs train, val and test; missing {missing}")
            by_split = {s: self._frame([self._path(self.files[s])]) for s in ("train", "val", "test")}
            rows = None
        else:
            names = [self.files] if isinstance(self.files, str) else list(self.files)
            frames = self._frame([self._path(n) for n in names])
            by_split = {"all": frames}
            rows = True
        # pass 1: parse every table
        parsed: dict[str, list[tuple[Path, list[str], list[str], list[list[Any]], list[str] | None]]] = {}
        for split, frames in by_split.items():
            parsed[split] = []
            for p, df in frames:
                texts = texts_of(df, self.text_column, p)
                labels = [str(v).strip() for v in df[self.label_column].tolist()]
                attrs = [df[c].tolist() for c in self.attribute_columns]
                sp = [str(v).strip().lower() for v in df[self.split_column].tolist()] if self.split_column else None
                parsed[split].append((p, texts, labels, attrs, sp))
        # label coding
        all_labels = [(p, r, v) for tables in parsed.values() for p, _, labels, _, _ in tables
                      for r, v in enumerate(labels)]
        if self.label_threshold is not None:
            self.class_names = [f"<{self.label_threshold:g}", f">={self.label_threshold:g}"]

            def code(p: Path, r: int, v: str) -> int:
                try:
                    return int(float(v) >= self.label_threshold)
                except ValueError:
                    raise DataError(f"{where(p, self.label_column, r)}: {v!r} is not a number") from None
        else:
            for p, r, v in all_labels:
                if not v or v.lower() == "nan":
                    raise DataError(f"{where(p, self.label_column, r)}: missing label")
            # numeric columns compare as numbers ("1" and "1.0" are one class); numbers mixed with text raise
            keys, numeric = label_values([v for _, _, v in all_labels],
                                         lambda k: where(all_labels[k][0], self.label_column, all_labels[k][1]))
            canon = dict(zip((v for _, _, v in all_labels), keys))
            if self.class_order is not None:
                names = [str(c).strip() for c in self.class_order]
                name_keys, names_numeric = label_values(names)
                if not (numeric and names_numeric):
                    name_keys = names
            else:
                distinct = set(keys)
                names = sorted(distinct, key=(lambda v: float(v)) if numeric else None)
                name_keys = names
            self.class_names = names
            index = {n: i for i, n in enumerate(name_keys)}

            def code(p: Path, r: int, v: str) -> int:
                key = canon.get(v, v)
                if key not in index:
                    raise DataError(f"{where(p, self.label_column, r)}: label {v!r} is not one of {names}")
                return index[key]
        # attribute categories over all tables, so ids agree across splits
        unknown = [u.lower() for u in self.unknown_values]
        if self.attribute_categories is not None:
            cats = [[category_key(c) for c in cs] for cs in self.attribute_categories]
            if len(cats) != len(self.attribute_columns):
                raise ValueError(f"attribute_categories has {len(cats)} lists for {len(self.attribute_columns)} "
                                 "attribute columns")
        else:
            cats = []
            for j in range(len(self.attribute_columns)):
                # numerically equal spellings (0, 0.0, " 0") are one group, as they are one class in the label column
                cats.append(sorted_categories(category_key(v) for tables in parsed.values()
                                              for _, _, _, attrs, _ in tables for v in attrs[j]
                                              if not is_unknown(v, unknown)))
        allowed = [set(c) for c in cats]
        raw: dict[str, tuple[list[str], np.ndarray, np.ndarray, list[str], list[str] | None]] = {}
        for split, tables in parsed.items():
            texts_s, y_s, a_s, src_s, sp_s = [], [], [], [], []
            for p, texts, labels, attrs, sp in tables:
                for j, c in enumerate(self.attribute_columns):
                    for r, v in enumerate(attrs[j]):
                        if not is_unknown(v, unknown) and category_key(v) not in allowed[j]:
                            raise DataError(f"{where(p, c, r)}: value {v!r} is not one of {cats[j]}")
                a, self.group_names = encode_groups(attrs, unknown=unknown, categories=cats)
                texts_s += texts
                y_s.append(np.array([code(p, r, v) for r, v in enumerate(labels)], dtype=np.int64))
                a_s.append(a)
                src_s.append(str(p))
                if sp is not None:
                    for r, v in enumerate(sp):
                        if v not in self.split_values:
                            raise DataError(f"{where(p, self.split_column, r)}: split {v!r} is not one of "
                                            f"{sorted(self.split_values)}")
                    sp_s += [self.split_values[v] for v in sp]
            raw[split] = (texts_s, np.concatenate(y_s), np.concatenate(a_s), src_s, sp_s if self.split_column else None)
        if rows is None:
            out = {s: RawSplit(t, y, a, src[0]) for s, (t, y, a, src, _) in raw.items()}
        else:
            texts, y, a, src, sp = raw["all"]
            if sp is not None:
                parts = {s: np.flatnonzero(np.array(sp) == s) for s in ("train", "val", "test")}
            else:
                parts = stratified_split(y, a, self.val_fraction, self.test_fraction, self.seed)
            label = ", ".join(src)
            out = {s: RawSplit([texts[i] for i in idx], y[idx], a[idx], f"{label} [{s} split]")
                   for s, idx in parts.items()}
        if self.drop_unknown:
            out = {s: RawSplit([r.texts[i] for i in np.flatnonzero(r.a >= 0)], r.y[r.a >= 0], r.a[r.a >= 0],
                               r.source) for s, r in out.items()}
        return out
