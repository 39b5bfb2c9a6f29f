"""Embedding-bias evaluation of a text encoder directory (placeholder while the evaluation is written)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def save_random_bert(path: str | Path, texts: Iterable[str], *, mlm: bool = False, hidden_size: int = 32,
                     num_layers: int = 2, num_heads: int = 2, dropout: float = 0.0, seed: int = 0) -> Path:
    """Save a tiny randomly initialised BERT (``BertModel`` or ``BertForMaskedLM``) with a word-level vocabulary.

    For tests and quick demos: the vocabulary holds the special tokens and every lower-cased word and punctuation
    mark of ``texts``, so those texts tokenize without ``[UNK]``.
    """
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    words = sorted({w for t in texts for w in re.findall(r"\w+|[^\w\s]", t.lower())})
    vocab = {w: i for i, w in enumerate([*SPECIAL_TOKENS, *words])}
    try:
        tok = BertTokenizer(vocab=vocab, do_lower_case=True)  # transformers >= 5
    except TypeError:  # transformers 4: a vocabulary file
        (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
        tok = BertTokenizer(vocab_file=str(path / "vocab.txt"), do_lower_case=True)
    cfg = BertConfig(vocab_size=len(SPECIAL_TOKENS) + len(words), hidden_size=hidden_size,
                     num_hidden_layers=num_layers, num_attention_heads=num_heads, intermediate_size=2 * hidden_size,
                     max_position_embeddings=128, hidden_dropout_prob=dropout,
                     attention_probs_dropout_prob=dropout)
    torch.manual_seed(seed)
    model = (BertForMaskedLM if mlm else BertModel)(cfg)
    model.save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return path
