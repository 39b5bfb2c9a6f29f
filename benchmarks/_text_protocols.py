"""The text benchmark's protocols as frozen features: SynthBios two-class on MiniLM (main), its attribute-permuted
control, English hate speech under the controlled stereotype and the real Bias in Bios samples
(``benchmarks/text_fairness.py``)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import time
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch
from _text_runs import FrozenFeatures

from faircl.data.base import FairDataset
from faircl.testing import quiet_trainer_kwargs

EMBED = {"embed_dim": 100, "hidden_dim": 128, "bidirectional": True}
CACHE = Path.home() / ".cache" / "faircl" / "benchmarks"


def distinct_views(texts: list[str], eda, copies: int, tries: int = 20) -> list[list[str]]:
    """``copies`` augmented versions of every text, all different from each other and from the original (up to
    ``tries`` redraws; a text too short to vary keeps what was drawn)."""
    out = [[] for _ in range(copies)]
    for t in texts:
        seen = {t}
        for k in range(copies):
            v = eda(t)
            for _ in range(tries):
                if v not in seen:
                    break
                v = eda(t)
            seen.add(v)
            out[k].append(v)
    return out


def synthbios_features(n_train: int, n_val: int, n_test: int, copies: int, log, bias: float = 0.8,
                       cache: Path = CACHE) -> tuple[FrozenFeatures, dict[str, Any]]:
    """SynthBios with the professions grouped by their stereotyped gender (two classes), encoded once by the
    frozen all-MiniLM-L6-v2; train also gets ``copies`` distinct EDA versions of every bio (augment, then encode).
    Train: ``bias`` of the rows have attribute = label; val / test: attribute independent of the label."""
    from faircl.data.synthetic import _PROFESSIONS, SynthBios

    dm = SynthBios(n_train=n_train, n_val=n_val, n_test=n_test, bias=bias, representation="text", seed=0)
    splits = dm.splits
    stereo = np.array([_PROFESSIONS[p][0] for p in dm.class_names])
    key = hashlib.sha1(repr((n_train, n_val, n_test, copies, bias, "minilm-v1")).encode()).hexdigest()[:12]
    texts = {name: [str(t) for t in ds.x] for name, ds in splits.items()}
    tables = _encode_splits(texts, copies, dm.view_transform(), cache / f"synthbios2_{key}.pt", log)
    labels = {s: (stereo[ds.y.numpy()], ds.a.numpy()) for s, ds in splits.items()}
    info = {"professions": {p: int(stereo[i]) for i, p in enumerate(dm.class_names)},
            "train_agreement": float(np.mean(labels["train"][0] == labels["train"][1])),
            "identical_view_pairs": identical_pairs(tables["train"])}
    return FrozenFeatures(tables, labels, 2, ["male", "female"], batch_size=256), info


def _encode_splits(texts: dict[str, list[str]], copies: int, eda, path: Path, log) -> dict[str, list[torch.Tensor]]:
    """MiniLM features of every split (train: plus ``copies`` distinct EDA versions), cached at ``path``."""
    if path.is_file():
        log(f"  MiniLM features from the cache {path.name}")
        return torch.load(path, weights_only=True)
    from faircl.eval.text_encoder import TextEmbedder

    emb = TextEmbedder(batch_size=64)
    t0, n = time.perf_counter(), 0
    tables = {}
    for name, split in texts.items():
        sets = [split] + (distinct_views(split, eda, copies) if name == "train" else [])
        tables[name] = [emb(s).float() for s in sets]
        n += sum(len(s) for s in sets)
    log(f"  encoded {n} sentences with MiniLM in {time.perf_counter() - t0:.0f}s")
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(tables, path)
    return tables


def bios_features(data_dir: Path, copies: int, log, cache: Path = CACHE) -> tuple[FrozenFeatures, dict[str, Any]]:
    """The real Bias in Bios samples (28 professions × 10 bios, gender): a seeded split stratified by (profession,
    gender), 55 / 15 / 30%, encoded by the frozen all-MiniLM-L6-v2; train also gets ``copies`` distinct EDA copies."""
    from faircl.data.text import BiasInBios

    dm = BiasInBios(data_dir=str(data_dir), representation="text", val_fraction=0.15, test_fraction=0.3, seed=0)
    dm._reported = True
    splits = dm.splits
    texts = {s: [str(t) for t in ds.x] for s, ds in splits.items()}
    key = hashlib.sha1(repr((sorted(texts.items()), copies, "bios-minilm-v1")).encode()).hexdigest()[:12]
    tables = _encode_splits(texts, copies, dm.view_transform(), cache / f"bios_{key}.pt", log)
    labels = {s: (ds.y.numpy(), ds.a.numpy()) for s, ds in splits.items()}
    info = {"rows": {s: len(ds) for s, ds in splits.items()}, "classes": dm.num_classes,
            "female_share": {s: float(np.mean(a == 1)) for s, (_, a) in labels.items()},
            "identical_view_pairs": identical_pairs(tables["train"])}
    return FrozenFeatures(tables, labels, dm.num_classes, ["male", "female"], batch_size=64), info


def identical_pairs(train_tables: list[torch.Tensor]) -> float:
    """Share of (row, pair of copies) whose two feature vectors are identical (0 when every copy differs)."""
    same, total = 0, 0
    for i in range(len(train_tables)):
        for j in range(i + 1, len(train_tables)):
            same += int((train_tables[i] == train_tables[j]).all(dim=1).sum())
            total += len(train_tables[i])
    return same / max(total, 1)


@torch.no_grad()
def _encode_ids(encoder: torch.nn.Module, ids: torch.Tensor, batch: int = 512) -> torch.Tensor:
    encoder.eval()
    return torch.cat([encoder(ids[i:i + batch]) for i in range(0, len(ids), batch)]).float()


def hate_features(data_dir: Path, attribute: str, embed_epochs: int, max_train: int | None, copies: int,
                  log) -> tuple[FrozenFeatures, dict[str, Any]]:
    """English hate speech under the controlled stereotype: train the bi-GRU ``Embed`` with CE (seed 0), freeze
    it, and return its features of every split (plus ``copies`` EDA copies of the train tweets)."""
    from faircl.data.text import HateSpeech
    from faircl.methods import CE

    dm = HateSpeech(data_dir=str(data_dir), language="English", attribute=attribute, split_protocol="controlled",
                    batch_size=128, seed=0, controlled_eval=400 if max_train is not None and max_train < 2000 else 2000)
    dm._reported = True
    splits = dm.splits
    if max_train is not None:
        keep = np.random.default_rng(0).permutation(len(splits["train"]))[:max_train]
        tr = splits["train"]
        splits["train"] = FairDataset(tr.x[keep], tr.y[keep].numpy(), tr.a[keep].numpy(), num_classes=2,
                                      num_groups=tr.num_groups, source=tr.source)
    L.seed_everything(0, verbose=False)
    embed = CE(num_classes=2, num_groups=dm.num_groups, input_dim=dm.input_dim, encoder="tokens",
               encoder_kwargs=EMBED, lr=2e-3, leakage=False)
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=embed_epochs, limit_val_batches=0, num_sanity_val_steps=0))
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.fit(embed, datamodule=dm)
    log(f"  bi-GRU Embed: {embed_epochs} CE epoch(s) on {len(splits['train'])} tweets in "
        f"{time.perf_counter() - t0:.0f}s")
    eda = dm.view_transform()
    tables, labels = {}, {}
    torch.manual_seed(0)
    for name, ds in splits.items():
        ids = torch.as_tensor(ds.x)
        t = [_encode_ids(embed.encoder, ids)]
        if name == "train":
            t += [_encode_ids(embed.encoder, torch.stack([eda(r) for r in ids])) for _ in range(copies)]
        tables[name] = t
        labels[name] = (ds.y.numpy(), ds.a.numpy())
    y, a = labels["train"]
    info = {"train_agreement": float(np.mean(y[a >= 0] == a[a >= 0])), "identical_view_pairs":
            identical_pairs(tables["train"]), "counts": dm.protocol_report["counts"] if dm.protocol_report else {}}
    return FrozenFeatures(tables, labels, 2, list(dm.group_names), batch_size=256), info
