"""Helpers for tests: a tiny Hugging Face model; :func:`quiet_trainer_kwargs` (re-exported from :mod:`faircl.utils`)."""

from __future__ import annotations

from pathlib import Path

from faircl.utils import quiet_trainer_kwargs

__all__ = ["TINY_WORDS", "make_tiny_bert", "quiet_trainer_kwargs"]


#: Words of the tiny test vocabulary used by :func:`make_tiny_bert`.
TINY_WORDS = ("the", "a", "nurse", "surgeon", "he", "she", "is", "was", "kind", "cares", "for", "patients", "operates")


def make_tiny_bert(path: str | Path, hidden: int = 16, words: tuple[str, ...] = TINY_WORDS) -> str:
    """Save a randomly initialised 2-layer BERT and a WordPiece tokenizer over ``words`` to ``path`` (for tests)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True).save_pretrained(str(path))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(words) + 5, hidden_size=hidden, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64)
    BertModel(cfg).save_pretrained(str(path))
    return str(path)
