"""Shared base of the text DataModules (one module per source in this package).

The DataModules of the published fairness datasets and a generic CSV loader:

===================  ==========================================================  ==============================
DataModule           files (under ``data_dir``)                                   task / protected attribute
===================  ==========================================================  ==============================
``BiasInBios``       ``hard_text, profession, gender`` CSV(s) or pickles          profession / gender
``Moji``             DeepMoji features ``{train,dev,test}/{pos,neg}_{pos,neg}.npy``  sentiment / race (AAE vs SAE)
``Jigsaw``           Kaggle unintended-bias ``train.csv`` (or WILDS CivilComments)  toxicity ≥ 0.5 / identity
``HateSpeech``       Huang et al. (2020) ``<Language>_{train,valid,test}.tsv``    hate / gender, age, country, ethnicity
``JigsawTemplates``  Dixon et al. (2018) ``en_sentence_templates.csv``            toxicity / identity term (eval only)
``TextCSV``          any CSV/TSV with named text, label and attribute columns      configured
===================  ==========================================================  ==============================

Every text DataModule (:class:`TextDataModule`) offers three inputs for the encoders:

* ``representation="text"``: ``x`` is the raw string (a batch is a list of strings) for the ``hf`` encoder;
* ``representation="tokens"``: ``x`` is a ``[max_len]`` id tensor from a :class:`~faircl.data.vocab.WordVocab` built on
  the train split, for the ``bow`` / ``tokens`` encoders;
* ``features="frozen"``: ``x`` is the pooled feature vector of a frozen Hugging Face encoder (``encoder_dir``,
  ``pooling``), computed once and cached on disk (:mod:`faircl.data.feature_cache`); ``input_dim`` is then the hidden
  size and an ``mlp`` encoder trains on top (how MiniLM features run on a CPU).

``two_views=True`` adds ``x2`` made by :class:`faircl.data.augment.EDA`. With frozen features every training text
has ``frozen_views`` EDA copies, encoded once and cached like the originals; the two views of a row are two different
copies among the original and its EDA copies.

Error messages name the file, the column and the row; rows are counted from 0 over the data rows (header excluded).
"""

from __future__ import annotations

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from faircl.data.augment.text import EDA, WordNetUnavailableError
from faircl.data.base import FairDataModule, FairDataset
from faircl.data.feature_cache import FeatureCache
from faircl.data.io import require_path
from faircl.data.locations import default_data_dir, missing_data_dir
from faircl.data.vocab import WordVocab
from faircl.models.encoders import resolve_text_model_dir, sentence_layout

__all__ = ["REPRESENTATIONS", "FEATURES", "RawSplit", "TextDataModule", "make_eda"]

REPRESENTATIONS = ("text", "tokens")
FEATURES = ("none", "frozen")


# ============================================================================================ helpers
@dataclass
class RawSplit:
    """One split as loaded from disk: texts, label ids ``[N]``, attribute ids ``[N]`` (``-1`` unknown), source."""

    texts: list[str]
    y: np.ndarray
    a: np.ndarray
    source: str



def make_eda(p: float, seed: int, synonyms: bool = True) -> Callable[[str], str]:
    """The EDA augmenter of :mod:`faircl.data.augment` with every operation at rate ``p`` (one per call).

    ``synonyms=False`` keeps only random swap and deletion (for pseudo-words such as token ids). Without WordNet on
    disk, synonym replacement and insertion are switched off with a warning rather than failing.
    """
    if not synonyms:
        return EDA(p_swap=p, p_delete=p, p_synonym=0.0, p_insert=0.0, seed=seed)
    try:
        return EDA(p_swap=p, p_delete=p, p_synonym=p, p_insert=p, seed=seed)
    except WordNetUnavailableError as err:
        warnings.warn(f"EDA without synonym replacement/insertion: {err}", stacklevel=2)
        return EDA(p_swap=p, p_delete=p, p_synonym=0.0, p_insert=0.0, seed=seed)


def _unit_rows(table: np.ndarray) -> np.ndarray:
    """The rows of ``table`` scaled to unit L2 norm (an all-zero row stays zero), as float32."""
    t = np.asarray(table, dtype=np.float32)
    norms = np.linalg.norm(t, axis=1, keepdims=True)
    return t / np.where(norms > 0, norms, 1.0)


class _FeatureTable:
    """Row lookup in cached feature matrices: key ``i`` → original features, ``(k, i)`` → view ``k`` (picklable)."""

    def __init__(self, tables: Sequence[np.ndarray]) -> None:
        self.tables = list(tables)

    def __call__(self, key: Any) -> torch.Tensor:
        k, i = key if isinstance(key, tuple) else (0, key)
        return torch.tensor(np.asarray(self.tables[k][int(i)]), dtype=torch.float32)

    def batch(self, ids: np.ndarray) -> torch.Tensor:
        """The original features of rows ``ids`` as one ``float32 [B, D]`` tensor (one fancy-indexing read)."""
        return torch.tensor(np.asarray(self.tables[0][np.asarray(ids, dtype=np.int64)]), dtype=torch.float32)


