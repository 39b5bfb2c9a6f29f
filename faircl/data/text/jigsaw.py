"""Jigsaw Unintended Bias in Toxicity Classification (Kaggle; also WILDS CivilComments)."""

from __future__ import annotations

import numpy as np

from faircl.data.base import encode_groups
from faircl.data.io import (SPLIT_ALIASES, DataError, float_column, require_columns, require_path, stratified_split,
                            where)
from faircl.data.text.base import RawSplit, TextDataModule

__all__ = ["Jigsaw"]


class Jigsaw(TextDataModule):
    """Jigsaw Unintended Bias in Toxicity Classification (Kaggle ``train.csv``; also WILDS CivilComments).

    Task: ``target`` (Kaggle) or ``toxicity`` (WILDS) ``≥ threshold`` → toxic. Protected attribute: the identity
    columns (``black``, ``white``, ``female``...) binarised at ``identity_threshold``; one column gives the groups
    ``non-<col>`` / ``<col>`` (Chi et al.: black vs non-black), several give their intersections
    (``non-black|white``). Rows whose identity columns were not annotated (empty) are dropped when
    ``drop_unannotated`` (the papers keep only annotated rows), else get attribute ``-1``. A ``split`` column
    (``train``/``val``/``test``, WILDS) is used when present, otherwise seeded stratified splits are made.

    Args:
        data_dir: folder holding ``file`` (or the CSV file itself).
        file: the CSV name.
        identity_columns: one or several identity columns.
        threshold: toxicity threshold of the label.
        identity_threshold: threshold making an identity column binary.
        drop_unannotated: drop rows with an empty identity column.
        val_fraction / test_fraction: shares of the seeded stratified split (without a ``split`` column).
        max_rows: read only the first rows of the file (quick experiments).
    """

    def __init__(
        self,
        data_dir: str | None = None,
        file: str = "train.csv",
        identity_columns: str | list[str] = "black",
        threshold: float = 0.5,
        identity_threshold: float = 0.5,
        drop_unannotated: bool = True,
        val_fraction: float = 0.1,
        test_fraction: float = 0.2,
        max_rows: int | None = None,
        **kwargs,
    ) -> None:
        super().__init__(data_dir=data_dir, **kwargs)
        self.file = file
        self.identity_columns = [identity_columns] if isinstance(identity_columns, str) else list(identity_columns)
        if not self.identity_columns:
            raise ValueError("identity_columns must name at least one column")
        self.threshold, self.identity_threshold = threshold, identity_threshold
        self.drop_unannotated = drop_unannotated
        self.val_fraction, self.test_fraction, self.max_rows = val_fraction, test_fraction, max_rows
        self.class_names = ["non-toxic", "toxic"]

    def load_raw(self) -> dict[str, RawSplit]:
        import pandas as pd

        root = self.require_data_dir("Download train.csv of the Kaggle 'Jigsaw Unintended Bias in Toxicity "
                                     "Classification' competition.")
        path = root / self.file if root.is_dir() else root
        require_path(path, "Jigsaw CSV", "Expected the Kaggle train.csv (comment_text, target, identity columns).")
        try:
            header = pd.read_csv(path, nrows=0)
            label_col = "target" if "target" in header.columns else "toxicity"
            require_columns(header, ["comment_text", label_col, *self.identity_columns], path)
            # the Kaggle file has ~45 columns and 1.8M rows: read only the ones used
            wanted = {"comment_text", label_col, "split", *self.identity_columns}
            df = pd.read_csv(path, dtype=str, keep_default_na=False, nrows=self.max_rows,
                             usecols=lambda c: c in wanted)
        except (ValueError, pd.errors.ParserError) as err:
            raise DataError(f"cannot read {where(path)}: {err}") from err
        tox = float_column(df, label_col, path, 0.0, 1.0)
        ident = np.stack([float_column(df, c, path, 0.0, 1.0, allow_missing=True) for c in self.identity_columns], 1)
        annotated = ~np.isnan(ident).any(1)
        keep = np.flatnonzero(annotated) if self.drop_unannotated else np.arange(len(df))
        texts_all = df["comment_text"].tolist()
        for r in keep:
            if not str(texts_all[r]).strip():
                raise DataError(f"{where(path, 'comment_text', int(r))}: empty text")
        cols = []
        for j, c in enumerate(self.identity_columns):
            cols.append([("x" if np.isnan(v) else c if v >= self.identity_threshold else f"non-{c}")
                         for v in ident[keep, j]])
        cats = [[f"non-{c}", c] for c in self.identity_columns]
        a, self.group_names = encode_groups(cols, categories=cats, unknown=("x",))
        y = (tox[keep] >= self.threshold).astype(np.int64)
        texts = [str(texts_all[r]) for r in keep]
        if "split" in df.columns:
            split_col = np.array([str(s).strip().lower() for s in df["split"].tolist()])[keep]
            alias = SPLIT_ALIASES
            bad = [i for i, s in enumerate(split_col) if s not in alias]
            if bad:
                raise DataError(f"{where(path, 'split', int(keep[bad[0]]))}: split {split_col[bad[0]]!r} is not "
                                f"one of {sorted(alias)}")
            parts = {s: np.flatnonzero([alias[v] == s for v in split_col]) for s in ("train", "val", "test")}
        else:
            parts = stratified_split(y, a, self.val_fraction, self.test_fraction, self.seed)
        return {s: RawSplit([texts[i] for i in idx], y[idx], a[idx], f"{path} [{s} split]") for s, idx in parts.items()}
