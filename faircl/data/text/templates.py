"""Dixon et al. (2018) identity-term template sentences (evaluation of unintended bias)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from faircl.data.io import DataError, read_table, require_columns, require_path, stratified_split, texts_of, where
from faircl.data.text.base import RawSplit, TextDataModule

__all__ = ["JigsawTemplates"]


class JigsawTemplates(TextDataModule):
    """Dixon et al. (2018) identity-term template sentences for evaluating unintended bias (evaluation only).

    ``file`` is ``en_sentence_templates.csv`` (``template, toxicity, phrase``: ``toxic``/``nontoxic``) or one of the
    Wikipedia Talk test sets ``toxicity_{fuzzed,nonfuzzed}_testset.csv`` (``rev_id, comment, toxic``:
    ``True``/``False``). The group is the identity term found in the sentence (longest whole-word match, case
    insensitive) from ``adjectives_people.txt``; ``group_by="category"`` groups terms by their ``words.csv`` subtype
    (sexuality, gender, ethnicity, religion, age, disability). Sentences without an identity term (the
    ``you_occupation`` templates) are dropped unless ``keep_unmatched`` (attribute ``-1``).

    The set is meant for testing a model trained elsewhere (e.g. on :class:`Jigsaw`). So that the Trainer and the
    leakage probes have train/val data, a seeded stratified ``probe_fraction`` of the rows forms the train split
    **and** the val split (the same rows); test holds the remaining rows.

    Args:
        data_dir: the ``jigsaw_sentence_templates`` folder.
        file: the sentence file.
        group_by: ``term`` or ``category``.
        terms: restrict to these identity terms (default: every term of ``adjectives_people.txt``).
        keep_unmatched: keep sentences without an identity term (attribute ``-1``).
        probe_fraction: share of rows in the train (= val) split.
    """

    data_folder = "jigsaw_sentence_templates"  # under $FAIRCL_DATA when data_dir is not given

    def __init__(
        self,
        data_dir: str | None = None,
        file: str = "en_sentence_templates.csv",
        group_by: str = "term",
        terms: list[str] | None = None,
        keep_unmatched: bool = False,
        probe_fraction: float = 0.2,
        **kwargs,
    ) -> None:
        super().__init__(data_dir=data_dir, **kwargs)
        if group_by not in ("term", "category"):
            raise ValueError(f"group_by={group_by!r} must be 'term' or 'category'")
        if not 0.0 < probe_fraction < 1.0:
            raise ValueError(f"probe_fraction must be in (0, 1), got {probe_fraction}")
        self.file, self.group_by, self.terms = file, group_by, terms
        self.keep_unmatched, self.probe_fraction = keep_unmatched, probe_fraction
        self.class_names = ["non-toxic", "toxic"]

    def _terms(self, root: Path) -> tuple[list[str], dict[str, str]]:
        path = require_path(root / "adjectives_people.txt", "identity term list",
                            "Expected adjectives_people.txt of Dixon et al. (one term per line).")
        terms = [t.strip().lower() for t in path.read_text(encoding="utf-8").splitlines() if t.strip()]
        category: dict[str, str] = {}
        words = root / "words.csv"
        if words.is_file():
            df = read_table(words)
            if {"type", "subtype", "word"} <= set(df.columns):
                for t, sub, w in zip(df["type"], df["subtype"], df["word"]):
                    if str(t).strip() == "identity":
                        category[str(w).strip().lower()] = str(sub).strip()
        if self.group_by == "category":
            missing = [t for t in terms if t not in category]
            if missing:
                raise DataError(f"{where(words)}: no identity subtype for term(s) {missing[:5]} "
                                "(group_by='category' needs words.csv)")
        if self.terms is not None:
            unknown = [t for t in self.terms if t.lower() not in terms]
            if unknown:
                raise ValueError(f"terms {unknown} are not in {str(path)!r}")
            terms = [t.lower() for t in self.terms]
        return terms, category

    def load_raw(self) -> dict[str, RawSplit]:
        root = self.require_data_dir("Point it at the jigsaw_sentence_templates folder (Dixon et al. 2018).")
        path = require_path(root / self.file, "template file")
        terms, category = self._terms(root)
        df = read_table(path)
        if "phrase" in df.columns:
            text_col, label_col, values = "phrase", "toxicity", {"toxic": 1, "nontoxic": 0}
        else:
            text_col, label_col, values = "comment", "toxic", {"true": 1, "false": 0, "1": 1, "0": 0}
        require_columns(df, [text_col, label_col], path)
        texts = texts_of(df, text_col, path)
        y = np.empty(len(df), dtype=np.int64)
        for r, v in enumerate(df[label_col].tolist()):
            code = values.get(str(v).strip().lower())
            if code is None:
                raise DataError(f"{where(path, label_col, r)}: {v!r} is not one of {sorted(values)}")
            y[r] = code
        by_length = sorted(terms, key=len, reverse=True)
        pattern = re.compile(r"\b(" + "|".join(re.escape(t) for t in by_length) + r")\b", re.IGNORECASE)
        groups = sorted({category[t] for t in terms}) if self.group_by == "category" else terms
        self.group_names = groups
        index = {g: i for i, g in enumerate(groups)}
        a = np.full(len(df), -1, dtype=np.int64)
        for r, t in enumerate(texts):
            m = pattern.search(t)
            if m:
                term = m.group(1).lower()
                a[r] = index[category[term] if self.group_by == "category" else term]
        keep = np.arange(len(df)) if self.keep_unmatched else np.flatnonzero(a >= 0)
        if len(keep) == 0:
            raise DataError(f"{where(path, text_col)}: no sentence contains one of the identity terms")
        parts = stratified_split(y[keep], a[keep], 0.0, 1.0 - self.probe_fraction, self.seed)
        rows = {"train": keep[parts["train"]], "val": keep[parts["train"]], "test": keep[parts["test"]]}
        return {s: RawSplit([texts[i] for i in idx], y[idx], a[idx],
                            f"{path} [{'probe (train = val)' if s != 'test' else 'test'} rows]")
                for s, idx in rows.items()}
