"""Text DataModules for the published fairness datasets and a generic CSV loader.

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

``two_views=True`` adds ``x2`` made by :class:`faircl.data.augment.EDA`. With frozen features the views are
``frozen_views`` EDA copies of every training text, encoded once and cached like the originals; each draw picks one.

Error messages name the file, the column and the row; rows are counted from 0 over the data rows (header excluded).
"""

from __future__ import annotations

import fnmatch
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from faircl.data.base import DataError, FairDataModule, FairDataset, encode_groups

REPRESENTATIONS = ("text", "tokens")
FEATURES = ("none", "frozen")
UNKNOWN = ("x", "", "nan", "none", "unknown", "-1", "na", "n/a")


# ============================================================================================ helpers
@dataclass
class RawSplit:
    """One split as loaded from disk: texts, label ids ``[N]``, attribute ids ``[N]`` (``-1`` unknown), source."""

    texts: list[str]
    y: np.ndarray
    a: np.ndarray
    source: str


def _where(path: Any, column: str | None = None, row: int | None = None) -> str:
    parts = [f"file {str(path)!r}"]
    if column is not None:
        parts.append(f"column {column!r}")
    if row is not None:
        parts.append(f"row {row}")
    return ", ".join(parts)


def require_path(path: Path, what: str, hint: str = "") -> Path:
    """``path`` if it exists, else a :class:`FileNotFoundError` saying what was expected there."""
    if not path.exists():
        raise FileNotFoundError(f"{what} not found: {str(path)!r}." + (f" {hint}" if hint else ""))
    return path