class _PickView:
    """View transform for frozen features: row ``i`` → ``(k, i)``, ``k`` one of the row's ``num_views + 1`` cached
    copies (0 = the original text, 1… = its EDA copies).

    A dataset draws the two views of a row one after the other; the second draw for the same row never repeats the
    first, so a positive pair is always two different copies (an identical pair would teach a contrastive loss
    nothing, one time in ``num_views + 1``). Draws from torch's generator, which ``seed_everything`` and every
    DataLoader worker seed.
    """

    def __init__(self, num_views: int) -> None:
        self.num_views = num_views
        self._first: tuple[int, int] | None = None  # (row, copy) of a pair's first view, until its second is drawn

    def __call__(self, i: Any) -> tuple[int, int]:
        i = int(i)
        if self._first is not None and self._first[0] == i:  # the pair's second view: any other copy
            k = int(torch.randint(0, self.num_views, ()))
            k += int(k >= self._first[1])
            self._first = None
        else:
            k = int(torch.randint(0, self.num_views + 1, ()))
            self._first = (i, k)
        return k, i


class _LoadedNames:
    """``class_names`` / ``group_names`` that load the data on first access when the files define them."""

    @property
    def class_names(self) -> list[str]:
        if getattr(self, "_class_names_", None) is None:
            self._names_after_loading()
        return self._class_names_

    @class_names.setter
    def class_names(self, names: list[str]) -> None:
        self._class_names_ = list(names)

    @property
    def group_names(self) -> list[str]:
        if getattr(self, "_group_names_", None) is None:
            self._names_after_loading()
        return self._group_names_

    @group_names.setter
    def group_names(self, names: list[str]) -> None:
        self._group_names_ = list(names)

    def _names_after_loading(self) -> None:
        if getattr(self, "_loading_names", False):
            raise RuntimeError(f"{type(self).__name__} must set class_names and group_names while loading its files")
        self._loading_names = True
        try:
            self.splits  # noqa: B018
        finally:
            self._loading_names = False


