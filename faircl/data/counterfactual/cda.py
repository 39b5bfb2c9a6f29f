"""Counterfactual data augmentation (CDA): rewriting a text into every attribute version plus a neutral one, and
the polarity check of the CCD paper (eq. 6 and 7).

:class:`CDA` is the one word-swapping engine of the package: :func:`swap_words` is its context-free form, used by
:class:`faircl.data.augment.CounterfactualSwap`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from faircl.data.counterfactual.lexicon import NEUTRAL, AttributeLexicon
from faircl.data.io import DataError

__all__ = ["CDA", "PolarityReport", "make_cda_tuples", "match_case", "occurrences", "polarity", "polarity_check",
           "select_texts", "split_sentences", "swap_words"]


# "her" and "his" are determiners before a noun phrase and pronouns otherwise (her → his | him, his → her | hers).
_DET_OR_PRONOUN = {
    "her": {"male": ("his", "him"), "female": ("her", "her"), NEUTRAL: ("their", "them")},
    "his": {"male": ("his", "his"), "female": ("her", "hers"), NEUTRAL: ("their", "theirs")},
}
# Words after which "her"/"his" is a pronoun rather than a determiner.
_NOT_A_NOUN_PHRASE = frozenset(
    "a an the this that these those to and or but nor so yet for in on at by with from of as than about into onto "
    "over under up down out off back again too very also always never just then there here when while if because "
    "until since after before is was are were be been will would can could should may might must do does did has "
    "have had not".split()
)
# Neutral version: "he is" → "they are" (verb agreement after a subject pronoun).
_AGREEMENT = {"is": "are", "was": "were", "has": "have", "does": "do", "isn": "aren", "wasn": "weren",
              "hasn": "haven", "doesn": "don", "s": "re"}
_NOT_A_VERB = frozenset("always also as thus this his its perhaps was has is us yes less unless across news "
                        "sometimes nevertheless".split())

# A word (letters, inner hyphens), then an optional apostrophe suffix (possessive or contraction).
_TOKEN = re.compile(r"(?P<word>[A-Za-z]+(?:-[A-Za-z]+)*)(?P<suffix>['’](?:s|ll|d|re|ve|m|t)\b|['’](?![A-Za-z]))?")
# Names that are also common words: not taken as names at a sentence start ("Will he come?").
_NAME_WORDS = frozenset("will may can mark bill grant rose hope faith joy pat sue art jack bob don ray june april "
                        "august summer dawn eve amber crystal ruby pearl ivy holly lily iris daisy penny grace "
                        "chance chase hunter carter mason miles guy frank young page long lane rich".split())
_MONTHS = frozenset("january february march april may june july august september october november december".split())
_SENTENCE_END = re.compile(r"(^|[.!?][\"'”’)]*\s+)$")




def match_case(src: str, dst: str) -> str:
    """Give ``dst`` the case pattern of ``src`` (``He → She``, ``HE → SHE``, ``he → she``)."""
    if not dst or not src:
        return dst
    if len(src) > 1 and src.isupper():
        return dst.upper()
    if src[0].isupper():
        return dst[0].upper() + dst[1:]
    return dst


def swap_words(text: str, mapping: Mapping[str, str]) -> tuple[str, int]:
    """Replace every whole word of ``text`` found in ``mapping`` (lower-case keys) by its counterpart.

    The replacement takes the case pattern of the original word; punctuation, spacing and possessive or contraction
    suffixes (``man's → woman's``) are kept. Returns ``(new text, number of replaced words)``. This is the
    context-free form of :meth:`CDA.rewrite` (no determiner/pronoun or verb-agreement rules).
    """
    out: list[str] = []
    pos = count = 0
    for m in _TOKEN.finditer(text):
        target = mapping.get(m.group("word").lower())
        if target is None:
            continue
        out.append(text[pos:m.start("word")])
        out.append(match_case(m.group("word"), target))
        pos = m.end("word")
        count += 1
    out.append(text[pos:])
    return "".join(out), count


def _group_at(lex: AttributeLexicon, text: str, start: int, word: str) -> int | None:
    """Group of the token ``word`` at ``start`` in ``text``; names need a capital and are ambiguous words
    (``Will``, ``May``) only away from a sentence start."""
    g = lex.group_of(word, word[0].isupper())
    w = word.lower()
    if g is not None and w in lex.names and (w in _MONTHS or (w in _NAME_WORDS and _SENTENCE_END.search(text[:start]))):
        return None
    return g


@dataclass
class _Tok:
    start: int
    end: int
    word: str
    suffix: str


class CDA:
    """Counterfactual data augmentation: every version of a text, one per group plus the neutral one.

    Each attribute word is replaced by its counterpart in the target group (``his → her`` or ``hers`` by
    context, ``her → his`` or ``him``), keeping the case pattern, surrounding punctuation and possessive or
    contraction suffixes (``John's → Mary's``, ``he's → she's``). The neutral version uses the lexicon's neutral
    map (``he is → they are``: the auxiliary after a subject pronoun agrees, and a following third-person ``-s`` verb
    loses its ``s``) and replaces names by ``neutral_name``. Words without a neutral counterpart are left as they
    are, so the polarity check then rejects the tuple.

    Args:
        lexicon: the aligned word lists.
        neutral_name: replacement for names in the neutral version (capitalised at a sentence start).
    """

    def __init__(self, lexicon: AttributeLexicon, neutral_name: str = "the person") -> None:
        self.lexicon = lexicon
        self.neutral_name = neutral_name
        self.roles = [lexicon.role(g) for g in range(len(lexicon.groups))]

    @property
    def versions(self) -> tuple[str, ...]:
        """Version names: the groups, then ``neutral``."""
        return (*self.lexicon.groups, NEUTRAL)

    def _tokens(self, text: str) -> list[_Tok]:
        return [_Tok(m.start(), m.end(), m.group("word"), m.group("suffix") or "") for m in _TOKEN.finditer(text)]

    def has_attribute_word(self, text: str) -> bool:
        """Whether ``text`` holds at least one word of the lexicon."""
        return any(_group_at(self.lexicon, text, t.start, t.word) is not None for t in self._tokens(text))

    def __call__(self, text: str) -> tuple[str, ...]:
        """All versions of ``text``: ``(S^{a_1}, …, S^{a_G}, S^n)``."""
        return tuple(self.rewrite(text, v) for v in range(len(self.versions)))

    def rewrite(self, text: str, version: int | str) -> str:
        """``text`` with every attribute word moved to ``version`` (a group index/name, or ``neutral``)."""
        if isinstance(version, str):
            if version not in self.versions:
                raise ValueError(f"version {version!r} is not one of {self.versions}")
            version = self.versions.index(version)
        neutral = version == len(self.lexicon.groups)
        toks = self._tokens(text)
        out: list[str] = []
        pos = 0
        agree_next = False
        for i, t in enumerate(toks):
            out.append(text[pos:t.start])
            pos = t.end
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            if agree_next:
                agree_next = False
                word, suffix = self._agree(t)
                out.append(word + suffix)
                continue
            repl = self._replace(text, t, nxt, version, neutral)
            if repl is None:
                out.append(text[t.start:t.end])
                continue
            word, suffix = repl
            if word == "":
                # Deleting a word: also drop one adjacent space.
                if out and out[-1].endswith(" "):
                    out[-1] = out[-1][:-1]
                elif text[pos:pos + 1] == " ":
                    pos += 1
                continue
            out.append(word + suffix)
            if neutral and t.word.lower() in ("he", "she") and not t.suffix and nxt is not None \
                    and text[t.end:nxt.start].strip() == "":
                agree_next = True
            elif neutral and t.word.lower() in ("he", "she") and t.suffix.lower() in ("'s", "’s"):
                out[-1] = word + t.suffix[0] + "re"
        out.append(text[pos:])
        return "".join(out)

    def _agree(self, t: _Tok) -> tuple[str, str]:
        w = t.word.lower()
        if w in _AGREEMENT:
            return match_case(t.word, _AGREEMENT[w]), t.suffix
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss") and w not in _NOT_A_VERB and not t.suffix:
            if w.endswith("ies"):
                base = w[:-3] + "y"
            elif w.endswith(("sses", "shes", "ches", "xes", "zes", "oes")):
                base = w[:-2]
            else:
                base = w[:-1]
            return match_case(t.word, base), ""
        return t.word, t.suffix

    def _replace(self, text: str, t: _Tok, nxt: _Tok | None, version: int, neutral: bool) -> tuple[str, str] | None:
        lex = self.lexicon
        if _group_at(lex, text, t.start, t.word) is None:
            return None
        w = t.word.lower()
        role = NEUTRAL if neutral else self.roles[version]
        if w in _DET_OR_PRONOUN and role is not None and all(r is not None for r in self.roles):
            det, pron = _DET_OR_PRONOUN[w][role]
            follows_np = (nxt is not None and text[t.end:nxt.start].strip() == "" and not t.suffix
                          and nxt.word.lower() not in _NOT_A_NOUN_PHRASE)
            return match_case(t.word, det if follows_np else pron), t.suffix
        if neutral:
            if w in lex.names:
                before = text[:t.start]
                name = self.neutral_name
                if _SENTENCE_END.search(before):
                    name = name[0].upper() + name[1:]
                return name, t.suffix
            if w not in lex.neutral:
                return None
            return match_case(t.word, lex.neutral[w]), t.suffix
        target = lex.counterpart(w, version)
        return (match_case(t.word, target), t.suffix) if target is not None else None


def occurrences(text: str, lexicon: AttributeLexicon) -> list[int]:
    """``occ(S, V^a)`` for every group ``a``: how many tokens of ``text`` are words of group ``a``."""
    counts = [0] * len(lexicon.groups)
    for m in _TOKEN.finditer(text):
        g = _group_at(lexicon, text, m.start(), m.group("word"))
        if g is not None:
            counts[g] += 1
    return counts


def polarity(text: str, lexicon: AttributeLexicon) -> int:
    """Polarity (eq. 6): ``argmax_a occ(S, V^a)``; ``G`` (= neutral) without attribute words, ``-1`` on a tie."""
    occ = occurrences(text, lexicon)
    top = max(occ)
    if top == 0:
        return len(occ)
    winners = [g for g, c in enumerate(occ) if c == top]
    return winners[0] if len(winners) == 1 else -1


@dataclass
class PolarityReport:
    """Outcome of the polarity check over a set of tuples.

    Attributes:
        versions: version names (groups then ``neutral``).
        total: tuples checked.
        kept: tuples whose every version has the right polarity.
        version_correct: per version, how many tuples had that version right.
        skipped_no_attribute: source texts without any attribute word (no tuple made; CDA only).
    """

    versions: tuple[str, ...]
    total: int = 0
    kept: int = 0
    version_correct: list[int] = field(default_factory=list)
    skipped_no_attribute: int = 0

    @property
    def dropped(self) -> int:
        return self.total - self.kept

    @property
    def union_accuracy(self) -> float:
        """Union polarity accuracy (eq. 7): fraction of tuples whose versions all have the right polarity."""
        return self.kept / self.total if self.total else float("nan")

    def as_dict(self) -> dict[str, float]:
        out: dict[str, float] = {"tuples_checked": float(self.total), "tuples_kept": float(self.kept),
                                 "tuples_dropped": float(self.dropped), "union_polarity_accuracy": self.union_accuracy,
                                 "skipped_no_attribute_word": float(self.skipped_no_attribute)}
        for v, c in zip(self.versions, self.version_correct):
            out[f"polarity_accuracy/{v}"] = c / self.total if self.total else float("nan")
        return out

    def __str__(self) -> str:
        per = ", ".join(f"{v} {c}/{self.total}" for v, c in zip(self.versions, self.version_correct))
        return (f"polarity check: kept {self.kept}/{self.total} tuples (union accuracy {self.union_accuracy:.3f}; "
                f"dropped {self.dropped}); per version: {per}; texts without attribute words: "
                f"{self.skipped_no_attribute}")


def polarity_check(tuples: Sequence[Sequence[str]], lexicon: AttributeLexicon
                   ) -> tuple[list[tuple[str, ...]], PolarityReport, list[bool]]:
    """Keep the tuples whose version ``g`` has polarity ``g`` and whose neutral version has no attribute word.

    Args:
        tuples: ``(S^{a_1}, …, S^{a_G}, S^n)`` per content.
        lexicon: gives the polarity lists ``V^a``.

    Returns:
        ``(kept tuples, report, passed flag per input tuple)``.
    """
    g_count = len(lexicon.groups)
    report = PolarityReport(versions=(*lexicon.groups, NEUTRAL), version_correct=[0] * (g_count + 1))
    kept, passed = [], []
    for i, tup in enumerate(tuples):
        if len(tup) != g_count + 1:
            raise DataError(f"tuple {i} has {len(tup)} versions, expected {g_count + 1} {report.versions}")
        ok = [polarity(s, lexicon) == v for v, s in enumerate(tup)]
        for v, good in enumerate(ok):
            report.version_correct[v] += good
        report.total += 1
        passed.append(all(ok))
        if all(ok):
            report.kept += 1
            kept.append(tuple(tup))
    return kept, report, passed




def split_sentences(text: str) -> list[str]:
    """Split on ``.``, ``!`` or ``?`` followed by white space and an upper-case letter or quote."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z\"“])", text.strip())
    return [p.strip() for p in parts if p.strip()]


