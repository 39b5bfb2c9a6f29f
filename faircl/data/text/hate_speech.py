"""Multilingual Twitter hate speech with author demographics (Huang et al., 2020)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from faircl.data.base import FairDataModule, FairDataset, encode_groups
from faircl.data.io import DataError, read_table, require_columns, require_path, stratified_split, where
from faircl.data.locations import default_data_dir, missing_data_dir
from faircl.data.summary import say
from faircl.data.text.base import _FeatureTable, _LoadedNames, _PickView, make_eda
from faircl.data.text.trained_embed import EmbedSpec, trained_embed_tables

__all__ = ["HATE_ATTRIBUTES", "HateSpeech", "controlled_stereotype_rows"]


HATE_ATTRIBUTES = ("gender", "age", "country", "ethnicity")
_HATE_COLUMNS = ("tid", "uid", "text", "date", "gender", "age", "city", "state", "country", "ethnicity", "label")


class HateSpeech(_LoadedNames, FairDataModule):
    """Multilingual Twitter hate speech with author demographics (Huang et al., 2020), as used by Shen et al. (2022).

    Files ``<language>_{train,valid,test}.tsv`` with columns ``tid uid text date gender age city state country
    ethnicity label``; ``text`` holds integer token ids, left zero-padded (the authors withhold the words); ``label``
    is 1 = hate; the attributes are binary ``0``/``1`` with ``x`` = unknown (attribute ``-1``, or dropped with
    ``drop_unknown``). ``x`` is the id tensor ``[max_len]`` (left-padded as in the files; the ``tokens`` encoder
    accepts either side), ``input_dim`` the vocabulary size.

    Splits (``split_protocol``):

    * ``standard``: ``train`` / ``valid`` / ``test`` files as published;
    * ``valid_as_train``: train on ``<language>_valid`` minus a seeded stratified ``val_fraction`` held out as
      validation, test on ``<language>_test``. The English release has no train file, so the ConFair comparison on
      English trains on ``English_valid`` and tests on ``English_test`` (their label rates differ: 23% vs 72% hate);
    * ``auto`` (default): ``standard`` when the train file exists, else ``valid_as_train`` (the choice is printed);
    * ``controlled``: a controlled-stereotype protocol on the pooled ``valid`` and ``test`` files (rows with a known
      attribute; one binary attribute): a train set with balanced classes and groups in which the attribute agrees
      with the label (``a = y``) for ``stereotype_agreement`` of the rows, and balanced val / test sets (each
      (y, a) cell a quarter), drawn without overlap by :func:`controlled_stereotype_rows` (seeded by ``seed``).
      The counts and the realised agreement are in ``self.protocol_report``. It makes the gaps large and known,
      so that "the method lowers the gap" is testable (the published English split has almost none to remove).

    Args:
        data_dir: the folder of the TSV files (default ``$FAIRCL_DATA/multilingual_hate_speech_demographics``).
        language: ``English``, ``Italian``, ``Polish``, ``Portuguese`` or ``Spanish`` (file name prefix).
        attribute: one of :data:`HATE_ATTRIBUTES` or a list of them (intersectional groups such as
            ``gender=0|age=1``; a row unknown in any of them is unknown).
        split_protocol: ``auto`` | ``standard`` | ``valid_as_train``.
        val_fraction: share of ``valid`` held out as validation under ``valid_as_train``.
        vocab_size: embedding table size (default: largest id over all splits + 1); a larger id raises.
        drop_unknown: drop rows with an unknown attribute.
        eda_p: EDA edit rate on the id sequence for the second view (``two_views=True``).
        stereotype_agreement: ``controlled`` protocol: share of train rows with ``a = y``.
        controlled_train: ``controlled`` protocol: train rows (default: the most the pool allows).
        controlled_eval: ``controlled`` protocol: rows of val and of test each (a multiple of 4).
        features: ``none`` (``x`` = token ids) or ``trained``: ``x`` = the features of a bi-GRU ``Embed`` trained by CE
            on the training split and frozen (Shen et al.'s protocol; :mod:`faircl.data.text.trained_embed`, cached on
            disk, the same for every run of the same data); ``input_kind`` is then ``features`` and an ``mlp`` trains
            on top.
        embed_epochs: ``features="trained"``: CE epochs of the ``Embed``.
        embed_lr: ``features="trained"``: its Adam learning rate.
        embed_batch_size: ``features="trained"``: its batch size.
        embed_kwargs: ``features="trained"``: :class:`~faircl.models.encoders.TokenEncoder` arguments (default
            ``{embed_dim: 100, hidden_dim: 128, bidirectional: true}``).
        frozen_views: ``features="trained"`` with ``two_views=True``: EDA copies of every training row encoded (once,
            cached) to draw the views from.
        cache_dir: ``features="trained"``: the feature cache folder (default ``$FAIRCL_CACHE/features`` or
            ``~/.cache/faircl/features``).
    """

    data_folder = "multilingual_hate_speech_demographics"  # under $FAIRCL_DATA when data_dir is not given

    def __init__(
        self,
        data_dir: str | None = None,
        language: str = "English",
        attribute: str | list[str] = "gender",
        split_protocol: str = "auto",
        val_fraction: float = 0.1,
        vocab_size: int | None = None,
        drop_unknown: bool = False,
        eda_p: float = 0.1,
        stereotype_agreement: float = 0.8,
        controlled_train: int | None = None,
        controlled_eval: int = 2000,
        features: str = "none",
        embed_epochs: int = 2,
        embed_lr: float = 2e-3,
        embed_batch_size: int = 128,
        embed_kwargs: dict | None = None,
        frozen_views: int = 4,
        cache_dir: str | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if features not in ("none", "trained"):
            raise ValueError(f"features={features!r} must be 'none' or 'trained'")
        if frozen_views < 1:
            raise ValueError(f"frozen_views must be >= 1, got {frozen_views}")
        self.features, self.frozen_views, self.cache_dir = features, frozen_views, cache_dir
        self.embed = EmbedSpec(embed_epochs, embed_lr, embed_batch_size, self.seed,
                               **({"encoder_kwargs": dict(embed_kwargs)} if embed_kwargs else {}))
        self._feature_dim = 0
        self.attributes = [attribute] if isinstance(attribute, str) else list(attribute)
        bad = [a for a in self.attributes if a not in HATE_ATTRIBUTES]
        if bad or not self.attributes:
            raise ValueError(f"attribute {bad or attribute!r} must be one or several of {HATE_ATTRIBUTES}")
        if split_protocol not in ("auto", "standard", "valid_as_train", "controlled"):
            raise ValueError(f"split_protocol={split_protocol!r} must be 'auto', 'standard', 'valid_as_train' or "
                             "'controlled'")
        if split_protocol == "controlled" and len(self.attributes) != 1:
            raise ValueError("split_protocol='controlled' needs a single binary attribute, got "
                             f"{self.attributes}")
        self.stereotype_agreement, self.controlled_train = stereotype_agreement, controlled_train
        self.controlled_eval = controlled_eval
        self.protocol_report: dict | None = None
        self.data_dir = default_data_dir(data_dir, self.data_folder)
        self.language, self.split_protocol, self.val_fraction = language, split_protocol, val_fraction
        self.vocab_size, self.drop_unknown, self.eda_p = vocab_size, drop_unknown, eda_p
        self.class_names = ["non-hate", "hate"]
        self.protocol: str | None = None
        self._vocab = 0

    @property
    def input_kind(self) -> str:
        """``tokens`` (integer token ids, as in Huang et al.'s files), or ``features`` with ``features="trained"``."""
        return "features" if self.features == "trained" else "tokens"

    @property
    def input_dim(self) -> int:
        self.splits  # noqa: B018
        return self._feature_dim if self.features == "trained" else self._vocab

    def _read(self, path: Path) -> tuple[list[list[int]], np.ndarray, list[list[str]]]:
        df = read_table(path, sep="\t", quotes=False)
        require_columns(df, ["text", "label", *self.attributes], path)
        ids = []
        for r, v in enumerate(df["text"].tolist()):
            parts = str(v).split()
            if not parts or not all(p.isdigit() for p in parts):
                raise DataError(f"{where(path, 'text', r)}: expected space-separated non-negative integer token ids, "
                                f"got {str(v)[:60]!r}")
            ids.append([int(p) for p in parts])
        y = np.empty(len(df), dtype=np.int64)
        for r, v in enumerate(df["label"].tolist()):
            if str(v).strip() not in ("0", "1"):
                raise DataError(f"{where(path, 'label', r)}: label {v!r} is not 0 or 1")
            y[r] = int(str(v).strip())
        attrs = []
        for c in self.attributes:
            col = []
            for r, v in enumerate(df[c].tolist()):
                s = str(v).strip().lower()
                if s not in ("0", "1", "x"):
                    raise DataError(f"{where(path, c, r)}: {c} {v!r} is not 0, 1 or x (unknown)")
                col.append("x" if s == "x" else f"{c}={s}")
            attrs.append(col)
        return ids, y, attrs

    def load_splits(self) -> dict[str, FairDataset]:
        if self.data_dir is None:
            raise ValueError(missing_data_dir("HateSpeech", self.data_folder) + " (<Language>_{train,valid,test}.tsv)")
        root = require_path(self.data_dir, "HateSpeech data_dir")
        files = {s: root / f"{self.language}_{s}.tsv" for s in ("train", "valid", "test")}
        protocol = self.split_protocol
        if protocol == "auto":
            protocol = "standard" if files["train"].is_file() else "valid_as_train"
            if protocol == "valid_as_train":
                say(f"HateSpeech: {files['train'].name} not found; training on {files['valid'].name} "
                      f"(minus {self.val_fraction:.0%} held out for validation), testing on {files['test'].name}")
        self.protocol = protocol
        need = ("train", "valid", "test") if protocol == "standard" else ("valid", "test")  # controlled: pooled
        for s in need:
            require_path(files[s], f"HateSpeech {self.language} {s} file",
                         "" if s != "train" else "English has no train split: use split_protocol='valid_as_train'.")
        read = {s: self._read(files[s]) for s in need}
        if protocol == "standard":
            parts = {"train": ("train", None), "val": ("valid", None), "test": ("test", None)}
        elif protocol == "controlled":
            ids = read["valid"][0] + read["test"][0]
            y = np.concatenate([read["valid"][1], read["test"][1]])
            attrs = [v + t for v, t in zip(read["valid"][2], read["test"][2])]
            read = {"pool": (ids, y, attrs)}
            a_tmp, _ = encode_groups(attrs, unknown=("x",), categories=[[f"{c}=0", f"{c}=1"] for c in self.attributes])
            rows, self.protocol_report = controlled_stereotype_rows(
                y, a_tmp, self.stereotype_agreement, self.controlled_train, self.controlled_eval, self.seed)
            parts = {split: ("pool", rows[split]) for split in ("train", "val", "test")}
            files["pool"] = root / f"{self.language}_{{valid,test}}.tsv"
        else:
            ids, y, attrs = read["valid"]
            a_tmp, _ = encode_groups(attrs, unknown=("x",),
                                     categories=[[f"{c}=0", f"{c}=1"] for c in self.attributes])
            cut = stratified_split(y, a_tmp, self.val_fraction, 0.0, self.seed)
            parts = {"train": ("valid", cut["train"]), "val": ("valid", cut["val"]), "test": ("test", None)}
        max_id = max(max((max(r) for r in ids), default=0) for ids, _, _ in read.values())
        if self.vocab_size is not None and max_id >= self.vocab_size:
            raise DataError(f"HateSpeech: token id {max_id} does not fit vocab_size={self.vocab_size}")
        self._vocab = self.vocab_size if self.vocab_size is not None else max_id + 1
        width = max(len(r) for ids, _, _ in read.values() for r in ids)
        out = {}
        for split, (file_key, rows) in parts.items():
            ids, y, attrs = read[file_key]
            a, self.group_names = encode_groups(attrs, unknown=("x",),
                                                categories=[[f"{c}=0", f"{c}=1"] for c in self.attributes])
            if rows is None:
                rows = np.arange(len(y))
            if self.drop_unknown:
                rows = rows[a[rows] >= 0]
            x = torch.zeros(len(rows), width, dtype=torch.long)
            for k, r in enumerate(rows):
                seq = ids[r]
                x[k, width - len(seq):] = torch.tensor(seq, dtype=torch.long)  # left padding, as in the files
            src = str(files[file_key]) + ("" if file_key == split or (split == "test" and file_key == "test")
                                          else f" [{split} part]")
            out[split] = FairDataset(x, y[rows], a[rows], num_classes=2, num_groups=len(self.group_names), source=src)
        return self._frozen_embed(out) if self.features == "trained" else out

    def _frozen_embed(self, splits: dict[str, FairDataset]) -> dict[str, FairDataset]:
        """The splits with ``x`` = the trained and frozen ``Embed``'s features (and those of ``frozen_views`` EDA
        copies of every training row when ``two_views``)."""
        tables = {s: [torch.as_tensor(ds.x)] for s, ds in splits.items()}
        if self.two_views:
            for k in range(1, self.frozen_views + 1):  # seeded: the same copies, hence the same cache key, every run
                eda = _TokenEDA(make_eda(self.eda_p, self.seed * 1000 + k, synonyms=False))
                tables["train"].append(torch.stack([eda(r) for r in tables["train"][0]]))
        feats = trained_embed_tables(tables, splits["train"].y, 2, self._vocab, self.embed, self.cache_dir,
                                     name=f"HateSpeech {self.language}")
        self._feature_dim = int(feats["train"][0].shape[1])
        return {s: FairDataset(np.arange(len(ds)), ds.y.numpy(), ds.a.numpy(), num_classes=2, num_groups=ds.num_groups,
                               transform=_FeatureTable(feats[s]), source=ds.source) for s, ds in splits.items()}

    def view_transform(self) -> Callable:
        if self.features == "trained":
            return _PickView(self.frozen_views)
        return _TokenEDA(make_eda(self.eda_p, self.seed, synonyms=False))


def controlled_stereotype_rows(
    y: np.ndarray,
    a: np.ndarray,
    agreement: float = 0.8,
    n_train: int | None = None,
    n_eval: int = 2000,
    seed: int = 0,
) -> tuple[dict[str, np.ndarray], dict]:
    """Row indices of a controlled-stereotype protocol for a binary task and a binary attribute.

    Train: ``n_train`` rows, half per class and half per group, with ``a = y`` for a share ``agreement`` of them
    (cells ``(y, a)``: ``(0,0)`` and ``(1,1)`` hold ``agreement·n_train/2`` each, ``(0,1)`` and ``(1,0)`` the rest).
    Val and test: ``n_eval`` rows each, a quarter per cell (no stereotype). The three sets do not overlap; rows with
    ``a < 0`` are never drawn. Each cell is shuffled with ``numpy.random.default_rng(seed)``; val and test are taken
    first, then train.

    Args:
        y: labels ``[N]`` in ``{0, 1}``.
        a: attributes ``[N]`` in ``{0, 1}`` (``-1`` = unknown).
        agreement: share of train rows with ``a = y``, in ``[0, 1]``.
        n_train: train rows, even (default: the largest even size the cells allow).
        n_eval: rows of val and of test, a positive multiple of 4.
        seed: seed of the draw.

    Returns:
        ``({"train", "val", "test"} → sorted row indices, report)`` with ``report`` holding ``agreement`` (the
        realised share of ``a = y`` in train), ``counts`` (``{split: {"y=0,a=0": n, ...}}``) and ``available``.
    """
    y, a = np.asarray(y), np.asarray(a)
    if y.shape != a.shape or y.ndim != 1:
        raise ValueError(f"y and a must be 1-d of one length, got {y.shape} and {a.shape}")
    if not set(np.unique(y).tolist()) <= {0, 1} or not set(np.unique(a).tolist()) <= {-1, 0, 1}:
        raise ValueError("the controlled protocol needs binary labels and a binary attribute (-1 = unknown)")
    if not 0.0 <= agreement <= 1.0:
        raise ValueError(f"agreement must be in [0, 1], got {agreement}")
    if n_eval < 4 or n_eval % 4:
        raise ValueError(f"n_eval must be a positive multiple of 4, got {n_eval}")
    cells = [(yy, aa) for yy in (0, 1) for aa in (0, 1)]
    avail = {c: int(((y == c[0]) & (a == c[1])).sum()) for c in cells}
    per_eval = n_eval // 4
    share = {c: agreement / 2 if c[0] == c[1] else (1 - agreement) / 2 for c in cells}
    if n_train is None:
        caps = [(avail[c] - 2 * per_eval) / share[c] for c in cells if share[c] > 0]
        n_train = int(min(caps)) // 2 * 2 if caps else 0
    if n_train < 2 or n_train % 2:
        raise ValueError(f"n_train must be an even number >= 2, got {n_train} (cells available: {avail})")
    agree = int(round(agreement * n_train / 2))
    want = {c: agree if c[0] == c[1] else n_train // 2 - agree for c in cells}
    short = {f"y={c[0]},a={c[1]}": (avail[c], want[c] + 2 * per_eval) for c in cells
             if want[c] + 2 * per_eval > avail[c]}
    if short:
        raise ValueError(f"not enough rows for the controlled protocol (cell: available, needed): {short}")
    rng = np.random.default_rng(seed)
    out: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for c in cells:
        idx = rng.permutation(np.flatnonzero((y == c[0]) & (a == c[1])))
        out["val"].append(idx[:per_eval])
        out["test"].append(idx[per_eval:2 * per_eval])
        out["train"].append(idx[2 * per_eval:2 * per_eval + want[c]])
    rows = {k: np.sort(np.concatenate(v)) for k, v in out.items()}
    counts = {k: {f"y={c[0]},a={c[1]}": int(((y[r] == c[0]) & (a[r] == c[1])).sum()) for c in cells}
              for k, r in rows.items()}
    realised = float((y[rows["train"]] == a[rows["train"]]).mean())
    report = {"agreement": realised, "counts": counts,
              "available": {f"y={c[0]},a={c[1]}": avail[c] for c in cells}, "seed": seed}
    return rows, report


class _TokenEDA:
    """EDA over a padded id sequence: ids become pseudo-words ``t<id>``, get edited, and are padded back (left)."""

    def __init__(self, eda: Callable[[str], str]) -> None:
        self.eda = eda

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        words = [f"t{int(i)}" for i in ids.tolist() if i != 0]
        edited = self.eda(" ".join(words)).split() if words else []
        new = [int(w[1:]) for w in edited if w.startswith("t") and w[1:].isdigit()][-len(ids):] or [
            int(i) for i in ids.tolist() if i != 0][:1]
        out = torch.zeros_like(ids)
        if new:
            out[len(ids) - len(new):] = torch.tensor(new, dtype=ids.dtype)
        return out
