"""Features of a token encoder trained with cross-entropy and then frozen: Shen et al.'s (2021) hate-speech protocol,
where every method trains its MLP on top of one ``Embed`` (a bi-GRU) that plain CE learned on the training split.

The encoder is trained once per (token ids of every table, training labels, vocabulary size, :class:`EmbedSpec`) with
its own seeded generators (the global random state is left as it was), and the features of every table (each split,
and the EDA copies of the training rows) are stored as one ``<key>.npz`` under ``<cache>/trained_embed``. Every run of
a protocol, whatever its seed or method, then reads the same features. Cache directory: as
:func:`faircl.data.feature_cache.default_cache_dir` (``$FAIRCL_CACHE/features`` or ``~/.cache/faircl/features``) unless
given.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from faircl.data.feature_cache import default_cache_dir
from faircl.data.summary import say
from faircl.models.encoders import TokenEncoder

__all__ = ["EmbedSpec", "encode_ids", "train_embed", "trained_embed_tables"]

#: bump when the stored format or the training procedure changes
CACHE_VERSION = 1


@dataclass(frozen=True)
class EmbedSpec:
    """How the ``Embed`` is trained: ``epochs`` of Adam (``lr``) over shuffled batches of ``batch_size`` training rows,
    initialised and shuffled from ``seed``; ``encoder_kwargs`` go to :class:`~faircl.models.encoders.TokenEncoder`."""

    epochs: int = 2
    lr: float = 2e-3
    batch_size: int = 128
    seed: int = 0
    encoder_kwargs: dict = field(default_factory=lambda: {"embed_dim": 100, "hidden_dim": 128,
                                                           "bidirectional": True})

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or not self.lr > 0:
            raise ValueError(f"EmbedSpec needs epochs >= 1, batch_size >= 1 and lr > 0, got {self}")
        # a misspelt encoder argument fails here, when the datamodule is built, not minutes later in setup()
        known = [n for n in inspect.signature(TokenEncoder.__init__).parameters if n not in ("self", "input_dim")]
        unknown = sorted(set(self.encoder_kwargs) - set(known))
        if unknown:
            raise ValueError(f"embed_kwargs: unknown TokenEncoder argument(s) {unknown}; expected some of {known} "
                             "(input_dim is the vocabulary size, set by the data)")


def train_embed(ids: torch.Tensor, y: torch.Tensor, num_classes: int, vocab_size: int, spec: EmbedSpec
                ) -> TokenEncoder:
    """A :class:`~faircl.models.encoders.TokenEncoder` with a linear head trained by cross-entropy on ``ids [N, L]``
    → ``y [N]`` (rows with ``y < 0`` left out), returned in eval mode without its head."""
    keep = y >= 0
    ids, y = ids[keep], y[keep].long()
    if len(y) == 0:
        raise ValueError("train_embed: no training row has a label")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        encoder = TokenEncoder(vocab_size, **spec.encoder_kwargs)
        head = nn.Linear(encoder.out_dim, num_classes)
    order = torch.Generator().manual_seed(spec.seed + 1)
    opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=spec.lr)
    encoder.train()
    for _ in range(spec.epochs):
        for rows in torch.randperm(len(y), generator=order).split(spec.batch_size):
            loss = nn.functional.cross_entropy(head(encoder(ids[rows])), y[rows])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return encoder.eval()


@torch.no_grad()
def encode_ids(encoder: nn.Module, ids: torch.Tensor, batch: int = 512) -> np.ndarray:
    """``encoder``'s features of ``ids [N, L]`` as float32 ``[N, D]`` (eval mode, ``batch`` rows per call)."""
    encoder.eval()
    parts = [encoder(ids[i:i + batch]).float() for i in range(0, len(ids), batch)]
    return torch.cat(parts).numpy() if parts else np.zeros((0, getattr(encoder, "out_dim", 0)), np.float32)


def _key(tables: dict[str, list[torch.Tensor]], y: torch.Tensor, num_classes: int, vocab_size: int,
         spec: EmbedSpec) -> str:
    h = hashlib.sha256(json.dumps({"v": CACHE_VERSION, "spec": asdict(spec), "classes": num_classes,
                                   "vocab": vocab_size}, sort_keys=True).encode())
    for name in sorted(tables):
        for t in tables[name]:
            h.update(f"{name}:{tuple(t.shape)}".encode())
            h.update(t.long().contiguous().numpy().tobytes())
    h.update(y.long().contiguous().numpy().tobytes())
    return h.hexdigest()[:32]


def trained_embed_tables(tables: dict[str, list[torch.Tensor]], train_y: torch.Tensor, num_classes: int,
                         vocab_size: int, spec: EmbedSpec, cache_dir: str | Path | None = None,
                         name: str = "Embed") -> dict[str, list[np.ndarray]]:
    """The frozen features of every table of token ids, from an ``Embed`` trained on ``tables["train"][0]`` →
    ``train_y`` (:func:`train_embed`), read from the cache when it holds them.

    Args:
        tables: split → ``[ids of the rows, ids of EDA copy 1, ...]`` (each ``[N, L]``); needs ``"train"``.
        train_y: labels of the training rows.
        num_classes: classes of the CE head.
        vocab_size: embedding table size (largest id + 1 at least).
        spec: the training recipe.
        cache_dir: folder of ``trained_embed/<key>.npz`` (default: the feature cache's folder).
        name: how progress messages name the data.

    Returns:
        split → float32 feature matrices, in the order of ``tables[split]``.
    """
    if "train" not in tables or not tables["train"]:
        raise ValueError("trained_embed_tables needs the training rows (tables['train'][0])")
    folder = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    path = folder / "trained_embed" / f"{_key(tables, train_y, num_classes, vocab_size, spec)}.npz"
    if path.is_file():
        with np.load(path) as stored:
            say(f"{name}: frozen Embed features read from {path}")
            return {s: [stored[f"{s}__{k}"] for k in range(len(ts))] for s, ts in tables.items()}
    t0 = time.perf_counter()
    encoder = train_embed(tables["train"][0], train_y, num_classes, vocab_size, spec)
    say(f"{name}: Embed ({type(encoder).__name__}) trained by CE for {spec.epochs} epoch(s) on "
        f"{len(train_y)} rows in {time.perf_counter() - t0:.0f}s; frozen")
    out = {s: [encode_ids(encoder, t) for t in ts] for s, ts in tables.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")  # one writer per process, then an atomic rename
    np.savez(tmp, **{f"{s}__{k}": a for s, arrays in out.items() for k, a in enumerate(arrays)})
    os.replace(tmp, path)
    return out