def make_cda_tuples(texts: Iterable[str], cda: CDA, *, split: bool = False, min_words: int = 4,
                    max_words: int = 64, drop_failed: bool = True) -> tuple[list[tuple[str, ...]], PolarityReport]:
    """CDA tuples from raw texts, polarity-checked. Texts without attribute words are skipped and counted.

    Args:
        texts: source texts (deduplicated).
        cda: the augmenter.
        split: split each text into sentences first.
        min_words / max_words: keep texts (sentences) with this many whitespace-separated words.
        drop_failed: drop the tuples failing the polarity check (they are counted in the report either way).
    """
    pieces = select_texts(texts, split=split, min_words=min_words, max_words=max_words)
    with_words = [s for s in pieces if cda.has_attribute_word(s)]
    tuples = [cda(s) for s in with_words]
    kept, report, _ = polarity_check(tuples, cda.lexicon)
    report.skipped_no_attribute = len(pieces) - len(with_words)
    return (kept if drop_failed else tuples), report


def select_texts(texts: Iterable[str], *, split: bool = False, min_words: int = 4, max_words: int = 64) -> list[str]:
    """Deduplicated texts (or sentences, with ``split``) of ``min_words`` to ``max_words`` words, in order."""
    out: list[str] = []
    seen: set[str] = set()
    for text in texts:
        for s in (split_sentences(text) if split else [text.strip()]):
            if min_words <= len(s.split()) <= max_words and s not in seen:
                seen.add(s)
                out.append(s)
    return out
