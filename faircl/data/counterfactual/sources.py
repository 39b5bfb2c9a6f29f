"""CDA tuples of named real corpora, drawn per source (:class:`SourcedTuples`): the embedding benchmark's data.

Every source's sentences become polarity-checked CDA tuples (a tuple already met in an earlier source is dropped);
train, validation and in-distribution test tuples are equal shares of every *training* source (disjoint), and the
test split adds ``n_heldout`` tuples of every *held-out* source, never trained on. Which source a test tuple came
from is kept (:attr:`SourcedTuples.test_sources`), so CCED can be reported in distribution and on held-out sources.
"""

from __future__ import annotations

import glob
import os
import random
import re
from pathlib import Path
from typing import Any, Sequence

from faircl.data.base import FairDataModule, FairDataset
from faircl.data.counterfactual.cda import CDA, PolarityReport, make_cda_tuples
from faircl.data.counterfactual.files import read_texts
from faircl.data.counterfactual.lexicon import NEUTRAL, AttributeLexicon
from faircl.data.counterfactual.tuples import TupleDataset
from faircl.data.io import DataError
from faircl.data.locations import DATA_ENV, missing_data_dir
from faircl.data.summary import say

__all__ = ["SOURCES", "SourcedTuples", "read_winobias", "source_texts", "source_tuples"]

#: name → (description, files under the data folder (glob patterns), text column, or ``winobias`` for its reader)
SOURCES: dict[str, tuple[str, tuple[str, ...], str | None]] = {
    "bios": ("Bias-in-Bios biographies (28 professions + 1,000 accountants)", ("bias_in_bios_samples/*.csv",), None),
    "gap": ("GAP coreference, Wikipedia sentences", ("gap_coreference/gap-*.tsv",), None),
    "bug": ("BUG gender corpus (Wikipedia, PubMed, Covid-19 sentences)", ("bug_gender/gold_BUG.csv",), None),
    "reddit": ("RedditBias comments on women (gender file)",
               ("reddit_bias/reddit_comments_gender_female_processed_phrase_annotated.csv",), None),
    "bec_pro": ("BEC-Pro person/profession template sentences", ("bec_pro/BEC-Pro_EN.tsv",), "Sentence"),
    "winobias": ("WinoBias pro/anti-stereotyped sentences", ("winobias/*_stereotyped_type*.txt.*",), "winobias"),
    "winogender": ("WinoGender sentences", ("winogender/all_sentences.tsv",), None),
}


def read_winobias(path: str | Path) -> list[str]:
    """WinoBias lines (``1 [The developer] argued ... [he] ...``) without the line number and the brackets."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        text = re.sub(r"^\d+\s+", "", line.strip()).replace("[", "").replace("]", "")
        if text:
            out.append(text)
    return out


def source_texts(data_dir: str | Path, name: str) -> list[str]:
    """The texts of one source of :data:`SOURCES` under ``data_dir``."""
    if name not in SOURCES:
        raise ValueError(f"unknown source {name!r}; the sources are {', '.join(SOURCES)}")
    _, patterns, column = SOURCES[name]
    files = [p for pat in patterns for p in sorted(glob.glob(str(Path(data_dir) / pat)))]
    if not files:
        raise FileNotFoundError(f"source {name!r}: no file matches {list(patterns)} in {data_dir}")
    texts: list[str] = []
    for p in files:
        texts += read_winobias(p) if column == "winobias" else read_texts(p, column=column)
    return texts


def source_tuples(data_dir: str | Path, names: Sequence[str], word_lists: str = "adept+cds+names",
                  min_words: int = 5, max_words: int = 40) -> tuple[dict[str, list[tuple[str, ...]]],
                                                                    dict[str, PolarityReport]]:
    """CDA tuples of every source (sentences of ``min_words``–``max_words`` words, polarity-checked, deduplicated;
    a tuple found in an earlier source is dropped) and each source's polarity report."""
    cda = CDA(AttributeLexicon.gender(data_dir, word_lists))
    pools: dict[str, list[tuple[str, ...]]] = {}
    reports: dict[str, PolarityReport] = {}
    seen: set[tuple[str, ...]] = set()
    for name in names:
        tuples, report = make_cda_tuples(source_texts(data_dir, name), cda, split=True, min_words=min_words,
                                         max_words=max_words)
        unique = [tuple(t) for t in dict.fromkeys(tuples) if tuple(t) not in seen]
        seen.update(unique)
        pools[name], reports[name] = unique, report
    return pools, reports