def read_table(path: Path, sep: str | None = None, quotes: bool = True) -> Any:
    """A CSV / TSV / pickle / parquet / JSON-lines file as a pandas DataFrame (CSV cells kept as strings).

    ``quotes=False`` reads every field verbatim (no quote processing), for TSV files whose texts hold stray quotes.
    """
    import pandas as pd

    suffix = path.suffix.lower()
    try:
        if suffix in (".pkl", ".pickle"):
            obj = pd.read_pickle(path)
            return obj if isinstance(obj, pd.DataFrame) else pd.DataFrame(list(obj))
        if suffix == ".parquet":
            return pd.read_parquet(path)
        if suffix in (".jsonl", ".json"):
            return pd.read_json(path, lines=suffix == ".jsonl")
        if sep is None:
            sep = "\t" if suffix == ".tsv" else ","
        return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, quoting=0 if quotes else 3)
    except (ValueError, TypeError, KeyError, OSError, EOFError, ImportError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise DataError(f"cannot read {_where(path)}: {err}") from err


def require_columns(df: Any, columns: Sequence[str], path: Path) -> None:
    """Raise :class:`DataError` naming the file and the first missing column."""
    for c in columns:
        if c not in df.columns:
            raise DataError(f"{_where(path, c)}: column missing; the file has columns {list(df.columns)}")


def is_unknown(value: Any, unknown: Sequence[str] = UNKNOWN) -> bool:
    """Missing / NaN / one of the ``unknown`` spellings (case-insensitive)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    return str(value).strip().lower() in {u.lower() for u in unknown}


def texts_of(df: Any, column: str, path: Path) -> list[str]:
    """The text column as strings; a missing or empty text raises :class:`DataError` naming the row."""
    out = []
    for r, v in enumerate(df[column].tolist()):
        if v is None or (isinstance(v, float) and math.isnan(v)) or not str(v).strip():
            raise DataError(f"{_where(path, column, r)}: empty text")
        out.append(str(v))
    return out


def float_column(df: Any, column: str, path: Path, low: float = -math.inf, high: float = math.inf,
                 allow_missing: bool = False) -> np.ndarray:
    """A numeric column (NaN where missing when ``allow_missing``); bad values raise :class:`DataError`."""
    out = np.empty(len(df), dtype=np.float64)
    for r, v in enumerate(df[column].tolist()):
        if is_unknown(v, ("", "nan", "none", "na")):
            if not allow_missing:
                raise DataError(f"{_where(path, column, r)}: missing value")
            out[r] = np.nan
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise DataError(f"{_where(path, column, r)}: {v!r} is not a number") from None
        if not low <= f <= high:
            raise DataError(f"{_where(path, column, r)}: {f} outside [{low}, {high}]")
        out[r] = f
    return out


def stratified_split(y: np.ndarray, a: np.ndarray, val_fraction: float, test_fraction: float,
                     seed: int) -> dict[str, np.ndarray]:
    """Seeded split of row indices, stratified by (label, attribute) cell.

    Every cell of ``n`` rows gives ``round(n·test_fraction)`` rows to test and ``round(n·val_fraction)`` to val (never
    taking the last row of a cell away from train); the rest goes to train. Indices are sorted within each split.
    """
    if not (0 <= val_fraction < 1 and 0 <= test_fraction < 1 and val_fraction + test_fraction < 1):
        raise ValueError(f"val_fraction={val_fraction} and test_fraction={test_fraction} must be in [0, 1) with "
                         "a sum below 1")
    rng = np.random.default_rng(seed)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    cells = np.stack([y, a], 1)
    for cell in np.unique(cells, axis=0):
        rows = np.flatnonzero((cells == cell).all(1))
        rows = rows[rng.permutation(len(rows))]
        n = len(rows)
        n_test = min(int(round(n * test_fraction)), max(n - 1, 0))
        n_val = min(int(round(n * val_fraction)), max(n - 1 - n_test, 0))
        parts["test"].append(rows[:n_test])
        parts["val"].append(rows[n_test:n_test + n_val])
        parts["train"].append(rows[n_test + n_val:])
    return {k: np.sort(np.concatenate(v)) if v else np.zeros(0, dtype=np.int64) for k, v in parts.items()}


def make_eda(p: float, seed: int, synonyms: bool = True) -> Callable[[str], str]:
    """The EDA augmenter of :mod:`faircl.data.augment` with every operation at rate ``p`` (one per call).

    ``synonyms=False`` keeps only random swap and deletion (for pseudo-words such as token ids). Without WordNet on
    disk, synonym replacement and insertion are switched off with a warning rather than failing.
    """
    from faircl.data.augment import EDA, WordNetUnavailableError

    if not synonyms:
        return EDA(p_swap=p, p_delete=p, p_synonym=0.0, p_insert=0.0, seed=seed)
    try:
        return EDA(p_swap=p, p_delete=p, p_synonym=p, p_insert=p, seed=seed)
    except WordNetUnavailableError as err:
        warnings.warn(f"EDA without synonym replacement/insertion: {err}", stacklevel=2)
        return EDA(p_swap=p, p_delete=p, p_synonym=0.0, p_insert=0.0, seed=seed)


class _FeatureTable:
    """Row lookup in cached feature matrices: key ``i`` → original features, ``(k, i)`` → view ``k`` (picklable)."""

    def __init__(self, tables: Sequence[np.ndarray]) -> None:
        self.tables = list(tables)

    def __call__(self, key: Any) -> torch.Tensor:
        k, i = key if isinstance(key, tuple) else (0, key)
        return torch.tensor(np.asarray(self.tables[k][int(i)]), dtype=torch.float32)


class _PickView:
    """View transform for frozen features: row ``i`` → ``(k, i)`` with ``k`` one of the cached EDA views.

    Draws from torch's generator, which ``seed_everything`` and every DataLoader worker seed.
    """

    def __init__(self, num_views: int) -> None:
        self.num_views = num_views

    def __call__(self, i: Any) -> tuple[int, int]:
        return int(torch.randint(1, self.num_views + 1, ())), int(i)


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
        **kwargs: :class:`~faircl.data.base.FairDataModule` arguments (batch size, sampler, two_views, seed...).
    """

    _abstract = True  # a shared base (subclasses implement its hook): not selectable with --data

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
        self.data_dir = Path(data_dir).expanduser() if data_dir is not None else None
        self.representation, self.features = representation, features
        self.encoder_dir, self.pooling, self.max_length = encoder_dir, pooling, max_length
        self.max_len, self.min_count, self.max_vocab = max_len, min_count, max_vocab
        self.eda_p, self.frozen_views = eda_p, frozen_views
        self.cache_dir, self.feature_batch_size = cache_dir, feature_batch_size
        self.feature_bf16, self.feature_device = feature_bf16, feature_device
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
            raise ValueError(f"{name} needs data_dir (the folder holding its files). {hint}".strip())
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

    def load_splits(self) -> dict[str, FairDataset]:
        raw = self.load_raw()
        nc, ng = len(self.class_names), len(self.group_names)
        name = type(self).__name__

        def dataset(split: str, x: Any, transform: Callable | None) -> FairDataset:
            r = raw[split]
            return FairDataset(x, r.y, r.a, num_classes=nc, num_groups=ng, transform=transform, source=r.source)

        if self.features == "frozen":
            from faircl.data.feature_cache import FeatureCache

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
                self._feature_dim = int(tables[0].shape[1])
                out[split] = dataset(split, np.arange(len(r.texts)), _FeatureTable(tables))
            return out
        if self.representation == "tokens":
            from faircl.data.vocab import WordVocab

            self.vocab = WordVocab(raw["train"].texts, max_len=self.max_len, min_count=self.min_count,
                                   max_size=self.max_vocab)
            return {split: dataset(split, r.texts, self.vocab) for split, r in raw.items()}
        return {split: dataset(split, r.texts, None) for split, r in raw.items()}

    def view_transform(self) -> Callable:
        if self.features == "frozen":
            return _PickView(self.frozen_views)
        return make_eda(self.eda_p, self.seed)


# ============================================================================================ Bias in Bios
#: LabHC/bias_in_bios integer profession codes (alphabetical order)
BIOS_PROFESSIONS = [
    "accountant", "architect", "attorney", "chiropractor", "comedian", "composer", "dentist", "dietitian", "dj",
    "filmmaker", "interior_designer", "journalist", "model", "nurse", "painter", "paralegal", "pastor",
    "personal_trainer", "photographer", "physician", "poet", "professor", "psychologist", "rapper",
    "software_engineer", "surgeon", "teacher", "yoga_teacher",
]
_GENDER = {"m": 0, "male": 0, "0": 0, "f": 1, "female": 1, "1": 1}
_SPLIT_ALIASES = {"train": ("train",), "val": ("dev", "val", "valid", "validation"), "test": ("test",)}
_TABLE_SUFFIXES = (".pickle", ".pkl", ".csv", ".tsv", ".parquet", ".jsonl")


def _find_split_files(folder: Path) -> dict[str, Path] | None:
    """``train / dev|val|valid / test`` files of one folder (any table format), or None when there are none."""
    found: dict[str, Path] = {}
    for split, names in _SPLIT_ALIASES.items():
        for stem in names:
            for suffix in _TABLE_SUFFIXES:
                if (folder / f"{stem}{suffix}").is_file() and split not in found:
                    found[split] = folder / f"{stem}{suffix}"
    if not found:
        return None
    missing = [s for s in _SPLIT_ALIASES if s not in found]
    if missing:
        raise FileNotFoundError(f"{str(folder)!r} has split files {sorted(found)} but no {missing} file "
                                f"(expected e.g. train.pickle, dev.pickle, test.pickle)")
    return found


class BiasInBios(TextDataModule):
    """Bias in Bios (De-Arteaga et al., 2019): predict the profession from a biography; protected attribute gender.

    Accepted layouts of ``data_dir``:

    * a folder with ``train``, ``dev`` (or ``val``/``valid``) and ``test`` files (``.pickle``/``.pkl`` as in
      Ravfogel et al. 2020, ``.csv``, ``.parquet`` or ``.jsonl``): the published splits are used;
    * a folder of CSV files (``files`` glob, minus ``exclude``), e.g. one per profession as in the shared samples;
    * a single file: a pickled ``{"train", "dev", "test"}`` dict of tables, a table with a ``split`` column
      (``train``/``dev``/``test``), or a plain table.

    Without published splits, seeded splits stratified by (profession, gender) are made (``val_fraction``,
    ``test_fraction``). Columns: text ``hard_text`` (``text_column``), profession ``profession`` (or ``p``; names or
    LabHC integer codes in :data:`BIOS_PROFESSIONS` order), gender ``gender`` (or ``g``; ``M/F``, ``Male/Female`` or
    LabHC's ``0`` = male, ``1`` = female). Groups: ``male`` = 0, ``female`` = 1.

    The shared samples folder also holds ``accountant_complete.csv`` (1,000 accountant bios): it is excluded by default
    so the 28 professions keep 10 bios each; pass ``exclude=[]`` or point ``data_dir`` at that file to use it.

    Args:
        data_dir: folder or file (see above).
        files: glob of the CSV files in a folder without split files.
        exclude: globs of files to leave out.
        professions: keep only these professions, in this class order (default: every profession seen, sorted).
        text_column: the biography column.
        val_fraction / test_fraction: shares of the seeded stratified split (when there are no split files).
        dedupe: drop repeated biographies (the first copy is kept) before splitting.
    """

    def __init__(
        self,
        data_dir: str | None = None,
        files: str = "*.csv",
        exclude: list[str] | None = None,
        professions: list[str] | None = None,
        text_column: str = "hard_text",
        val_fraction: float = 0.1,
        test_fraction: float = 0.2,
        dedupe: bool = True,
        **kwargs,
    ) -> None:
        super().__init__(data_dir=data_dir, **kwargs)
        self.files, self.exclude = files, ["*_complete.csv"] if exclude is None else list(exclude)
        self.professions, self.text_column = professions, text_column
        self.val_fraction, self.test_fraction, self.dedupe = val_fraction, test_fraction, dedupe
        self.group_names = ["male", "female"]

    @staticmethod
    def _split_tables(path: Path) -> dict[str, Any] | None:
        """The splits held by one file: a pickled ``{"train", "dev"|"val", "test"}`` dict, or a ``split`` column."""
        import pandas as pd

        if path.suffix.lower() in (".pkl", ".pickle"):
            obj = pd.read_pickle(path)
            if isinstance(obj, dict):
                tables = {}
                for split, names in _SPLIT_ALIASES.items():
                    key = next((k for k in names if k in obj), None)
                    if key is None:
                        raise DataError(f"{_where(path)}: the pickled dict has keys {sorted(obj)}, expected train, "
                                        "dev (or val) and test")
                    t = obj[key]
                    tables[split] = t if isinstance(t, pd.DataFrame) else pd.DataFrame(list(t))
                return tables
            return None
        df = read_table(path)
        if "split" not in df.columns:
            return None
        alias = {name: split for split, names in _SPLIT_ALIASES.items() for name in names}
        values = [str(v).strip().lower() for v in df["split"].tolist()]
        for r, v in enumerate(values):
            if v not in alias:
                raise DataError(f"{_where(path, 'split', r)}: split {v!r} is not one of {sorted(alias)}")
        return {s: df[[alias[v] == s for v in values]].reset_index(drop=True) for s in _SPLIT_ALIASES}

    def _parse(self, path: Path, df: Any = None) -> tuple[list[str], list[str], np.ndarray]:
        if df is None:
            df = read_table(path)
        label_col = "profession" if "profession" in df.columns else "p" if "p" in df.columns else "profession"
        gender_col = "gender" if "gender" in df.columns else "g" if "g" in df.columns else "gender"
        require_columns(df, [self.text_column, label_col, gender_col], path)
        texts = texts_of(df, self.text_column, path)
        profs = []
        for r, v in enumerate(df[label_col].tolist()):
            s = str(v).strip()
            if s.lstrip("-").isdigit():
                code = int(s)
                if not 0 <= code < len(BIOS_PROFESSIONS):
                    raise DataError(f"{_where(path, label_col, r)}: profession code {code} outside "
                                    f"[0, {len(BIOS_PROFESSIONS)})")
                s = BIOS_PROFESSIONS[code]
            if not s or s.lower() == "nan":
                raise DataError(f"{_where(path, label_col, r)}: missing profession")
            profs.append(s)
        genders = np.empty(len(df), dtype=np.int64)
        for r, v in enumerate(df[gender_col].tolist()):
            g = _GENDER.get(str(v).strip().lower())
            if g is None:
                raise DataError(f"{_where(path, gender_col, r)}: gender {v!r} is not one of M/F, Male/Female, 0/1")
            genders[r] = g
        return texts, profs, genders

    def load_raw(self) -> dict[str, RawSplit]:
        root = self.require_data_dir("Point it at a folder of Bias in Bios CSV/pickle files or at one such file.")
        split_files = _find_split_files(root) if root.is_dir() else None
        tables = self._split_tables(root) if root.is_file() else None
        if split_files is not None:
            parsed = {s: self._parse(p) for s, p in split_files.items()}
            sources = {s: str(p) for s, p in split_files.items()}
        elif tables is not None:
            # row numbers in messages count within each split of the file
            parsed = {s: self._parse(root, df) for s, df in tables.items()}
            sources = {s: f"{root} [{s}]" for s in tables}
        else:
            if root.is_dir():
                paths = sorted(p for p in root.glob(self.files)
                               if p.is_file() and not any(fnmatch.fnmatch(p.name, e) for e in self.exclude))
                if not paths:
                    raise FileNotFoundError(f"no Bias in Bios files matching {self.files!r} in {str(root)!r} "
                                            f"(excluding {self.exclude})")
            else:
                paths = [root]
            texts, profs, genders = [], [], []
            for p in paths:
                t, pr, g = self._parse(p)
                texts += t
                profs += pr
                genders.append(g)
            gender = np.concatenate(genders)
            if self.dedupe:
                first = {}
                for i, t in enumerate(texts):
                    first.setdefault(t, i)
                keep = sorted(first.values())
                texts, profs, gender = [texts[i] for i in keep], [profs[i] for i in keep], gender[keep]
            names = sorted(set(profs))
            codes = np.array([names.index(p) for p in profs])
            parts = stratified_split(codes, gender, self.val_fraction, self.test_fraction, self.seed)
            parsed = {s: ([texts[i] for i in idx], [profs[i] for i in idx], gender[idx]) for s, idx in parts.items()}
            label = str(root) if len(paths) == 1 else f"{root}/{self.files}"
            sources = {s: f"{label} [{s} split]" for s in parts}
        seen_profs = sorted({p for _, profs, _ in parsed.values() for p in profs})
        self.class_names = list(self.professions) if self.professions is not None else seen_profs
        index = {p: i for i, p in enumerate(self.class_names)}
        out = {}
        for split, (texts, profs, gender) in parsed.items():
            keep = [i for i, p in enumerate(profs) if p in index]
            out[split] = RawSplit([texts[i] for i in keep], np.array([index[profs[i]] for i in keep], dtype=np.int64),
                                  gender[keep], sources[split])
        return out


# ============================================================================================ Moji
_MOJI_FILES = {  # file: (sentiment y: 1 = happy, race a: 1 = AAE)
    "pos_pos": (1, 1), "pos_neg": (1, 0), "neg_pos": (0, 1), "neg_neg": (0, 0),
}


class Moji(FairDataModule):
    """Moji (Blodgett et al. 2016; Elazar & Goldberg 2018): tweet sentiment with the author's dialect (race proxy).

    ``data_dir`` holds ``train/``, ``dev/`` and ``test/``, each with the DeepMoji feature files ``pos_pos.npy``
    (happy, AAE), ``pos_neg.npy`` (happy, SAE), ``neg_pos.npy`` (sad, AAE) and ``neg_neg.npy`` (sad, SAE), each a
    float array ``[n, 2304]``. Labels: ``sad`` = 0, ``happy`` = 1; groups: ``SAE`` = 0, ``AAE`` = 1.

    The training set is subsampled to the stereotyping ``ratio`` of Elazar & Goldberg / Shen et al.: sentiment and race
    each balanced, with ``ratio`` of the happy tweets AAE and ``ratio`` of the sad tweets SAE (0.8 gives 40% happy-AAE,
    10% happy-SAE, 10% sad-AAE, 40% sad-SAE). As in fairlib, the first rows of each file are taken. ``n_train`` rows
    are drawn (100k in the papers); when a file is too short the total shrinks so that the ratio holds exactly. Dev
    and test are used whole (they are balanced).

    Args:
        data_dir: the folder above ``train/``, ``dev/``, ``test/``.
        ratio: stereotyping ratio of the training set (0.5 = no correlation).
        n_train: training rows (``None`` = as many as the files allow at this ratio).
        view_noise: std of the Gaussian feature noise making the second view (``two_views=True``).
    """

    def __init__(self, data_dir: str | None = None, ratio: float = 0.8, n_train: int | None = 100_000,
                 view_noise: float = 0.05, **kwargs) -> None:
        super().__init__(**kwargs)
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(f"ratio must be in [0, 1], got {ratio}")
        if n_train is not None and n_train < 4:
            raise ValueError(f"n_train must be >= 4 or None, got {n_train}")
        self.data_dir = Path(data_dir).expanduser() if data_dir is not None else None
        self.ratio, self.n_train, self.view_noise = ratio, n_train, view_noise
        self.class_names = ["sad", "happy"]
        self.group_names = ["SAE", "AAE"]
        self._dim = 0

    @property
    def input_dim(self) -> int:
        self.splits  # noqa: B018
        return self._dim

    def _load(self, folder: Path) -> dict[str, np.ndarray]:
        arrays = {}
        for stem in _MOJI_FILES:
            path = require_path(folder / f"{stem}.npy", "Moji feature file",
                                "Expected DeepMoji features {train,dev,test}/{pos_pos,pos_neg,neg_pos,neg_neg}.npy.")
            try:
                arr = np.load(path, mmap_mode="r", allow_pickle=False)
            except ValueError as err:
                raise DataError(f"cannot read {_where(path)} as a numeric .npy array: {err}") from err
            if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.number):
                raise DataError(f"{_where(path)}: expected a numeric [rows, features] array, got shape {arr.shape} "
                                f"dtype {arr.dtype}")
            bad = np.flatnonzero(~np.isfinite(np.asarray(arr, dtype=np.float64)).all(1))
            if len(bad):
                col = int(np.flatnonzero(~np.isfinite(np.asarray(arr[bad[0]], dtype=np.float64)))[0])
                raise DataError(f"{_where(path, f'feature {col}', int(bad[0]))}: non-finite value "
                                f"({len(bad)} bad row(s))")
            arrays[stem] = arr
        dims = {s: a.shape[1] for s, a in arrays.items()}
        if len(set(dims.values())) != 1:
            raise DataError(f"Moji files in {str(folder)!r} have different feature sizes {dims}")
        return arrays

    def load_splits(self) -> dict[str, FairDataset]:
        if self.data_dir is None:
            raise ValueError("Moji needs data_dir (the folder holding train/, dev/ and test/ with the DeepMoji .npy "
                             "files)")
        root = require_path(self.data_dir, "Moji data_dir")
        out = {}
        for split, folder in (("train", "train"), ("val", "dev"), ("test", "test")):
            arrays = self._load(require_path(root / folder, f"Moji {folder}/ folder"))
            if split == "train":
                share = {s: 0.5 * (self.ratio if y == a else 1 - self.ratio) for s, (y, a) in _MOJI_FILES.items()}
                cap = min(len(arrays[s]) / share[s] for s in share if share[s] > 0)
                total = cap if self.n_train is None else min(self.n_train, cap)
                take = {s: min(int(round(total * share[s])), len(arrays[s])) for s in share}
            else:
                take = {s: len(arrays[s]) for s in arrays}
            xs, ys, as_ = [], [], []
            for stem, (y, a) in _MOJI_FILES.items():
                n = take[stem]
                xs.append(np.asarray(arrays[stem][:n], dtype=np.float32))
                ys.append(np.full(n, y))
                as_.append(np.full(n, a))
            self._dim = int(xs[0].shape[1])
            out[split] = FairDataset(torch.from_numpy(np.concatenate(xs)), np.concatenate(ys), np.concatenate(as_),
                                     num_classes=2, num_groups=2, source=str(root / folder))
        return out

    def view_transform(self) -> Callable:
        from faircl.data.augment import FeatureNoise

        return FeatureNoise(std=self.view_noise, seed=self.seed)


