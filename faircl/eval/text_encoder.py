"""Sentence embeddings from a local text-encoder directory, and a tiny random BERT for tests and smoke runs.

Nothing here downloads: models load from local directories (Hugging Face ``save_pretrained`` or
sentence-transformers layout); ``transformers`` is imported only when a model is loaded or written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from torch.nn import functional as F

from faircl.models.encoders import pool_hidden, resolve_text_model_dir, sentence_layout

__all__ = ["SPECIAL_TOKENS", "TextEmbedder", "save_random_bert"]

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class TextEmbedder:
    """Sentence embeddings from a local model directory (Hugging Face ``save_pretrained`` or sentence-transformers).

    Pooling comes from ``1_Pooling/config.json`` when present (mean by default); a ``Normalize`` module in
    ``modules.json`` (or ``normalize=True``) L2-normalises the output. Nothing is downloaded.

    Args:
        model_dir: the directory (``None`` = the offline all-MiniLM-L6-v2 package).
        batch_size: texts per forward pass.
        max_length: tokenizer truncation.
        normalize: force normalisation on/off (default: as the directory says).
        dtype: ``torch.float32`` or ``torch.bfloat16`` (autocast on CPU).
    """

    def __init__(self, model_dir: str | Path | None = None, batch_size: int = 64, max_length: int = 128,
                 normalize: bool | None = None, dtype: torch.dtype = torch.float32) -> None:
        from transformers import AutoConfig, AutoModel, AutoTokenizer


        self.model_dir = resolve_text_model_dir(model_dir)
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir), local_files_only=True)
        self.config = AutoConfig.from_pretrained(str(self.model_dir), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(self.model_dir), local_files_only=True).eval()
        self.batch_size, self.max_length, self.dtype = batch_size, max_length, dtype
        self.pooling, in_dir = sentence_layout(self.model_dir)
        self.normalize = in_dir if normalize is None else normalize
        self._mlm = None

    @property
    def has_mlm_head(self) -> bool:
        """Whether the directory holds a masked-LM head (``*ForMaskedLM`` / ``*ForPreTraining``)."""
        arch = self.config.architectures or []
        return any(a.endswith(("ForMaskedLM", "ForPreTraining")) for a in arch)

    def mlm(self):
        """The masked-LM model of the directory (loaded once)."""
        if not self.has_mlm_head:
            raise ValueError(f"{self.model_dir} has no masked-LM head (architectures {self.config.architectures})")
        if self._mlm is None:
            from transformers import AutoModelForMaskedLM

            self._mlm = AutoModelForMaskedLM.from_pretrained(str(self.model_dir), local_files_only=True).eval()
        return self._mlm

    @torch.no_grad()
    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        """Embeddings ``[N, d]`` (float32) of ``texts``."""
        out = []
        for i in range(0, len(texts), self.batch_size):
            enc = self.tokenizer(list(texts[i:i + self.batch_size]), padding=True, truncation=True,
                                 max_length=self.max_length, return_tensors="pt")
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.dtype == torch.bfloat16):
                hidden = self.model(**enc).last_hidden_state.float()
            h = pool_hidden(hidden, enc["attention_mask"], self.pooling)
            out.append(F.normalize(h, dim=-1) if self.normalize else h)
        return torch.cat(out) if out else torch.zeros(0, int(self.config.hidden_size))


def save_random_bert(path: str | Path, texts: Iterable[str], *, mlm: bool = False, hidden_size: int = 32,
                     num_layers: int = 2, num_heads: int = 2, dropout: float = 0.0, seed: int = 0) -> Path:
    """Save a tiny randomly initialised BERT (``BertModel`` or ``BertForMaskedLM``) with a word-level vocabulary.

    For tests and quick demos: the vocabulary holds the special tokens and every lower-cased word and punctuation
    mark of ``texts``, so those texts tokenize without ``[UNK]``.
    """
    from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    words = sorted({w for t in texts for w in re.findall(r"\w+|[^\w\s]", t.lower())} - set(SPECIAL_TOKENS))
    vocab = {w: i for i, w in enumerate([*SPECIAL_TOKENS, *words])}
    try:
        tok = BertTokenizer(vocab=vocab, do_lower_case=True)  # transformers >= 5
    except TypeError:  # transformers 4: a vocabulary file
        (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
        tok = BertTokenizer(vocab_file=str(path / "vocab.txt"), do_lower_case=True)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=hidden_size, num_hidden_layers=num_layers,
                     num_attention_heads=num_heads, intermediate_size=2 * hidden_size, max_position_embeddings=128,
                     hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    torch.manual_seed(seed)
    model = (BertForMaskedLM if mlm else BertModel)(cfg)
    model.save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return path
