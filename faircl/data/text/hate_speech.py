"""Multilingual Twitter hate speech with author demographics (Huang et al., 2020)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from faircl.data.base import FairDataModule, FairDataset, encode_groups
from faircl.data.io import DataError, read_table, require_columns, require_path, stratified_split, where
from faircl.data.text.base import _LoadedNames, make_eda

__all__ = ["HATE_ATTRIBUTES", "HateSpeech"]


HATE_ATTRIBUTES = ("gender", "age", "country", "ethnicity")
_HATE_COLUMNS = ("tid", "uid", "text", "date", "gender", "age", "city", "state", "country", "ethnicity", "label")


class HateSpeech(_LoadedNames, FairDataModule):
    """Multilingual Twitter hate speech with author demographics (Huang et al., 2020), as used by Shen et al. (2022).

    Files ``<language>_{train,valid,test}.tsv`` with columns ``tid uid text date gender age city state country
    ethnicity label``; ``text`` holds integer token ids, left zero-padded (the authors withhold the words); ``label``
    is 1 = hate; the attributes are binary ``0``/``1`` with ``x`` = unknown (attribute ``-1``, or dropped with
    ``drop_unknown``). ``x`` is the id tensor ``[max_len]`` (left-padded as in the files; the ``tokens`` encoder
    accepts either side), ``input_dim`` the vocabulary size.

    Splits (``split_protocol``):

    * ``standard``: ``train`` / ``valid`` / ``test`` files as published;
    * ``valid_as_train``: train on ``<language>_valid`` minus a seeded stratified ``val_fraction`` held out as
      validation, test on ``<language>_test``. The English release has no train file, so the ConFair comparison on
      English trains on ``English_valid`` and tests on ``English_test`` (their label rates differ: 23% vs 72% hate);
    * ``auto`` (default): ``standard`` when the train file exists, else ``valid_as_train`` (the choice is printed).

    Args:
        data_dir: the folder of the TSV files.
        language: ``English``, ``Italian``, ``Polish``, ``Portuguese`` or ``Spanish`` (file name prefix).
        attribute: one of :data:`HATE_ATTRIBUTES` or a list of them (intersectional groups such as
            ``gender=0|age=1``; a row unknown in any of them is unknown).
        split_protocol: ``auto`` | ``standard`` | ``valid_as_train``.
        val_fraction: share of ``valid`` held out as validation under ``valid_as_train``.
        vocab_size: embedding table size (default: largest id over all splits + 1); a larger id raises.
        drop_unknown: drop rows with an unknown attribute.
        eda_p: EDA edit rate on the id sequence for the second view (``two_views=True``).
    """

    def __init__(
        self,
        data_dir: str | None = None,
        language: str = "English",
        attribute: str | list[str] = "gender",
        split_protocol: str = "auto",
        val_fraction: float = 0.1,
        vocab_size: int | None = None,
        drop_unknown: bool = False,
        eda_p: float = 0.1,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.attributes = [attribute] if isinstance(attribute, str) else list(attribute)
        bad = [a for a in self.attributes if a not in HATE_ATTRIBUTES]
        if bad or not self.attributes:
            raise ValueError(f"attribute {bad or attribute!r} must be one or several of {HATE_ATTRIBUTES}")
        if split_protocol not in ("auto", "standard", "valid_as_train"):
            raise ValueError(f"split_protocol={split_protocol!r} must be 'auto', 'standard' or 'valid_as_train'")
        self.data_dir = Path(data_dir).expanduser() if data_dir is not None else None
        self.language, self.split_protocol, self.val_fraction = language, split_protocol, val_fraction
        self.vocab_size, self.drop_unknown, self.eda_p = vocab_size, drop_unknown, eda_p
        self.class_names = ["non-hate", "hate"]
        self.protocol: str | None = None
        self._vocab = 0

    @property
    def input_dim(self) -> int:
        self.splits  # noqa: B018
        return self._vocab

    def _read(self, path: Path) -> tuple[list[list[int]], np.ndarray, list[list[str]]]:
        df = read_table(path, sep="\t", quotes=False)
        require_columns(df, ["text", "label", *self.attributes], path)
        ids = []
        for r, v in enumerate(df["text"].tolist()):
            parts = str(v).split()
            if not parts or not all(p.isdigit() for p in parts):
                raise DataError(f"{where(path, 'text', r)}: expected space-separated non-negative integer token ids, "
                                f"got {str(v)[:60]!r}")
            ids.append([int(p) for p in parts])
        y = np.empty(len(df), dtype=np.int64)
        for r, v in enumerate(df["label"].tolist()):
            if str(v).strip() not in ("0", "1"):
                raise DataError(f"{where(path, 'label', r)}: label {v!r} is not 0 or 1")
            y[r] = int(str(v).strip())
        attrs = []
        for c in self.attributes:
            col = []
            for r, v in enumerate(df[c].tolist()):
                s = str(v).strip().lower()
                if s not in ("0", "1", "x"):
                    raise DataError(f"{where(path, c, r)}: {c} {v!r} is not 0, 1 or x (unknown)")
                col.append("x" if s == "x" else f"{c}={s}")
            attrs.append(col)
        return ids, y, attrs

    def load_splits(self) -> dict[str, FairDataset]:
        if self.data_dir is None:
            raise ValueError("HateSpeech needs data_dir (the folder of <Language>_{train,valid,test}.tsv)")
        root = require_path(self.data_dir, "HateSpeech data_dir")
        files = {s: root / f"{self.language}_{s}.tsv" for s in ("train", "valid", "test")}
        protocol = self.split_protocol
        if protocol == "auto":
            protocol = "standard" if files["train"].is_file() else "valid_as_train"
            if protocol == "valid_as_train":
                print(f"HateSpeech: {files['train'].name} not found; training on {files['valid'].name} "
                      f"(minus {self.val_fraction:.0%} held out for validation), testing on {files['test'].name}")
        self.protocol = protocol
        need = ("train", "valid", "test") if protocol == "standard" else ("valid", "test")
        for s in need:
            require_path(files[s], f"HateSpeech {self.language} {s} file",
                         "" if s != "train" else "English has no train split: use split_protocol='valid_as_train'.")
        read = {s: self._read(files[s]) for s in need}
        if protocol == "standard":
            parts = {"train": ("train", None), "val": ("valid", None), "test": ("test", None)}
        else:
            ids, y, attrs = read["valid"]
            a_tmp, _ = encode_groups(attrs, unknown=("x",),
                                     categories=[[f"{c}=0", f"{c}=1"] for c in self.attributes])
            cut = stratified_split(y, a_tmp, self.val_fraction, 0.0, self.seed)
            parts = {"train": ("valid", cut["train"]), "val": ("valid", cut["val"]), "test": ("test", None)}
        max_id = max(max((max(r) for r in ids), default=0) for ids, _, _ in read.values())
        if self.vocab_size is not None and max_id >= self.vocab_size:
            raise DataError(f"HateSpeech: token id {max_id} does not fit vocab_size={self.vocab_size}")
        self._vocab = self.vocab_size if self.vocab_size is not None else max_id + 1
        width = max(len(r) for ids, _, _ in read.values() for r in ids)
        out = {}
        for split, (file_key, rows) in parts.items():
            ids, y, attrs = read[file_key]
            a, self.group_names = encode_groups(attrs, unknown=("x",),
                                                categories=[[f"{c}=0", f"{c}=1"] for c in self.attributes])
            if rows is None:
                rows = np.arange(len(y))
            if self.drop_unknown:
                rows = rows[a[rows] >= 0]
            x = torch.zeros(len(rows), width, dtype=torch.long)
            for k, r in enumerate(rows):
                seq = ids[r]
                x[k, width - len(seq):] = torch.tensor(seq, dtype=torch.long)  # left padding, as in the files
            src = str(files[file_key]) + ("" if file_key == split or split == "test" else f" [{split} part]")
            out[split] = FairDataset(x, y[rows], a[rows], num_classes=2, num_groups=len(self.group_names), source=src)
        return out

    def view_transform(self) -> Callable:
        return _TokenEDA(make_eda(self.eda_p, self.seed, synonyms=False))


class _TokenEDA:
    """EDA over a padded id sequence: ids become pseudo-words ``t<id>``, get edited, and are padded back (left)."""

    def __init__(self, eda: Callable[[str], str]) -> None:
        self.eda = eda

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        words = [f"t{int(i)}" for i in ids.tolist() if i != 0]
        edited = self.eda(" ".join(words)).split() if words else []
        new = [int(w[1:]) for w in edited if w.startswith("t") and w[1:].isdigit()][-len(ids):] or [
            int(i) for i in ids.tolist() if i != 0][:1]
        out = torch.zeros_like(ids)
        if new:
            out[len(ids) - len(new):] = torch.tensor(new, dtype=ids.dtype)
        return out