# ============================================================================================ Jigsaw
class Jigsaw(TextDataModule):
    """Jigsaw Unintended Bias in Toxicity Classification (Kaggle ``train.csv``; also WILDS CivilComments).

    Task: ``target`` (Kaggle) or ``toxicity`` (WILDS) ``≥ threshold`` → toxic. Protected attribute: the identity
    columns (``black``, ``white``, ``female``...) binarised at ``identity_threshold``; one column gives the groups
    ``non-<col>`` / ``<col>`` (Chi et al.: black vs non-black), several give their intersections
    (``non-black|white``). Rows whose identity columns were not annotated (empty) are dropped when
    ``drop_unannotated`` (the papers keep only annotated rows), else get attribute ``-1``. A ``split`` column
    (``train``/``val``/``test``, WILDS) is used when present, otherwise seeded stratified splits are made.

    Args:
        data_dir: folder holding ``file`` (or the CSV file itself).
        file: the CSV name.
        identity_columns: one or several identity columns.
        threshold: toxicity threshold of the label.
        identity_threshold: threshold making an identity column binary.
        drop_unannotated: drop rows with an empty identity column.
        val_fraction / test_fraction: shares of the seeded stratified split (without a ``split`` column).
        max_rows: read only the first rows of the file (quick experiments).
    """

    def __init__(
        self,
        data_dir: str | None = None,
        file: str = "train.csv",
        identity_columns: str | list[str] = "black",
        threshold: float = 0.5,
        identity_threshold: float = 0.5,
        drop_unannotated: bool = True,
        val_fraction: float = 0.1,
        test_fraction: float = 0.2,
        max_rows: int | None = None,
        **kwargs,
    ) -> None:
        super().__init__(data_dir=data_dir, **kwargs)
        self.file = file
        self.identity_columns = [identity_columns] if isinstance(identity_columns, str) else list(identity_columns)
        if not self.identity_columns:
            raise ValueError("identity_columns must name at least one column")
        self.threshold, self.identity_threshold = threshold, identity_threshold
        self.drop_unannotated = drop_unannotated
        self.val_fraction, self.test_fraction, self.max_rows = val_fraction, test_fraction, max_rows
        self.class_names = ["non-toxic", "toxic"]

    def load_raw(self) -> dict[str, RawSplit]:
        import pandas as pd

        root = self.require_data_dir("Download train.csv of the Kaggle 'Jigsaw Unintended Bias in Toxicity "
                                     "Classification' competition.")
        path = root / self.file if root.is_dir() else root
        require_path(path, "Jigsaw CSV", "Expected the Kaggle train.csv (comment_text, target, identity columns).")
        try:
            header = pd.read_csv(path, nrows=0)
            label_col = "target" if "target" in header.columns else "toxicity"
            require_columns(header, ["comment_text", label_col, *self.identity_columns], path)
            # the Kaggle file has ~45 columns and 1.8M rows: read only the ones used
            wanted = {"comment_text", label_col, "split", *self.identity_columns}
            df = pd.read_csv(path, dtype=str, keep_default_na=False, nrows=self.max_rows,
                             usecols=lambda c: c in wanted)
        except (ValueError, pd.errors.ParserError) as err:
            raise DataError(f"cannot read {_where(path)}: {err}") from err
        tox = float_column(df, label_col, path, 0.0, 1.0)
        ident = np.stack([float_column(df, c, path, 0.0, 1.0, allow_missing=True) for c in self.identity_columns], 1)
        annotated = ~np.isnan(ident).any(1)
        keep = np.flatnonzero(annotated) if self.drop_unannotated else np.arange(len(df))
        texts_all = df["comment_text"].tolist()
        for r in keep:
            if not str(texts_all[r]).strip():
                raise DataError(f"{_where(path, 'comment_text', int(r))}: empty text")
        cols = []
        for j, c in enumerate(self.identity_columns):
            cols.append([("x" if np.isnan(v) else c if v >= self.identity_threshold else f"non-{c}")
                         for v in ident[keep, j]])
        cats = [[f"non-{c}", c] for c in self.identity_columns]
        a, self.group_names = encode_groups(cols, categories=cats, unknown=("x",))
        y = (tox[keep] >= self.threshold).astype(np.int64)
        texts = [str(texts_all[r]) for r in keep]
        if "split" in df.columns:
            split_col = np.array([str(s).strip().lower() for s in df["split"].tolist()])[keep]
            alias = {"train": "train", "val": "val", "valid": "val", "validation": "val", "dev": "val",
                     "test": "test"}
            bad = [i for i, s in enumerate(split_col) if s not in alias]
            if bad:
                raise DataError(f"{_where(path, 'split', int(keep[bad[0]]))}: split {split_col[bad[0]]!r} is not "
                                f"one of {sorted(alias)}")
            parts = {s: np.flatnonzero([alias[v] == s for v in split_col]) for s in ("train", "val", "test")}
        else:
            parts = stratified_split(y, a, self.val_fraction, self.test_fraction, self.seed)
        return {s: RawSplit([texts[i] for i in idx], y[idx], a[idx], f"{path} [{s} split]") for s, idx in parts.items()}


