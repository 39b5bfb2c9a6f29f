"""Counterfactual tuples ``(S^{a_1}, …, S^{a_G}, S^n)`` for CCD as a DataModule (:class:`CounterfactualTuples`).

A *tuple* holds the same content in every attribute version plus a neutral version (CCD paper, §3.2):
``("He is a nurse.", "She is a nurse.", "They are a nurse.")`` for ``groups = (male, female)``. Sources: CDA word
swapping, an LLM (:mod:`faircl.data.counterfactual.llm`) or a ready tuple file. Every tuple passes the polarity check
(eq. 6); failures are dropped and counted (:class:`~faircl.data.counterfactual.cda.PolarityReport`)."""

from __future__ import annotations

import glob
import os
import random
from pathlib import Path
from typing import Any

from faircl.data.base import FairDataModule, FairDataset
from faircl.data.counterfactual.cda import CDA, PolarityReport, make_cda_tuples, polarity_check, select_texts
from faircl.data.counterfactual.files import read_texts, read_tuple_file
from faircl.data.counterfactual.lexicon import NEUTRAL, AttributeLexicon
from faircl.data.counterfactual.llm import LLMAugmenter, OpenAIChatBackend
from faircl.data.io import DataError
from faircl.data.summary import say

__all__ = ["TupleDataset", "CounterfactualTuples"]


class TupleDataset(FairDataset):
    """Rows are tuples; ``x`` of an item is the tuple of G + 1 strings, so a batch's ``x`` is G + 1 lists of B."""


