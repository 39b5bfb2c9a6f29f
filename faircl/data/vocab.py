"""A small word-level vocabulary: text → fixed-length integer ids (0 = padding, 1 = unknown word)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

import torch

_TOKEN = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (letters, digits and apostrophes)."""
    return _TOKEN.findall(text.lower())


class WordVocab:
    """Word vocabulary built from training texts.

    Args:
        texts: training texts.
        max_len: ids per text (longer texts are cut — counted in ``truncated`` — shorter ones right-padded with 0).
        min_count: words seen fewer times map to the unknown id 1.
        max_size: keep at most this many words (most frequent first).
    """

    PAD, UNK = 0, 1

    def __init__(self, texts: Iterable[str], max_len: int = 64, min_count: int = 1, max_size: int | None = None):
        counts = Counter(w for t in texts for w in words(t))
        kept = [w for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if c >= min_count]
        if max_size is not None:
            kept = kept[:max_size]
        self.index = {w: i + 2 for i, w in enumerate(kept)}
        self.max_len = max_len
        self.truncated = 0

    def __len__(self) -> int:
        return len(self.index) + 2

    def __call__(self, text: str) -> torch.Tensor:
        ids = [self.index.get(w, self.UNK) for w in words(text)]
        if len(ids) > self.max_len:
            self.truncated += 1
            ids = ids[: self.max_len]
        out = torch.zeros(self.max_len, dtype=torch.long)
        out[: len(ids)] = torch.tensor(ids, dtype=torch.long)
        return out