# ============================================================================================ HateSpeech
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
    * ``auto`` (default): ``standard`` when the train file exists, else ``valid_as_train`` (the choice is printed).

    Args:
        data_dir: the folder of the TSV files.
        language: ``English``, ``Italian``, ``Polish``, ``Portuguese`` or ``Spanish`` (file name prefix).
        attribute: one of :data:`HATE_ATTRIBUTES` or a list of them (intersectional groups such as
            ``gender=0|age=1``; a row unknown in any of them is unknown).
        split_protocol: ``auto`` | ``standard`` | ``valid_as_train``.
        val_fraction: share of ``valid`` held out as validation under ``valid_as_train``.
        vocab_size: embedding table size (default: largest id over all splits + 1); a larger id raises.
        drop_unknown: drop rows with an unknown attribute.
        eda_p: EDA edit rate on the id sequence for the second view (``two_views=True``).
    """

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
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.attributes = [attribute] if isinstance(attribute, str) else list(attribute)
        bad = [a for a in self.attributes if a not in HATE_ATTRIBUTES]
        if bad or not self.attributes:
            raise ValueError(f"attribute {bad or attribute!r} must be one or several of {HATE_ATTRIBUTES}")
        if split_protocol not in ("auto", "standard", "valid_as_train"):
            raise ValueError(f"split_protocol={split_protocol!r} must be 'auto', 'standard' or 'valid_as_train'")
        self.data_dir = Path(data_dir).expanduser() if data_dir is not None else None
        self.language, self.split_protocol, self.val_fraction = language, split_protocol, val_fraction
        self.vocab_size, self.drop_unknown, self.eda_p = vocab_size, drop_unknown, eda_p
        self.class_names = ["non-hate", "hate"]
        self.protocol: str | None = None
        self._vocab = 0

    @property
    def input_dim(self) -> int:
        self.splits  # noqa: B018
        return self._vocab

    def _read(self, path: Path) -> tuple[list[list[int]], np.ndarray, list[list[str]]]:
        df = read_table(path, sep="\t", quotes=False)
        require_columns(df, ["text", "label", *self.attributes], path)
        ids = []
        for r, v in enumerate(df["text"].tolist()):
            parts = str(v).split()
            if not parts or not all(p.isdigit() for p in parts):
                raise DataError(f"{_where(path, 'text', r)}: expected space-separated non-negative integer token ids, "
                                f"got {str(v)[:60]!r}")
            ids.append([int(p) for p in parts])
        y = np.empty(len(df), dtype=np.int64)
        for r, v in enumerate(df["label"].tolist()):
            if str(v).strip() not in ("0", "1"):
                raise DataError(f"{_where(path, 'label', r)}: label {v!r} is not 0 or 1")
            y[r] = int(str(v).strip())
        attrs = []
        for c in self.attributes:
            col = []
            for r, v in enumerate(df[c].tolist()):
                s = str(v).strip().lower()
                if s not in ("0", "1", "x"):
                    raise DataError(f"{_where(path, c, r)}: {c} {v!r} is not 0, 1 or x (unknown)")
                col.append("x" if s == "x" else f"{c}={s}")
            attrs.append(col)
        return ids, y, attrs

    def load_splits(self) -> dict[str, FairDataset]:
        if self.data_dir is None:
            raise ValueError("HateSpeech needs data_dir (the folder of <Language>_{train,valid,test}.tsv)")
        root = require_path(self.data_dir, "HateSpeech data_dir")
        files = {s: root / f"{self.language}_{s}.tsv" for s in ("train", "valid", "test")}
        protocol = self.split_protocol
        if protocol == "auto":
            protocol = "standard" if files["train"].is_file() else "valid_as_train"
            if protocol == "valid_as_train":
                print(f"HateSpeech: {files['train'].name} not found; training on {files['valid'].name} "
                      f"(minus {self.val_fraction:.0%} held out for validation), testing on {files['test'].name}")
        self.protocol = protocol
        need = ("train", "valid", "test") if protocol == "standard" else ("valid", "test")
        for s in need:
            require_path(files[s], f"HateSpeech {self.language} {s} file",
                         "" if s != "train" else "English has no train split: use split_protocol='valid_as_train'.")
        read = {s: self._read(files[s]) for s in need}
        if protocol == "standard":
            parts = {"train": ("train", None), "val": ("valid", None), "test": ("test", None)}
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
            src = str(files[file_key]) + ("" if file_key == split or split == "test" else f" [{split} part]")
            out[split] = FairDataset(x, y[rows], a[rows], num_classes=2, num_groups=len(self.group_names), source=src)
        return out

    def view_transform(self) -> Callable:
        return _TokenEDA(make_eda(self.eda_p, self.seed, synonyms=False))


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


# ============================================================================================ JigsawTemplates
class JigsawTemplates(TextDataModule):
    """Dixon et al. (2018) identity-term template sentences for evaluating unintended bias (evaluation only).

    ``file`` is ``en_sentence_templates.csv`` (``template, toxicity, phrase``: ``toxic``/``nontoxic``) or one of the
    Wikipedia Talk test sets ``toxicity_{fuzzed,nonfuzzed}_testset.csv`` (``rev_id, comment, toxic``:
    ``True``/``False``). The group is the identity term found in the sentence (longest whole-word match, case
    insensitive) from ``adjectives_people.txt``; ``group_by="category"`` groups terms by their ``words.csv`` subtype
    (sexuality, gender, ethnicity, religion, age, disability). Sentences without an identity term (the
    ``you_occupation`` templates) are dropped unless ``keep_unmatched`` (attribute ``-1``).

    The set is meant for testing a model trained elsewhere (e.g. on :class:`Jigsaw`). So that the Trainer and the
    leakage probes have train/val data, a seeded stratified ``probe_fraction`` of the rows forms the train split
    **and** the val split (the same rows); test holds the remaining rows.

    Args:
        data_dir: the ``jigsaw_sentence_templates`` folder.
        file: the sentence file.
        group_by: ``term`` or ``category``.
        terms: restrict to these identity terms (default: every term of ``adjectives_people.txt``).
        keep_unmatched: keep sentences without an identity term (attribute ``-1``).
        probe_fraction: share of rows in the train (= val) split.
    """

    def __init__(
        self,
        data_dir: str | None = None,
        file: str = "en_sentence_templates.csv",
        group_by: str = "term",
        terms: list[str] | None = None,
        keep_unmatched: bool = False,
        probe_fraction: float = 0.2,
        **kwargs,
    ) -> None:
        super().__init__(data_dir=data_dir, **kwargs)
        if group_by not in ("term", "category"):
            raise ValueError(f"group_by={group_by!r} must be 'term' or 'category'")
        if not 0.0 < probe_fraction < 1.0:
            raise ValueError(f"probe_fraction must be in (0, 1), got {probe_fraction}")
        self.file, self.group_by, self.terms = file, group_by, terms
        self.keep_unmatched, self.probe_fraction = keep_unmatched, probe_fraction
        self.class_names = ["non-toxic", "toxic"]

    def _terms(self, root: Path) -> tuple[list[str], dict[str, str]]:
        path = require_path(root / "adjectives_people.txt", "identity term list",
                            "Expected adjectives_people.txt of Dixon et al. (one term per line).")
        terms = [t.strip().lower() for t in path.read_text(encoding="utf-8").splitlines() if t.strip()]
        category: dict[str, str] = {}
        words = root / "words.csv"
        if words.is_file():
            df = read_table(words)
            if {"type", "subtype", "word"} <= set(df.columns):
                for t, sub, w in zip(df["type"], df["subtype"], df["word"]):
                    if str(t).strip() == "identity":
                        category[str(w).strip().lower()] = str(sub).strip()
        if self.group_by == "category":
            missing = [t for t in terms if t not in category]
            if missing:
                raise DataError(f"{_where(words)}: no identity subtype for term(s) {missing[:5]} "
                                "(group_by='category' needs words.csv)")
        if self.terms is not None:
            unknown = [t for t in self.terms if t.lower() not in terms]
            if unknown:
                raise ValueError(f"terms {unknown} are not in {str(path)!r}")
            terms = [t.lower() for t in self.terms]
        return terms, category

    def load_raw(self) -> dict[str, RawSplit]:
        import re

        root = self.require_data_dir("Point it at the jigsaw_sentence_templates folder (Dixon et al. 2018).")
        path = require_path(root / self.file, "template file")
        terms, category = self._terms(root)
        df = read_table(path)
        if "phrase" in df.columns:
            text_col, label_col, values = "phrase", "toxicity", {"toxic": 1, "nontoxic": 0}
        else:
            text_col, label_col, values = "comment", "toxic", {"true": 1, "false": 0, "1": 1, "0": 0}
        require_columns(df, [text_col, label_col], path)
        texts = texts_of(df, text_col, path)
        y = np.empty(len(df), dtype=np.int64)
        for r, v in enumerate(df[label_col].tolist()):
            code = values.get(str(v).strip().lower())
            if code is None:
                raise DataError(f"{_where(path, label_col, r)}: {v!r} is not one of {sorted(values)}")
            y[r] = code
        by_length = sorted(terms, key=len, reverse=True)
        pattern = re.compile(r"\b(" + "|".join(re.escape(t) for t in by_length) + r")\b", re.IGNORECASE)
        groups = sorted({category[t] for t in terms}) if self.group_by == "category" else terms
        self.group_names = groups
        index = {g: i for i, g in enumerate(groups)}
        a = np.full(len(df), -1, dtype=np.int64)
        for r, t in enumerate(texts):
            m = pattern.search(t)
            if m:
                term = m.group(1).lower()
                a[r] = index[category[term] if self.group_by == "category" else term]
        keep = np.arange(len(df)) if self.keep_unmatched else np.flatnonzero(a >= 0)
        if len(keep) == 0:
            raise DataError(f"{_where(path, text_col)}: no sentence contains one of the identity terms")
        parts = stratified_split(y[keep], a[keep], 0.0, 1.0 - self.probe_fraction, self.seed)
        rows = {"train": keep[parts["train"]], "val": keep[parts["train"]], "test": keep[parts["test"]]}
        return {s: RawSplit([texts[i] for i in idx], y[idx], a[idx],
                            f"{path} [{'probe (train = val)' if s != 'test' else 'test'} rows]")
                for s, idx in rows.items()}


# ============================================================================================ TextCSV
class TextCSV(TextDataModule):
    """Any delimited text file(s) with named text, label and attribute columns.

    ``files`` is one file (relative to ``data_dir`` or absolute), a list of files (concatenated) or a mapping
    ``{"train": ..., "val": ..., "test": ...}``. With one table, ``split_column`` (values mapped by ``split_values``)
    selects the split of every row; without it, seeded stratified splits are made.

    Labels: with ``label_threshold``, ``label ≥ threshold`` → 1 else 0 (e.g. toxicity scores); otherwise the
    distinct values in ``class_names`` order (default: sorted, numerically when all are integers); a value outside
    ``class_names`` raises. Attributes: one or several columns (intersectional groups ``female|black``); values in
    ``unknown_values`` give attribute ``-1`` (or drop the row with ``drop_unknown``).

    Args:
        data_dir: base folder of relative ``files``.
        files: file, list of files, or split → file mapping.
        text_column / label_column: column names.
        attribute_columns: one column name or a list.
        split_column: optional column naming the split of each row.
        split_values: split column value → ``train``/``val``/``test`` (default accepts train, val/dev/valid, test).
        class_names: label values in class order.
        label_threshold: binarise a numeric label column.
        unknown_values: attribute values meaning unknown.
        attribute_categories: per attribute column, its known values in group order (default: sorted observed).
        drop_unknown: drop rows whose attribute is unknown.
        sep: field separator (default: tab for ``.tsv``, else comma).
        val_fraction / test_fraction: shares of the seeded stratified split.
    """

    def __init__(
        self,
        data_dir: str | None = None,
        files: str | list[str] | dict[str, str] = "data.csv",
        text_column: str = "text",
        label_column: str = "label",
        attribute_columns: str | list[str] = "group",
        split_column: str | None = None,
        split_values: dict[str, str] | None = None,
        class_names: list[str] | None = None,
        label_threshold: float | None = None,
        unknown_values: list[str] | None = None,
        attribute_categories: list[list[str]] | None = None,
        drop_unknown: bool = False,
        sep: str | None = None,
        val_fraction: float = 0.1,
        test_fraction: float = 0.2,
        **kwargs,
    ) -> None:
        super().__init__(data_dir=data_dir, **kwargs)
        self.files = files
        self.text_column, self.label_column = text_column, label_column
        self.attribute_columns = [attribute_columns] if isinstance(attribute_columns, str) else list(attribute_columns)
        self.split_column = split_column
        self.split_values = split_values or {"train": "train", "val": "val", "dev": "val", "valid": "val",
                                             "validation": "val", "test": "test"}
        self.class_order, self.label_threshold = class_names, label_threshold
        self.unknown_values = list(UNKNOWN if unknown_values is None else unknown_values)
        self.attribute_categories, self.drop_unknown = attribute_categories, drop_unknown
        self.sep, self.val_fraction, self.test_fraction = sep, val_fraction, test_fraction

    def _path(self, name: str) -> Path:
        p = Path(name).expanduser()
        if not p.is_absolute() and self.data_dir is not None:
            p = self.data_dir / p
        return require_path(p, "TextCSV file")

    def _frame(self, paths: list[Path]) -> list[tuple[Path, Any]]:
        frames = []
        for p in paths:
            df = read_table(p, self.sep)
            need = [self.text_column, self.label_column, *self.attribute_columns]
            if self.split_column:
                need.append(self.split_column)
            require_columns(df, need, p)
            frames.append((p, df))
        return frames

    def load_raw(self) -> dict[str, RawSplit]:
        if isinstance(self.files, dict):
            missing = [s for s in ("train", "val", "test") if s not in self.files]
            if missing:
                raise ValueError(f"files mapping needs train, val and test; missing {missing}")
            by_split = {s: self._frame([self._path(self.files[s])]) for s in ("train", "val", "test")}
            rows = None
        else:
            names = [self.files] if isinstance(self.files, str) else list(self.files)
            frames = self._frame([self._path(n) for n in names])
            by_split = {"all": frames}
            rows = True
        # pass 1: parse every table
        parsed: dict[str, list[tuple[Path, list[str], list[str], list[list[Any]], list[str] | None]]] = {}
        for split, frames in by_split.items():
            parsed[split] = []
            for p, df in frames:
                texts = texts_of(df, self.text_column, p)
                labels = [str(v).strip() for v in df[self.label_column].tolist()]
                attrs = [df[c].tolist() for c in self.attribute_columns]
                sp = [str(v).strip().lower() for v in df[self.split_column].tolist()] if self.split_column else None
                parsed[split].append((p, texts, labels, attrs, sp))
        # label coding
        all_labels = [(p, r, v) for tables in parsed.values() for p, _, labels, _, _ in tables
                      for r, v in enumerate(labels)]
        if self.label_threshold is not None:
            self.class_names = [f"<{self.label_threshold:g}", f">={self.label_threshold:g}"]

            def code(p: Path, r: int, v: str) -> int:
                try:
                    return int(float(v) >= self.label_threshold)
                except ValueError:
                    raise DataError(f"{_where(p, self.label_column, r)}: {v!r} is not a number") from None
        else:
            for p, r, v in all_labels:
                if not v or v.lower() == "nan":
                    raise DataError(f"{_where(p, self.label_column, r)}: missing label")
            if self.class_order is not None:
                names = [str(c) for c in self.class_order]
            else:
                distinct = {v for _, _, v in all_labels}
                numeric = all(v.lstrip("-").isdigit() for v in distinct)
                names = sorted(distinct, key=(lambda v: int(v)) if numeric else None)
            self.class_names = names
            index = {n: i for i, n in enumerate(names)}

            def code(p: Path, r: int, v: str) -> int:
                if v not in index:
                    raise DataError(f"{_where(p, self.label_column, r)}: label {v!r} is not one of {names}")
                return index[v]
        # attribute categories over all tables, so ids agree across splits
        unknown = [u.lower() for u in self.unknown_values]
        if self.attribute_categories is not None:
            cats = [[str(c) for c in cs] for cs in self.attribute_categories]
            if len(cats) != len(self.attribute_columns):
                raise ValueError(f"attribute_categories has {len(cats)} lists for {len(self.attribute_columns)} "
                                 "attribute columns")
        else:
            cats = []
            for j in range(len(self.attribute_columns)):
                seen = {str(v).strip() for tables in parsed.values() for _, _, _, attrs, _ in tables
                        for v in attrs[j] if not is_unknown(v, unknown)}
                numeric = all(v.lstrip("-").replace(".", "", 1).isdigit() for v in seen)
                cats.append(sorted(seen, key=(lambda v: float(v)) if numeric else None))
        allowed = [set(c) for c in cats]
        raw: dict[str, tuple[list[str], np.ndarray, np.ndarray, list[str], list[str] | None]] = {}
        for split, tables in parsed.items():
            texts_s, y_s, a_s, src_s, sp_s = [], [], [], [], []
            for p, texts, labels, attrs, sp in tables:
                for j, c in enumerate(self.attribute_columns):
                    for r, v in enumerate(attrs[j]):
                        if not is_unknown(v, unknown) and str(v).strip() not in allowed[j]:
                            raise DataError(f"{_where(p, c, r)}: value {v!r} is not one of {cats[j]}")
                a, self.group_names = encode_groups(attrs, unknown=unknown, categories=cats)
                texts_s += texts
                y_s.append(np.array([code(p, r, v) for r, v in enumerate(labels)], dtype=np.int64))
                a_s.append(a)
                src_s.append(str(p))
                if sp is not None:
                    for r, v in enumerate(sp):
                        if v not in self.split_values:
                            raise DataError(f"{_where(p, self.split_column, r)}: split {v!r} is not one of "
                                            f"{sorted(self.split_values)}")
                    sp_s += [self.split_values[v] for v in sp]
            raw[split] = (texts_s, np.concatenate(y_s), np.concatenate(a_s), src_s, sp_s if self.split_column else None)
        if rows is None:
            out = {s: RawSplit(t, y, a, src[0]) for s, (t, y, a, src, _) in raw.items()}
        else:
            texts, y, a, src, sp = raw["all"]
            if sp is not None:
                parts = {s: np.flatnonzero(np.array(sp) == s) for s in ("train", "val", "test")}
            else:
                parts = stratified_split(y, a, self.val_fraction, self.test_fraction, self.seed)
            label = ", ".join(src)
            out = {s: RawSplit([texts[i] for i in idx], y[idx], a[idx], f"{label} [{s} split]")
                   for s, idx in parts.items()}
        if self.drop_unknown:
            out = {s: RawSplit([r.texts[i] for i in np.flatnonzero(r.a >= 0)], r.y[r.a >= 0], r.a[r.a >= 0],
                               r.source) for s, r in out.items()}
        return out
