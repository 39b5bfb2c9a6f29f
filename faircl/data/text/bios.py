"""Bias in Bios (De-Arteaga et al., 2019): biographies, profession and gender."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

import numpy as np

from faircl.data.io import (PICKLE_SUFFIXES, DataError, check_pickle_allowed, read_table, require_columns,
                            stratified_split, texts_of, where)
from faircl.data.text.base import RawSplit, TextDataModule

__all__ = ["BIOS_PROFESSIONS", "BiasInBios"]


#: LabHC/bias_in_bios integer profession codes (alphabetical order)
BIOS_PROFESSIONS = [
    "accountant", "architect", "attorney", "chiropractor", "comedian", "composer", "dentist", "dietitian", "dj",
    "filmmaker", "interior_designer", "journalist", "model", "nurse", "painter", "paralegal", "pastor",
    "personal_trainer", "photographer", "physician", "poet", "professor", "psychologist", "rapper",
    "software_engineer", "surgeon", "teacher", "yoga_teacher",
]
_GENDER = {"m": 0, "male": 0, "0": 0, "f": 1, "female": 1, "1": 1}
_SPLIT_ALIASES = {"train": ("train",), "val": ("dev", "val", "valid", "validation"), "test": ("test",)}
_TABLE_SUFFIXES = (".pickle", ".pkl", ".csv", ".tsv", ".parquet", ".jsonl")


def _find_split_files(folder: Path) -> dict[str, Path] | None:
    """``train / dev|val|valid / test`` files of one folder (any table format), or None when there are none."""
    found: dict[str, Path] = {}
    for split, names in _SPLIT_ALIASES.items():
        for stem in names:
            for suffix in _TABLE_SUFFIXES:
                if (folder / f"{stem}{suffix}").is_file() and split not in found:
                    found[split] = folder / f"{stem}{suffix}"
    if not found:
        return None
    missing = [s for s in _SPLIT_ALIASES if s not in found]
    if missing:
        raise FileNotFoundError(f"{str(folder)!r} has split files {sorted(found)} but no {missing} file "
                                f"(expected e.g. train.pickle, dev.pickle, test.pickle)")
    return found


class BiasInBios(TextDataModule):
    """Bias in Bios (De-Arteaga et al., 2019): predict the profession from a biography; protected attribute gender.

    Accepted layouts of ``data_dir``:

    * a folder with ``train``, ``dev`` (or ``val``/``valid``) and ``test`` files (``.pickle``/``.pkl`` as in
      Ravfogel et al. 2020, ``.csv``, ``.parquet`` or ``.jsonl``): the published splits are used;
    * a folder of CSV files (``files`` glob, minus ``exclude``), e.g. one per profession as in the shared samples;
    * a single file: a pickled ``{"train", "dev", "test"}`` dict of tables, a table with a ``split`` column
      (``train``/``dev``/``test``), or a plain table.

    Without published splits, seeded splits stratified by (profession, gender) are made (``val_fraction``,
    ``test_fraction``). Columns: text ``hard_text`` (``text_column``), profession ``profession`` (or ``p``; names or
    LabHC integer codes in :data:`BIOS_PROFESSIONS` order), gender ``gender`` (or ``g``; ``M/F``, ``Male/Female`` or
    LabHC's ``0`` = male, ``1`` = female). Groups: ``male`` = 0, ``female`` = 1.

    The shared samples folder also holds ``accountant_complete.csv`` (1,000 accountant bios): it is excluded by default
    so the 28 professions keep 10 bios each; pass ``exclude=[]`` or point ``data_dir`` at that file to use it.

    Args:
        data_dir: folder or file (see above).
        files: glob of the CSV files in a folder without split files.
        exclude: globs of files to leave out.
        professions: keep only these professions, in this class order (default: every profession seen, sorted).
        text_column: the biography column.
        val_fraction / test_fraction: shares of the seeded stratified split (when there are no split files).
        dedupe: drop repeated biographies (the first copy is kept) before splitting.
        allow_pickle: read ``.pkl`` / ``.pickle`` files (the published splits' format). Off by default: loading a
            pickle runs code from the file, so enable it only for files from a source you trust.
    """

    data_folder = "bias_in_bios_samples"  # under $FAIRCL_DATA when data_dir is not given

    def __init__(
        self,
        data_dir: str | None = None,
        files: str = "*.csv",
        exclude: list[str] | None = None,
        professions: list[str] | None = None,
        text_column: str = "hard_text",
        val_fraction: float = 0.1,
        test_fraction: float = 0.2,
        dedupe: bool = True,
        allow_pickle: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(data_dir=data_dir, **kwargs)
        self.files, self.exclude = files, ["*_complete.csv"] if exclude is None else list(exclude)
        self.professions, self.text_column = professions, text_column
        self.val_fraction, self.test_fraction, self.dedupe = val_fraction, test_fraction, dedupe
        self.group_names = ["male", "female"]
        self.allow_pickle = allow_pickle

    def _split_tables(self, path: Path) -> dict[str, Any] | None:
        """The splits held by one file: a pickled ``{"train", "dev"|"val", "test"}`` dict, or a ``split`` column."""
        import pandas as pd

        if path.suffix.lower() in PICKLE_SUFFIXES:
            check_pickle_allowed(path, self.allow_pickle)
            try:
                obj = pd.read_pickle(path)
            except Exception as err:  # unpickling can raise anything; name the file
                raise DataError(f"cannot read {where(path)}: {type(err).__name__}: {str(err)[:200]}") from None
            if isinstance(obj, dict):
                tables = {}
                for split, names in _SPLIT_ALIASES.items():
                    key = next((k for k in names if k in obj), None)
                    if key is None:
                        raise DataError(f"{where(path)}: the pickled dict has keys {sorted(obj)}, expected train, "
                                        "dev (or val) and test")
                    t = obj[key]
                    tables[split] = t if isinstance(t, pd.DataFrame) else pd.DataFrame(list(t))
                return tables
            return None
        df = read_table(path, allow_pickle=self.allow_pickle)
        if "split" not in df.columns:
            return None
        alias = {name: split for split, names in _SPLIT_ALIASES.items() for name in names}
        values = [str(v).strip().lower() for v in df["split"].tolist()]
        for r, v in enumerate(values):
            if v not in alias:
                raise DataError(f"{where(path, 'split', r)}: split {v!r} is not one of {sorted(alias)}")
        return {s: df[[alias[v] == s for v in values]].reset_index(drop=True) for s in _SPLIT_ALIASES}

    def _parse(self, path: Path, df: Any = None) -> tuple[list[str], list[str], np.ndarray]:
        if df is None:
            df = read_table(path, allow_pickle=self.allow_pickle)
        label_col = "profession" if "profession" in df.columns else "p" if "p" in df.columns else "profession"
        gender_col = "gender" if "gender" in df.columns else "g" if "g" in df.columns else "gender"
        require_columns(df, [self.text_column, label_col, gender_col], path)
        texts = texts_of(df, self.text_column, path)
        profs = []
        for r, v in enumerate(df[label_col].tolist()):
            s = str(v).strip()
            if s.lstrip("-").isdigit():
                code = int(s)
                if not 0 <= code < len(BIOS_PROFESSIONS):
                    raise DataError(f"{where(path, label_col, r)}: profession code {code} outside "
                                    f"[0, {len(BIOS_PROFESSIONS)})")
                s = BIOS_PROFESSIONS[code]
            if not s or s.lower() == "nan":
                raise DataError(f"{where(path, label_col, r)}: missing profession")
            profs.append(s)
        genders = np.empty(len(df), dtype=np.int64)
        for r, v in enumerate(df[gender_col].tolist()):
            g = _GENDER.get(str(v).strip().lower())
            if g is None:
                raise DataError(f"{where(path, gender_col, r)}: gender {v!r} is not one of M/F, Male/Female, 0/1")
            genders[r] = g
        return texts, profs, genders

    def load_raw(self) -> dict[str, RawSplit]:
        root = self.require_data_dir("Point it at a folder of Bias in Bios CSV/pickle files or at one such file.")
        split_files = _find_split_files(root) if root.is_dir() else None
        tables = self._split_tables(root) if root.is_file() else None
        if split_files is not None:
            parsed = {s: self._parse(p) for s, p in split_files.items()}
            sources = {s: str(p) for s, p in split_files.items()}
        elif tables is not None:
            # row numbers in messages count within each split of the file
            parsed = {s: self._parse(root, df) for s, df in tables.items()}
            sources = {s: f"{root} [{s}]" for s in tables}
        else:
            if root.is_dir():
                paths = sorted(p for p in root.glob(self.files)
                               if p.is_file() and not any(fnmatch.fnmatch(p.name, e) for e in self.exclude))
                if not paths:
                    raise FileNotFoundError(f"no Bias in Bios files matching {self.files!r} in {str(root)!r} "
                                            f"(excluding {self.exclude})")
            else:
                paths = [root]
            texts, profs, genders = [], [], []
            for p in paths:
                t, pr, g = self._parse(p)
                texts += t
                profs += pr
                genders.append(g)
            gender = np.concatenate(genders)
            if self.dedupe:
                first = {}
                for i, t in enumerate(texts):
                    first.setdefault(t, i)
                keep = sorted(first.values())
                texts, profs, gender = [texts[i] for i in keep], [profs[i] for i in keep], gender[keep]
            names = sorted(set(profs))
            codes = np.array([names.index(p) for p in profs])
            parts = stratified_split(codes, gender, self.val_fraction, self.test_fraction, self.seed)
            parsed = {s: ([texts[i] for i in idx], [profs[i] for i in idx], gender[idx]) for s, idx in parts.items()}
            label = str(root) if len(paths) == 1 else f"{root}/{self.files}"
            sources = {s: f"{label} [{s} split]" for s in parts}
        seen_profs = sorted({p for _, profs, _ in parsed.values() for p in profs})
        self.class_names = list(self.professions) if self.professions is not None else seen_profs
        index = {p: i for i, p in enumerate(self.class_names)}
        out = {}
        for split, (texts, profs, gender) in parsed.items():
            keep = [i for i, p in enumerate(profs) if p in index]
            out[split] = RawSplit([texts[i] for i in keep], np.array([index[profs[i]] for i in keep], dtype=np.int64),
                                  gender[keep], sources[split])
        return out