class CounterfactualTuples(FairDataModule):
    """Counterfactual tuples ``(S^{a_1}, …, S^{a_G}, S^n)`` for CCD.

    A batch is ``{"x": [versions][B] strings, "y", "a", "idx"}``: ``x[g]`` are the ``B`` texts of group ``g`` and
    ``x[-1]`` the neutral texts. ``a`` is ``-1`` (every tuple holds all groups) and ``y`` is ``0`` (CCD has no task
    label; ``num_classes`` is 2 so the base machinery works).

    Args:
        source: ``cda`` (swap words in ``texts``), ``file`` (read ``tuple_file``) or ``llm`` (rewrite ``texts``
            with :class:`faircl.data.counterfactual.llm.LLMAugmenter`; endpoint from ``llm_*`` or the environment).
        data_dir: folder with ``cda_word_lists/`` and the text files (default ``$FAIRCL_DATA``).
        texts: text files (paths or glob patterns, relative to ``data_dir`` unless absolute): CSV/TSV/JSONL/TXT.
        inline_texts: texts given directly (notebooks, tests); used in addition to ``texts``.
        text_column: column of the text in CSV/TSV files (default: auto-detect).
        tuple_file: CSV/JSONL with one column per version (``male, female, neutral``) for ``source=file``.
        groups: group names of a tuple file / LLM source (CDA takes them from the lexicon: ``male, female``).
        word_lists: gender word-list presets joined by ``+`` (see :meth:`AttributeLexicon.gender`).
        keep_words: ``adept_neutral`` (protect the ADEPT neutral words), a file path, or ``None``.
        split_sentences: split source texts into sentences.
        min_words / max_words: keep sentences of this length.
        max_rows: cap the number of tuples (after the polarity check, seeded shuffle).
        val_fraction / test_fraction: held-out tuples (split by content, seeded).
        polarity_filter: drop tuples failing the polarity check (always counted and reported).
        neutral_name: names become this in the neutral version.
        llm_base_url / llm_model / llm_cache_dir: LLM endpoint (``None`` = environment variables) and reply cache.
        llm_prompt_rounds: rounds K of the polarity-guided prompt search (1 = plain few-shot augmentation).
    """

    def __init__(
        self,
        source: str = "cda",
        data_dir: str | None = None,
        texts: list[str] | None = None,
        inline_texts: list[str] | None = None,
        text_column: str | None = None,
        tuple_file: str | None = None,
        groups: list[str] | None = None,
        word_lists: str = "adept+names",
        keep_words: str | None = "adept_neutral",
        split_sentences: bool = True,
        min_words: int = 4,
        max_words: int = 64,
        max_rows: int | None = None,
        val_fraction: float = 0.1,
        test_fraction: float = 0.1,
        polarity_filter: bool = True,
        neutral_name: str = "the person",
        llm_base_url: str | None = None,
        llm_model: str | None = None,
        llm_cache_dir: str | None = None,
        llm_prompt_rounds: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if source not in ("cda", "file", "llm"):
            raise ValueError(f"source={source!r} must be 'cda', 'file' or 'llm'")
        if not (0 < val_fraction < 1 and 0 < test_fraction < 1 and val_fraction + test_fraction < 1):
            raise ValueError(f"val_fraction={val_fraction} and test_fraction={test_fraction} must be in (0, 1) "
                             "with a sum below 1")
        if source == "file" and not tuple_file:
            raise ValueError("source='file' needs tuple_file")
        if source in ("cda", "llm") and not texts and not inline_texts:
            raise ValueError(f"source={source!r} needs texts (files) or inline_texts")
        self.source = source
        self.data_dir = data_dir
        self.texts = list(texts or [])
        self.inline_texts = list(inline_texts or [])
        self.text_column = text_column
        self.tuple_file = tuple_file
        self.groups_arg = list(groups) if groups else None
        self.word_lists = word_lists
        self.keep_words = keep_words
        self.split = split_sentences
        self.min_words, self.max_words = min_words, max_words
        self.max_rows = max_rows
        self.val_fraction, self.test_fraction = val_fraction, test_fraction
        self.polarity_filter = polarity_filter
        self.neutral_name = neutral_name
        self.llm_base_url, self.llm_model, self.llm_cache_dir = llm_base_url, llm_model, llm_cache_dir
        self.llm_prompt_rounds = llm_prompt_rounds
        self.polarity_report: PolarityReport | None = None
        self.class_names = ["tuple", "unused"]
        self.group_names = []

    # ------------------------------------------------------------------ helpers
    def _root(self) -> Path | None:
        if self.data_dir is not None:
            return Path(self.data_dir)
        env = os.environ.get("FAIRCL_DATA")
        return Path(env) if env else None

    def _resolve(self, pattern: str) -> list[Path]:
        root = self._root()
        full = pattern if Path(pattern).is_absolute() or root is None else str(root / pattern)
        hits = sorted(glob.glob(full)) if any(c in pattern for c in "*?[") else [full]
        paths = [Path(h) for h in hits]
        missing = [str(p) for p in paths if not p.is_file()]
        if not paths or missing:
            raise FileNotFoundError(f"text file(s) {missing or [full]} not found (data_dir={self.data_dir!r})")
        return paths

    def lexicon(self) -> AttributeLexicon:
        """The gender lexicon used for CDA and the polarity check."""
        if not hasattr(self, "_lexicon"):
            root = self._root()
            keep = self.keep_words
            if keep == "adept_neutral" and (root is None or not root.is_dir()):
                keep = None
            self._lexicon = AttributeLexicon.gender(root, self.word_lists, keep=keep)
        return self._lexicon

    def source_texts(self) -> list[str]:
        out = list(self.inline_texts)
        for pattern in self.texts:
            for p in self._resolve(pattern):
                out.extend(read_texts(p, self.text_column))
        return out

    def build_tuples(self) -> list[tuple[str, ...]]:
        """All polarity-checked tuples (report in ``self.polarity_report``)."""
        lex = self.lexicon()
        if self.source == "file":
            groups = tuple(self.groups_arg or lex.groups)
            raw = read_tuple_file(self._resolve(self.tuple_file)[0], (*groups, NEUTRAL))
            if groups == lex.groups:
                kept, report, _ = polarity_check(raw, lex)
            elif self.polarity_filter:
                raise ValueError(f"groups {list(groups)} differ from the word lists' groups {list(lex.groups)}: the "
                                 "polarity check needs word lists for those groups; pass polarity_filter=False to "
                                 "use the tuples unchecked")
            else:
                kept, report = raw, PolarityReport(versions=(*groups, NEUTRAL), total=len(raw), kept=len(raw),
                                                   version_correct=[len(raw)] * (len(groups) + 1))
            tuples = kept if self.polarity_filter else raw
        elif self.source == "cda":
            cda = CDA(lex, neutral_name=self.neutral_name)
            tuples, report = make_cda_tuples(self.source_texts(), cda, split=self.split, min_words=self.min_words,
                                             max_words=self.max_words, drop_failed=self.polarity_filter)
        else:
            backend = OpenAIChatBackend(base_url=self.llm_base_url, model=self.llm_model)
            aug = LLMAugmenter(backend, lex, cache_dir=self.llm_cache_dir)
            pieces = select_texts(self.source_texts(), split=self.split, min_words=self.min_words,
                                  max_words=self.max_words)
            cda = CDA(lex)
            with_words = [s for s in pieces if cda.has_attribute_word(s)]
            result = (aug.prompt_search(with_words, rounds=self.llm_prompt_rounds)[0] if self.llm_prompt_rounds > 1
                      else aug.augment(with_words))
            report = result.report
            report.skipped_no_attribute = len(pieces) - len(with_words)
            tuples = result.kept if self.polarity_filter else [t for t in result.tuples if t is not None]
        self.polarity_report = report
        return [tuple(t) for t in tuples]

    # ------------------------------------------------------------------ FairDataModule API
    input_kind = "tuples"  # each x is G + 1 versions of one text

    def load_splits(self) -> dict[str, FairDataset]:
        lex = self.lexicon()
        groups = tuple(self.groups_arg or lex.groups)
        self.group_names = list(groups)
        tuples = self.build_tuples()
        if not tuples:
            raise DataError(f"CounterfactualTuples: no tuple left after the polarity check ({self.polarity_report})")
        rng = random.Random(self.seed)
        order = list(range(len(tuples)))
        rng.shuffle(order)
        if self.max_rows:
            order = order[: self.max_rows]
        n = len(order)
        n_test = int(round(n * self.test_fraction))
        n_val = int(round(n * self.val_fraction))
        if n - n_test - n_val < 1 or n_test == 0 or n_val == 0:
            raise DataError(f"CounterfactualTuples: {n} tuples are too few for val_fraction={self.val_fraction} "
                            f"and test_fraction={self.test_fraction}")
        parts = {"test": order[:n_test], "val": order[n_test:n_test + n_val], "train": order[n_test + n_val:]}
        splits = {}
        for name, ids in parts.items():
            rows = [tuples[i] for i in ids]
            splits[name] = TupleDataset(rows, [0] * len(rows), [-1] * len(rows), num_classes=2, num_groups=len(groups),
                                        source=self.tuple_file or f"{self.source} tuples")
        return splits

    def setup(self, stage: str | None = None) -> None:
        super().setup(stage)
        if self.polarity_report is not None and not getattr(self, "_printed_polarity", False):
            self._printed_polarity = True
            say(self.polarity_report)

    @property
    def versions(self) -> tuple[str, ...]:
        return (*self.group_names, NEUTRAL) if self.group_names else (*self.lexicon().groups, NEUTRAL)