def _shares(total: int, k: int) -> list[int]:
    return [total // k + (i < total % k) for i in range(k)]


class SourcedTuples(FairDataModule):
    """CDA tuples of named corpora (:data:`SOURCES`): train / validation / test from the training sources, plus
    tuples of held-out sources in the test split.

    Args:
        train_sources: sources whose tuples are trained on (equal shares of every split).
        heldout_sources: sources only tested on (``n_heldout`` tuples each, all of a smaller source).
        n_train / n_val / n_test: tuples of the training sources per split.
        n_heldout: test tuples per held-out source.
        data_dir: the folder with the corpora and ``cda_word_lists/`` (default ``$FAIRCL_DATA``).
        word_lists: gender word-list presets joined by ``+`` (:meth:`AttributeLexicon.gender`).
        min_words / max_words: sentence lengths kept.
        seed: the draw of the tuples and the order of the training tuples.
        **kwargs: the other :class:`~faircl.data.base.FairDataModule` arguments.
    """

    input_kind = "tuples"  # each x is G + 1 versions of one text

    def __init__(self, train_sources: list[str] | None = None, heldout_sources: list[str] | None = None,
                 n_train: int = 800, n_val: int = 48, n_test: int = 120, n_heldout: int = 60,
                 data_dir: str | None = None, word_lists: str = "adept+cds+names", min_words: int = 5,
                 max_words: int = 40, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.train_sources = list(train_sources or ("bios", "gap", "bug"))
        self.heldout_sources = list(heldout_sources if heldout_sources is not None
                                    else ("reddit", "bec_pro", "winobias", "winogender"))
        names = self.train_sources + self.heldout_sources
        bad = [s for s in names if s not in SOURCES]
        if bad or len(set(names)) != len(names):
            raise ValueError(f"train_sources {self.train_sources} and heldout_sources {self.heldout_sources} must be "
                             f"distinct names of {list(SOURCES)}")
        for name, n in (("n_train", n_train), ("n_val", n_val), ("n_test", n_test)):
            if n < len(self.train_sources):
                raise ValueError(f"{name}={n}: at least one tuple per training source ({len(self.train_sources)})")
        if n_heldout < 0:
            raise ValueError(f"n_heldout={n_heldout} must be ≥ 0")
        self.n_train, self.n_val, self.n_test, self.n_heldout = n_train, n_val, n_test, n_heldout
        self.data_dir, self.word_lists = data_dir, word_lists
        self.min_words, self.max_words = min_words, max_words
        self.class_names, self.group_names = ["tuple", "unused"], ["male", "female"]
        self.test_sources: list[str] = []
        self.polarity: dict[str, PolarityReport] = {}

    @property
    def versions(self) -> tuple[str, ...]:
        return (*self.group_names, NEUTRAL)

    def _root(self) -> Path:
        root = self.data_dir or os.environ.get(DATA_ENV)
        if not root:
            raise DataError(missing_data_dir("SourcedTuples", None))
        if not Path(root).expanduser().is_dir():
            raise DataError(f"SourcedTuples: data folder {root} not found (data_dir or {DATA_ENV})")
        return Path(root).expanduser()

    def load_splits(self) -> dict[str, FairDataset]:
        pools, self.polarity = source_tuples(self._root(), self.train_sources + self.heldout_sources,
                                             self.word_lists, self.min_words, self.max_words)
        rng = random.Random(self.seed)
        parts: dict[str, list[tuple[str, tuple[str, ...]]]] = {"train": [], "val": [], "test": []}
        k = len(self.train_sources)
        for s, a, b, c in zip(self.train_sources, _shares(self.n_train, k), _shares(self.n_val, k),
                              _shares(self.n_test, k)):
            items = list(pools[s])
            if len(items) < a + b + c:
                raise DataError(f"SourcedTuples: source {s!r} has {len(items)} tuples, {a + b + c} needed "
                                f"(n_train, n_val, n_test are shared by {k} sources)")
            rng.shuffle(items)
            parts["test"] += [(s, t) for t in items[:c]]
            parts["val"] += [(s, t) for t in items[c:c + b]]
            parts["train"] += [(s, t) for t in items[c + b:c + b + a]]
        for s in self.heldout_sources:
            parts["test"] += [(s, t) for t in rng.sample(pools[s], min(self.n_heldout, len(pools[s])))]
        random.Random(self.seed).shuffle(parts["train"])
        self.test_sources = [s for s, _ in parts["test"]]
        splits = {}
        for name, rows in parts.items():
            x = [t for _, t in rows]
            splits[name] = TupleDataset(x, [0] * len(x), [-1] * len(x), num_classes=2, num_groups=2,
                                        source=f"CDA tuples of {', '.join(dict.fromkeys(s for s, _ in rows))}")
        return splits

    def report_counts(self, splits: dict[str, FairDataset]) -> None:
        if getattr(self, "trainer", None) is not None and not self.trainer.is_global_zero:
            return
        counts = {s: self.test_sources.count(s) for s in dict.fromkeys(self.test_sources)}
        say(f"SourcedTuples: {len(splits['train'])} train / {len(splits['val'])} val tuples of "
            f"{', '.join(self.train_sources)}; test tuples per source {counts}")