# ============================================================================================ base
class TextDataModule(_LoadedNames, FairDataModule):
    """Base of the text DataModules: turns raw splits into raw strings, token ids or cached frozen features.

    Subclasses implement :meth:`load_raw` (``{"train"|"val"|"test": RawSplit}``) and set ``class_names`` and
    ``group_names`` there.

    Args:
        data_dir: folder (or file, where the subclass says so) of the data set.
        representation: ``text`` (raw strings, for ``hf``) or ``tokens`` (WordVocab ids, for ``bow`` / ``tokens``).
        features: ``none`` or ``frozen`` (cached features of a frozen Hugging Face encoder; overrides
            ``representation``).
        encoder_dir: local model directory of the frozen encoder (``None`` = the packaged all-MiniLM-L6-v2).
        pooling: ``mean`` | ``cls`` pooling of the frozen encoder.
        max_length: tokenizer truncation length of the frozen encoder.
        max_len: ids per text with ``representation="tokens"``.
        min_count: words seen fewer times in train map to the unknown id.
        max_vocab: keep at most this many words (most frequent first).
        eda_p: EDA edit rate of the second view (``two_views=True``).
        frozen_views: with ``features="frozen"`` and ``two_views=True``, how many EDA copies of every training text
            are encoded (once, cached) to draw views from.
        cache_dir: feature cache directory (default ``$FAIRCL_CACHE/features`` or ``~/.cache/faircl/features``).
        feature_batch_size: texts per encoder call while caching.
        feature_bf16: encode under bfloat16 autocast.
        feature_device: device of the frozen encoder while caching.
        feature_normalize: L2-normalise the frozen features; ``None`` (default): as the encoder directory says (a
            sentence-transformers ``Normalize`` module, as all-MiniLM-L6-v2 has). The cache keeps the raw vectors.
        **kwargs: :class:`~faircl.data.base.FairDataModule` arguments (batch size, sampler, two_views, seed...).
    """

    _abstract = True  # a shared base (subclasses implement its hook): not selectable with --data
    #: folder under ``$FAIRCL_DATA`` used when ``data_dir`` is not given (``None``: ``data_dir`` is required)
    data_folder: str | None = None

    def __init__(
        self,
        data_dir: str | None = None,
        representation: str = "tokens",
        features: str = "none",
        encoder_dir: str | None = None,
        pooling: str = "mean",
        max_length: int = 128,
        max_len: int = 64,
        min_count: int = 1,
        max_vocab: int | None = None,
        eda_p: float = 0.1,
        frozen_views: int = 4,
        cache_dir: str | None = None,
        feature_batch_size: int = 64,
        feature_bf16: bool = False,
        feature_device: str = "cpu",
        feature_normalize: bool | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if representation not in REPRESENTATIONS:
            raise ValueError(f"representation={representation!r} must be one of {REPRESENTATIONS}")
        if features not in FEATURES:
            raise ValueError(f"features={features!r} must be one of {FEATURES}")
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling={pooling!r} must be 'mean' or 'cls'")
        if frozen_views < 1:
            raise ValueError(f"frozen_views must be >= 1, got {frozen_views}")
        self.data_dir = default_data_dir(data_dir, self.data_folder)
        self.representation, self.features = representation, features
        self.encoder_dir, self.pooling, self.max_length = encoder_dir, pooling, max_length
        self.max_len, self.min_count, self.max_vocab = max_len, min_count, max_vocab
        self.eda_p, self.frozen_views = eda_p, frozen_views
        self.cache_dir, self.feature_batch_size = cache_dir, feature_batch_size
        self.feature_bf16, self.feature_device = feature_bf16, feature_device
        self.feature_normalize = feature_normalize
        self.vocab = None
        self.feature_cache = None
        self._feature_dim = 0

    # ------------------------------------------------------------------ subclass API
    def load_raw(self) -> dict[str, RawSplit]:
        """Read the files: ``{"train", "val", "test"} → RawSplit`` (override; set class/group names)."""
        raise NotImplementedError(f"{type(self).__name__} must implement load_raw()")

    def require_data_dir(self, hint: str = "") -> Path:
        """``data_dir`` as a Path, or a clear error when it was not given or does not exist."""
        name = type(self).__name__
        if self.data_dir is None:
            raise ValueError(f"{missing_data_dir(name, self.data_folder)}. {hint}".strip())
        return require_path(self.data_dir, f"{name} data_dir", hint)

    # ------------------------------------------------------------------ building
    @property
    def input_dim(self) -> int:
        if self.features == "frozen":
            self.splits  # noqa: B018 - the dimension is known once features are loaded
            return self._feature_dim
        if self.representation == "tokens":
            self.splits  # noqa: B018
            return len(self.vocab)
        return 0

    @property
    def input_kind(self) -> str:
        """``features`` with frozen features, else the representation (``tokens`` or ``text``)."""
        return "features" if self.features == "frozen" else self.representation

    def load_splits(self) -> dict[str, FairDataset]:
        raw = self.load_raw()
        nc, ng = len(self.class_names), len(self.group_names)
        name = type(self).__name__

        def dataset(split: str, x: Any, transform: Callable | None) -> FairDataset:
            r = raw[split]
            return FairDataset(x, r.y, r.a, num_classes=nc, num_groups=ng, transform=transform, source=r.source)

        if self.features == "frozen":
            self.feature_cache = cache = FeatureCache(self.cache_dir, batch_size=self.feature_batch_size,
                                                      bf16=self.feature_bf16, device=self.feature_device)
            out = {}
            for split, r in raw.items():
                tables = [cache.features(r.texts, self.encoder_dir, self.pooling, self.max_length,
                                         name=f"{name}[{split}]")]
                if split == "train" and self.two_views:
                    for k in range(1, self.frozen_views + 1):
                        # a seeded augmenter makes the same views (hence the same cache key) on every run
                        eda = make_eda(self.eda_p, self.seed * 1000 + k)
                        views = [eda(t) for t in r.texts]
                        tables.append(cache.features(views, self.encoder_dir, self.pooling, self.max_length,
                                                     name=f"{name}[{split}] EDA view {k}"))
                if self.normalizes_features():
                    tables = [_unit_rows(t) for t in tables]
                self._feature_dim = int(tables[0].shape[1])
                out[split] = dataset(split, np.arange(len(r.texts)), _FeatureTable(tables))
            return out
        if self.representation == "tokens":
            self.vocab = WordVocab(raw["train"].texts, max_len=self.max_len, min_count=self.min_count,
                                   max_size=self.max_vocab)
            return {split: dataset(split, r.texts, self.vocab) for split, r in raw.items()}
        return {split: dataset(split, r.texts, None) for split, r in raw.items()}

    def normalizes_features(self) -> bool:
        """Whether the frozen features are L2-normalised (``feature_normalize``, else the encoder directory's
        sentence-transformers layout)."""
        if self.feature_normalize is not None:
            return bool(self.feature_normalize)
        return sentence_layout(resolve_text_model_dir(self.encoder_dir))[1]

    def view_transform(self) -> Callable:
        if self.features == "frozen":
            return _PickView(self.frozen_views)
        return make_eda(self.eda_p, self.seed)


