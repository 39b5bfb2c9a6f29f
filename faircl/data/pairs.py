"""Counterfactual tuples for CCD, counterfactual data augmentation (CDA), the polarity check, and the readers of the
embedding-bias benchmarks (SEAT, CrowS-Pairs, StereoSet, Grep-BiasIR).

A *tuple* holds the same content in every attribute version plus a neutral version, ``(S^{a_1}, …, S^{a_G}, S^n)``
(CCD paper, §3.2): ``("He is a nurse.", "She is a nurse.", "They are a nurse.")`` for ``groups = (male, female)``.

Sources of tuples:

* :class:`CDA` swaps attribute words with aligned word lists (:class:`AttributeLexicon`: ADEPT / GN-GloVe aligned
  files, JSON pair lists such as the CDS pairs and name pairs, bias-bench's ``bias_attribute_words.json``, TSV pairs),
  keeping case, punctuation and possessives, and writes the neutral version with a neutral map (``he → they``,
  ``mother → parent``, names → ``the person``). Words in the lexicon's *keep* list (e.g. the ADEPT neutral list) are
  never changed.
* an LLM (:mod:`faircl.data.llm_augment`), or a ready tuple file (:func:`read_tuple_file`, CSV or JSONL).

Every tuple passes the polarity check of the paper (eq. 6), ``g(S) = argmax_a occ(S, V^a)``: version ``g`` must have
polarity ``g`` and the neutral version must contain no attribute word. Failures are dropped and counted
(:class:`PolarityReport`); the union polarity accuracy (eq. 7) is the fraction of tuples whose versions all pass.
"""

from __future__ import annotations

import csv
import glob
import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faircl.data.base import DataError, FairDataModule, FairDataset

NEUTRAL = "neutral"

# --------------------------------------------------------------------------------------------------- word lexicon

#: Core English gender pairs (male, female): used when no word-list files are given.
BUILTIN_GENDER_PAIRS: tuple[tuple[str, str], ...] = (
    ("he", "she"), ("him", "her"), ("his", "her"), ("his", "hers"), ("himself", "herself"),
    ("man", "woman"), ("men", "women"), ("boy", "girl"), ("boys", "girls"), ("male", "female"),
    ("males", "females"), ("father", "mother"), ("fathers", "mothers"), ("dad", "mom"), ("dads", "moms"),
    ("daddy", "mommy"), ("son", "daughter"), ("sons", "daughters"), ("brother", "sister"),
    ("brothers", "sisters"), ("husband", "wife"), ("husbands", "wives"), ("boyfriend", "girlfriend"),
    ("boyfriends", "girlfriends"), ("uncle", "aunt"), ("uncles", "aunts"), ("nephew", "niece"),
    ("nephews", "nieces"), ("grandfather", "grandmother"), ("grandson", "granddaughter"), ("grandpa", "grandma"),
    ("king", "queen"), ("kings", "queens"), ("prince", "princess"), ("gentleman", "lady"),
    ("gentlemen", "ladies"), ("mr", "mrs"), ("sir", "madam"), ("actor", "actress"), ("actors", "actresses"),
    ("waiter", "waitress"), ("chairman", "chairwoman"), ("spokesman", "spokeswoman"),
    ("businessman", "businesswoman"), ("businessmen", "businesswomen"), ("policeman", "policewoman"),
    ("congressman", "congresswoman"), ("salesman", "saleswoman"), ("guy", "gal"), ("groom", "bride"),
    ("fiance", "fiancee"), ("monk", "nun"), ("god", "goddess"), ("hero", "heroine"), ("widower", "widow"),
    ("stepfather", "stepmother"), ("lad", "lass"), ("masculine", "feminine"), ("manhood", "womanhood"),
    ("boyhood", "girlhood"), ("fatherhood", "motherhood"), ("paternal", "maternal"),
    ("paternity", "maternity"), ("fraternity", "sorority"),
)

#: Gender-neutral counterparts (lower case) used to write the neutral version. ``""`` deletes the word.
BUILTIN_NEUTRAL: dict[str, str] = {
    **dict.fromkeys(("he", "she"), "they"), **dict.fromkeys(("him",), "them"),
    **dict.fromkeys(("himself", "herself"), "themselves"), **dict.fromkeys(("hers",), "theirs"),
    **dict.fromkeys(("man", "woman", "guy", "gal", "gentleman", "lady", "lad", "lass"), "person"),
    **dict.fromkeys(("men", "women", "guys", "gentlemen", "ladies"), "people"),
    **dict.fromkeys(("boy", "girl", "son", "daughter"), "child"),
    **dict.fromkeys(("boys", "girls", "sons", "daughters"), "children"),
    **dict.fromkeys(("father", "mother", "dad", "mom", "daddy", "mommy", "mum", "papa", "mama"), "parent"),
    **dict.fromkeys(("fathers", "mothers", "dads", "moms"), "parents"),
    **dict.fromkeys(("brother", "sister"), "sibling"), **dict.fromkeys(("brothers", "sisters"), "siblings"),
    **dict.fromkeys(("husband", "wife", "hubby", "groom", "bride", "fiance", "fiancee"), "spouse"),
    **dict.fromkeys(("husbands", "wives", "grooms", "brides"), "spouses"),
    **dict.fromkeys(("boyfriend", "girlfriend"), "partner"),
    **dict.fromkeys(("boyfriends", "girlfriends"), "partners"),
    **dict.fromkeys(("uncle", "aunt", "nephew", "niece"), "relative"),
    **dict.fromkeys(("uncles", "aunts", "nephews", "nieces"), "relatives"),
    **dict.fromkeys(("grandfather", "grandmother", "grandpa", "grandma"), "grandparent"),
    **dict.fromkeys(("grandfathers", "grandmothers"), "grandparents"),
    **dict.fromkeys(("grandson", "granddaughter"), "grandchild"),
    **dict.fromkeys(("grandsons", "granddaughters"), "grandchildren"),
    **dict.fromkeys(("king", "queen"), "monarch"), **dict.fromkeys(("kings", "queens"), "monarchs"),
    **dict.fromkeys(("prince", "princess"), "royal"), **dict.fromkeys(("princes", "princesses"), "royals"),
    **dict.fromkeys(("mr", "mrs", "ms", "miss"), "mx"), **dict.fromkeys(("sir", "madam"), "friend"),
    **dict.fromkeys(("actor", "actress"), "performer"), **dict.fromkeys(("actors", "actresses"), "performers"),
    **dict.fromkeys(("waiter", "waitress"), "server"), **dict.fromkeys(("waiters", "waitresses"), "servers"),
    **dict.fromkeys(("chairman", "chairwoman"), "chairperson"),
    **dict.fromkeys(("chairmen", "chairwomen"), "chairpersons"),
    **dict.fromkeys(("spokesman", "spokeswoman"), "spokesperson"),
    **dict.fromkeys(("businessman", "businesswoman"), "businessperson"),
    **dict.fromkeys(("businessmen", "businesswomen"), "businesspeople"),
    **dict.fromkeys(("policeman", "policewoman"), "police officer"),
    **dict.fromkeys(("policemen", "policewomen"), "police officers"),
    **dict.fromkeys(("congressman", "congresswoman"), "legislator"),
    **dict.fromkeys(("salesman", "saleswoman"), "salesperson"),
    **dict.fromkeys(("monk", "nun"), "monastic"), **dict.fromkeys(("god", "goddess"), "deity"),
    **dict.fromkeys(("hero", "heroine"), "protagonist"), **dict.fromkeys(("stepfather", "stepmother"), "step-parent"),
    **dict.fromkeys(("widower", "widow"), "surviving spouse"),
    **dict.fromkeys(("male", "female", "males", "females", "masculine", "feminine"), ""),
    **dict.fromkeys(("manhood", "womanhood"), "adulthood"), **dict.fromkeys(("boyhood", "girlhood"), "childhood"),
    **dict.fromkeys(("fatherhood", "motherhood"), "parenthood"),
    **dict.fromkeys(("paternal", "maternal"), "parental"), **dict.fromkeys(("paternity", "maternity"), "parental"),
    **dict.fromkeys(("fraternity", "sorority"), "student society"),
}

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


def _match_case(src: str, dst: str) -> str:
    """Give ``dst`` the case pattern of ``src`` (``He → She``, ``HE → SHE``, ``he → she``)."""
    if not dst:
        return dst
    if len(src) > 1 and src.isupper():
        return dst.upper()
    if src[0].isupper():
        return dst[0].upper() + dst[1:]
    return dst


def _read_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise FileNotFoundError(f"word list {str(path)!r} not found")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]


def _norm_word(w: str) -> str:
    return w.strip().lower().rstrip(".")


class AttributeLexicon:
    """Aligned attribute word lists: row ``r`` holds the same concept in every group (``he`` / ``she``).

    Args:
        groups: group names, e.g. ``("male", "female")``.
        neutral: lower-case word → neutral counterpart (``""`` deletes the word in the neutral version).
        keep: words never changed and never counted (e.g. the ADEPT neutral list), even if a pair list holds them.

    Words are matched case-insensitively on whole tokens (``man`` does not match ``man-made`` or ``manager``).
    A word appearing in several rows keeps its first row; name rows (:meth:`add_pairs` with ``names=True``) only
    match capitalised tokens, so the name ``Will`` leaves the verb ``will`` alone.
    """

    def __init__(self, groups: Sequence[str] = ("male", "female"), neutral: Mapping[str, str] | None = None,
                 keep: Iterable[str] = ()) -> None:
        if len(groups) < 2 or len(set(groups)) != len(groups):
            raise ValueError(f"groups must be >= 2 distinct names, got {list(groups)}")
        if NEUTRAL in groups:
            raise ValueError(f"{NEUTRAL!r} is reserved for the neutral version; rename that group")
        self.groups = tuple(groups)
        self.rows: list[tuple[str, ...]] = []
        self.index: dict[str, tuple[int, int]] = {}
        self.names: set[str] = set()
        self.neutral: dict[str, str] = {k.lower(): v for k, v in (neutral or {}).items()}
        self.keep: set[str] = {_norm_word(w) for w in keep if w.strip()}

    # ---------------------------------------------------------------- building
    def add_row(self, words: Sequence[str], *, names: bool = False, source: str = "") -> bool:
        """Add one aligned row (one word per group). Returns False when the row is skipped (kept word, duplicate)."""
        if len(words) != len(self.groups):
            raise DataError(f"a word row needs {len(self.groups)} entries ({self.groups}), got {list(words)}"
                            + (f" in {source!r}" if source else ""))
        row = tuple(_norm_word(w) for w in words)
        if any(not w or " " in w or "_" in w for w in row) or len(set(row)) != len(row):
            return False  # multi-word entries and rows without a real swap are not supported
        if any(w in self.keep for w in row):
            return False
        r = len(self.rows)
        self.rows.append(row)
        for g, w in enumerate(row):
            self.index.setdefault(w, (r, g))
            if names:
                self.names.add(w)
        return True

    def add_pairs(self, pairs: Iterable[Sequence[str]], *, order: Sequence[str] | None = None, names: bool = False,
                  source: str = "") -> int:
        """Add rows given in the column ``order`` (default: ``self.groups``). Returns the number of rows added."""
        order = tuple(order or self.groups)
        if sorted(order) != sorted(self.groups):
            raise ValueError(f"order {list(order)} must be a permutation of the groups {list(self.groups)}")
        perm = [order.index(g) for g in self.groups]
        added = 0
        for i, pair in enumerate(pairs):
            if len(pair) != len(order):
                raise DataError(f"row {i} of {source or 'the pair list'} has {len(pair)} words, expected {len(order)}")
            added += self.add_row([pair[p] for p in perm], names=names, source=source)
        return added

    def add_aligned_files(self, paths: Mapping[str, str | Path]) -> int:
        """Aligned word files, one per group, one word per line (ADEPT ``adept_male.txt``, GN-GloVe word files)."""
        missing = [g for g in self.groups if g not in paths]
        if missing:
            raise ValueError(f"aligned word files needed for every group; missing {missing}")
        columns = {g: _read_lines(Path(paths[g])) for g in self.groups}
        lengths = {g: len(c) for g, c in columns.items()}
        if len(set(lengths.values())) != 1:
            raise DataError(f"aligned word files have different numbers of lines: "
                            f"{ {str(paths[g]): n for g, n in lengths.items()} }")
        rows = zip(*(columns[g] for g in self.groups))
        return self.add_pairs([r for r in rows if all(r)], source=", ".join(str(p) for p in paths.values()))

    def add_json_pairs(self, path: str | Path, *, order: Sequence[str] | None = None, names: bool = False,
                       key: str | None = None) -> int:
        """JSON list of word tuples (CDS pairs ``[male, female]``, name pairs), or ``{key: [...]}`` (bias-bench)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"pair list {str(path)!r} not found")
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            if key is None or key not in data:
                raise DataError(f"{str(path)!r} is a JSON object with keys {sorted(data)}: pass key=<one of them>")
            data = data[key]
        if not isinstance(data, list) or not all(isinstance(p, list) for p in data):
            raise DataError(f"{str(path)!r} must hold a JSON list of word lists")
        return self.add_pairs(data, order=order, names=names, source=str(path))

    def add_tsv_pairs(self, path: str | Path, *, order: Sequence[str] | None = None, names: bool = False) -> int:
        """Tab- or comma-separated word tuples, one per line (WinoBias ``extra_gendered_words.txt``)."""
        path = Path(path)
        pairs = [re.split(r"[\t,]", line) for line in _read_lines(path) if line and not line.startswith("#")]
        return self.add_pairs([[w.strip() for w in p if w.strip()] for p in pairs], order=order, names=names,
                              source=str(path))

    # ---------------------------------------------------------------- queries
    def group_of(self, word: str, capitalised: bool = True) -> int | None:
        """Group index of ``word`` (``None`` if it is not an attribute word)."""
        w = word.lower()
        hit = self.index.get(w)
        if hit is None or (w in self.names and not capitalised):
            return None
        return hit[1]

    def counterpart(self, word: str, group: int) -> str | None:
        """The word of ``group`` in the row of ``word`` (lower case)."""
        hit = self.index.get(word.lower())
        return None if hit is None else self.rows[hit[0]][group]

    def vocab(self, group: int) -> set[str]:
        """All words of one group (the polarity list ``V^a``)."""
        return {w for w, (_, g) in self.index.items() if g == group}

    def role(self, group: int) -> str | None:
        """``male`` / ``female`` when the group's ``he``-row word is ``he`` / ``she`` (enables pronoun rules)."""
        word = self.counterpart("he", group) if "he" in self.index else None
        return {"he": "male", "she": "female"}.get(word or "")

    def __len__(self) -> int:
        return len(self.rows)

    # ---------------------------------------------------------------- presets
    @classmethod
    def gender(cls, data_dir: str | Path | None = None, lists: str = "adept+names",
               keep: str | None = "adept_neutral") -> AttributeLexicon:
        """English gender lexicon ``(male, female)`` from presets joined with ``+``.

        Presets: ``builtin`` (pronouns and ~60 core pairs, no files), ``adept`` (ADEPT aligned lists),
        ``gn_glove`` (GN-GloVe 222 pairs), ``cds`` (124 CDA pairs), ``names`` (1,000 CDS name pairs),
        ``bias_bench`` (bias-bench gender pairs), ``winobias`` (WinoBias ``extra_gendered_words.txt``). Every
        preset but ``builtin`` reads ``data_dir/cda_word_lists`` (or ``data_dir/winobias``). The built-in pairs are
        always added last, so pronoun rows exist. ``keep="adept_neutral"`` protects the ADEPT neutral words.
        """
        lex = cls(("male", "female"), neutral=BUILTIN_NEUTRAL)
        parts = [p.strip() for p in lists.split("+") if p.strip()]
        known = {"builtin", "adept", "gn_glove", "cds", "names", "bias_bench", "winobias"}
        bad = [p for p in parts if p not in known]
        if bad:
            raise ValueError(f"unknown word-list preset(s) {bad}; choose from {sorted(known)}")
        needs_dir = [p for p in parts if p != "builtin"] or ([keep] if keep else [])
        root = Path(data_dir) if data_dir is not None else None
        if needs_dir and (root is None or not root.is_dir()):
            raise FileNotFoundError(f"word-list presets {needs_dir} need data_dir (the folder holding "
                                    f"cda_word_lists/), got {data_dir!r}; use lists='builtin' without files")
        wl = root / "cda_word_lists" if root is not None else None
        if keep == "adept_neutral":
            lex.keep |= {_norm_word(w) for w in _read_lines(wl / "adept_neutral.txt") if w}
        elif keep:
            lex.keep |= {_norm_word(w) for w in _read_lines(Path(keep)) if w}
        for p in parts:
            if p == "adept":
                lex.add_aligned_files({"male": wl / "adept_male.txt", "female": wl / "adept_female.txt"})
            elif p == "gn_glove":
                lex.add_aligned_files({"male": wl / "gn_glove_male_word_file.txt",
                                       "female": wl / "gn_glove_female_word_file.txt"})
            elif p == "cds":
                lex.add_json_pairs(wl / "cds_cda_default_pairs.json", order=("male", "female"))
            elif p == "names":
                lex.add_json_pairs(wl / "cds_names_pairs_1000_scaled.json", order=("male", "female"), names=True)
            elif p == "bias_bench":
                lex.add_json_pairs(wl / "bias_attribute_words.json", order=("male", "female"), key="gender")
            elif p == "winobias":
                lex.add_tsv_pairs(root / "winobias" / "extra_gendered_words.txt", order=("male", "female"))
        lex.add_pairs(BUILTIN_GENDER_PAIRS, order=("male", "female"))
        return lex


# --------------------------------------------------------------------------------------------------- CDA
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
            return _match_case(t.word, _AGREEMENT[w]), t.suffix
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss") and w not in _NOT_A_VERB and not t.suffix:
            if w.endswith("ies"):
                base = w[:-3] + "y"
            elif w.endswith(("sses", "shes", "ches", "xes", "zes", "oes")):
                base = w[:-2]
            else:
                base = w[:-1]
            return _match_case(t.word, base), ""
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
            return _match_case(t.word, det if follows_np else pron), t.suffix
        if neutral:
            if w in lex.names:
                before = text[:t.start]
                name = self.neutral_name
                if _SENTENCE_END.search(before):
                    name = name[0].upper() + name[1:]
                return name, t.suffix
            if w not in lex.neutral:
                return None
            return _match_case(t.word, lex.neutral[w]), t.suffix
        target = lex.counterpart(w, version)
        return (_match_case(t.word, target), t.suffix) if target is not None else None


# --------------------------------------------------------------------------------------------------- polarity
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


# --------------------------------------------------------------------------------------------------- files
_TEXT_COLUMNS = ("text", "hard_text", "sentence_text", "Text", "sentence", "document", "comment", "bio")


def split_sentences(text: str) -> list[str]:
    """Split on ``.``, ``!`` or ``?`` followed by white space and an upper-case letter or quote."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z\"“])", text.strip())
    return [p.strip() for p in parts if p.strip()]


def read_texts(path: str | Path, column: str | None = None, limit: int | None = None) -> list[str]:
    """Texts of a CSV / TSV (a text column, auto-detected among common names), JSONL (a key) or TXT (one per line).

    Args:
        path: the file.
        column: column or key holding the text (default: the first of ``text, hard_text, sentence_text, Text, ...``).
        limit: stop after this many rows.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"text file {str(path)!r} not found")
    suffix = path.suffix.lower()
    texts: list[str] = []
    if suffix in (".csv", ".tsv"):
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f, delimiter="\t" if suffix == ".tsv" else ",")
            fields = reader.fieldnames or []
            col = column or next((c for c in _TEXT_COLUMNS if c in fields), None)
            if col is None or col not in fields:
                raise DataError(f"file {str(path)!r} has no text column {column or list(_TEXT_COLUMNS)}; "
                                f"columns are {fields}")
            for row in reader:
                texts.append(row[col] or "")
                if limit and len(texts) >= limit:
                    break
    elif suffix in (".jsonl", ".json"):
        key = column or "text"
        for r, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if not line.strip():
                continue
            obj = json.loads(line)
            if key not in obj:
                raise DataError(f"file {str(path)!r} row {r} has no key {key!r}; keys are {sorted(obj)}")
            texts.append(str(obj[key]))
            if limit and len(texts) >= limit:
                break
    else:
        texts = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        texts = texts[:limit] if limit else texts
    return texts


def read_tuple_file(path: str | Path, versions: Sequence[str]) -> list[tuple[str, ...]]:
    """Tuples from a CSV (one column per version name) or JSONL (one key per version name).

    Args:
        path: ``.csv`` / ``.tsv`` / ``.jsonl``.
        versions: the column names in order, e.g. ``("male", "female", "neutral")``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"tuple file {str(path)!r} not found")
    rows: list[tuple[str, ...]] = []
    if path.suffix.lower() in (".csv", ".tsv"):
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
            missing = [v for v in versions if v not in (reader.fieldnames or [])]
            if missing:
                raise DataError(f"tuple file {str(path)!r} lacks column(s) {missing}; columns are {reader.fieldnames}")
            for r, row in enumerate(reader):
                vals = tuple((row[v] or "").strip() for v in versions)
                if not all(vals):
                    raise DataError(f"tuple file {str(path)!r} row {r}: empty version(s) "
                                    f"{[v for v, s in zip(versions, vals) if not s]}")
                rows.append(vals)
    else:
        for r, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if not line.strip():
                continue
            obj = json.loads(line)
            missing = [v for v in versions if v not in obj]
            if missing:
                raise DataError(f"tuple file {str(path)!r} row {r} lacks key(s) {missing}")
            rows.append(tuple(str(obj[v]).strip() for v in versions))
    return rows


def write_tuple_file(path: str | Path, tuples: Sequence[Sequence[str]], versions: Sequence[str]) -> Path:
    """Write tuples as CSV (``.csv``) or JSONL (anything else), readable by :func:`read_tuple_file`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(versions)
            w.writerows(tuples)
    else:
        with path.open("w", encoding="utf-8") as f:
            for t in tuples:
                f.write(json.dumps(dict(zip(versions, t)), ensure_ascii=False) + "\n")
    return path


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


# --------------------------------------------------------------------------------------------------- DataModule
class TupleDataset(FairDataset):
    """Rows are tuples; ``x`` of an item is the tuple of G + 1 strings, so a batch's ``x`` is G + 1 lists of B."""


class CounterfactualTuples(FairDataModule):
    """Counterfactual tuples ``(S^{a_1}, …, S^{a_G}, S^n)`` for CCD.

    A batch is ``{"x": [versions][B] strings, "y", "a", "idx"}``: ``x[g]`` are the ``B`` texts of group ``g`` and
    ``x[-1]`` the neutral texts. ``a`` is ``-1`` (every tuple holds all groups) and ``y`` is ``0`` (CCD has no task
    label; ``num_classes`` is 2 so the base machinery works).

    Args:
        source: ``cda`` (swap words in ``texts``), ``file`` (read ``tuple_file``) or ``llm`` (rewrite ``texts``
            with :class:`faircl.data.llm_augment.LLMAugmenter`; endpoint from ``llm_*`` or the environment).
        data_dir: folder with ``cda_word_lists/`` and the text files (default ``$FAIRCL_DATA``).
        texts: text files (paths or glob patterns, relative to ``data_dir`` unless absolute): CSV/TSV/JSONL/TXT.
        inline_texts: texts given directly (notebooks, tests); used in addition to ``texts``.
        text_column: column of the text in CSV/TSV files (default: auto-detect).
        tuple_file: CSV/JSONL with one column per version (``male, female, neutral``) for ``source=file``.
        groups: group names of a tuple file / LLM source (CDA takes them from the lexicon: ``male, female``).
        word_lists: gender word-list presets joined by ``+`` (see :meth:`AttributeLexicon.gender`).
        keep_words: ``adept_neutral`` (protect the ADEPT neutral words), a file path, or ``None``.
        split_sentences: split source texts into sentences.
        min_words / max_words: keep sentences of this length.
        max_tuples: cap the number of tuples (after the polarity check, seeded shuffle).
        val_fraction / test_fraction: held-out tuples (split by content, seeded).
        polarity_filter: drop tuples failing the polarity check (always counted and reported).
        neutral_name: names become this in the neutral version.
        llm_base_url / llm_model / llm_cache_dir: LLM endpoint (``None`` = environment variables) and reply cache.
        llm_prompt_rounds: rounds K of the polarity-guided prompt search (1 = plain few-shot augmentation).
    """

    def __init__(
        self,
        source: str = "cda",
        data_dir: str | None = None,
        texts: list[str] | None = None,
        inline_texts: list[str] | None = None,
        text_column: str | None = None,
        tuple_file: str | None = None,
        groups: list[str] | None = None,
        word_lists: str = "adept+names",
        keep_words: str | None = "adept_neutral",
        split_sentences: bool = True,
        min_words: int = 4,
        max_words: int = 64,
        max_tuples: int | None = None,
        val_fraction: float = 0.1,
        test_fraction: float = 0.1,
        polarity_filter: bool = True,
        neutral_name: str = "the person",
        llm_base_url: str | None = None,
        llm_model: str | None = None,
        llm_cache_dir: str | None = None,
        llm_prompt_rounds: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if source not in ("cda", "file", "llm"):
            raise ValueError(f"source={source!r} must be 'cda', 'file' or 'llm'")
        if not (0 < val_fraction < 1 and 0 < test_fraction < 1 and val_fraction + test_fraction < 1):
            raise ValueError(f"val_fraction={val_fraction} and test_fraction={test_fraction} must be in (0, 1) "
                             "with a sum below 1")
        if source == "file" and not tuple_file:
            raise ValueError("source='file' needs tuple_file")
        if source in ("cda", "llm") and not texts and not inline_texts:
            raise ValueError(f"source={source!r} needs texts (files) or inline_texts")
        self.source = source
        self.data_dir = data_dir
        self.texts = list(texts or [])
        self.inline_texts = list(inline_texts or [])
        self.text_column = text_column
        self.tuple_file = tuple_file
        self.groups_arg = list(groups) if groups else None
        self.word_lists = word_lists
        self.keep_words = keep_words
        self.split = split_sentences
        self.min_words, self.max_words = min_words, max_words
        self.max_tuples = max_tuples
        self.val_fraction, self.test_fraction = val_fraction, test_fraction
        self.polarity_filter = polarity_filter
        self.neutral_name = neutral_name
        self.llm_base_url, self.llm_model, self.llm_cache_dir = llm_base_url, llm_model, llm_cache_dir
        self.llm_prompt_rounds = llm_prompt_rounds
        self.polarity_report: PolarityReport | None = None
        self.class_names = ["tuple", "unused"]
        self.group_names = []

    # ------------------------------------------------------------------ helpers
    def _root(self) -> Path | None:
        import os

        if self.data_dir is not None:
            return Path(self.data_dir)
        env = os.environ.get("FAIRCL_DATA")
        return Path(env) if env else None

    def _resolve(self, pattern: str) -> list[Path]:
        root = self._root()
        full = pattern if Path(pattern).is_absolute() or root is None else str(root / pattern)
        hits = sorted(glob.glob(full)) if any(c in pattern for c in "*?[") else [full]
        paths = [Path(h) for h in hits]
        missing = [str(p) for p in paths if not p.is_file()]
        if not paths or missing:
            raise FileNotFoundError(f"text file(s) {missing or [full]} not found (data_dir={self.data_dir!r})")
        return paths

    def lexicon(self) -> AttributeLexicon:
        """The gender lexicon used for CDA and the polarity check."""
        if not hasattr(self, "_lexicon"):
            root = self._root()
            keep = self.keep_words
            if keep == "adept_neutral" and (root is None or not root.is_dir()):
                keep = None
            self._lexicon = AttributeLexicon.gender(root, self.word_lists, keep=keep)
        return self._lexicon

    def source_texts(self) -> list[str]:
        out = list(self.inline_texts)
        for pattern in self.texts:
            for p in self._resolve(pattern):
                out.extend(read_texts(p, self.text_column))
        return out

    def build_tuples(self) -> list[tuple[str, ...]]:
        """All polarity-checked tuples (report in ``self.polarity_report``)."""
        lex = self.lexicon()
        if self.source == "file":
            groups = tuple(self.groups_arg or lex.groups)
            raw = read_tuple_file(self._resolve(self.tuple_file)[0], (*groups, NEUTRAL))
            if groups == lex.groups:
                kept, report, _ = polarity_check(raw, lex)
            elif self.polarity_filter:
                raise ValueError(f"groups {list(groups)} differ from the word lists' groups {list(lex.groups)}: the "
                                 "polarity check needs word lists for those groups; pass polarity_filter=False to "
                                 "use the tuples unchecked")
            else:
                kept, report = raw, PolarityReport(versions=(*groups, NEUTRAL), total=len(raw), kept=len(raw),
                                                   version_correct=[len(raw)] * (len(groups) + 1))
            tuples = kept if self.polarity_filter else raw
        elif self.source == "cda":
            cda = CDA(lex, neutral_name=self.neutral_name)
            tuples, report = make_cda_tuples(self.source_texts(), cda, split=self.split, min_words=self.min_words,
                                             max_words=self.max_words, drop_failed=self.polarity_filter)
        else:
            from faircl.data.llm_augment import LLMAugmenter, OpenAIChatBackend

            backend = OpenAIChatBackend(base_url=self.llm_base_url, model=self.llm_model)
            aug = LLMAugmenter(backend, lex, cache_dir=self.llm_cache_dir)
            pieces = select_texts(self.source_texts(), split=self.split, min_words=self.min_words,
                                  max_words=self.max_words)
            cda = CDA(lex)
            with_words = [s for s in pieces if cda.has_attribute_word(s)]
            result = (aug.prompt_search(with_words, rounds=self.llm_prompt_rounds)[0] if self.llm_prompt_rounds > 1
                      else aug.augment(with_words))
            report = result.report
            report.skipped_no_attribute = len(pieces) - len(with_words)
            tuples = result.kept if self.polarity_filter else [t for t in result.tuples if t is not None]
        self.polarity_report = report
        return [tuple(t) for t in tuples]

    # ------------------------------------------------------------------ FairDataModule API
    def load_splits(self) -> dict[str, FairDataset]:
        lex = self.lexicon()
        groups = tuple(self.groups_arg or lex.groups)
        self.group_names = list(groups)
        tuples = self.build_tuples()
        if not tuples:
            raise DataError(f"CounterfactualTuples: no tuple left after the polarity check ({self.polarity_report})")
        rng = random.Random(self.seed)
        order = list(range(len(tuples)))
        rng.shuffle(order)
        if self.max_tuples:
            order = order[: self.max_tuples]
        n = len(order)
        n_test = int(round(n * self.test_fraction))
        n_val = int(round(n * self.val_fraction))
        if n - n_test - n_val < 1 or n_test == 0 or n_val == 0:
            raise DataError(f"CounterfactualTuples: {n} tuples are too few for val_fraction={self.val_fraction} "
                            f"and test_fraction={self.test_fraction}")
        parts = {"test": order[:n_test], "val": order[n_test:n_test + n_val], "train": order[n_test + n_val:]}
        splits = {}
        for name, ids in parts.items():
            rows = [tuples[i] for i in ids]
            splits[name] = TupleDataset(rows, [0] * len(rows), [-1] * len(rows), num_classes=2, num_groups=len(groups),
                                        source=self.tuple_file or f"{self.source} tuples")
        return splits

    def setup(self, stage: str | None = None) -> None:
        super().setup(stage)
        if self.polarity_report is not None and not getattr(self, "_printed_polarity", False):
            self._printed_polarity = True
            print(self.polarity_report)

    @property
    def versions(self) -> tuple[str, ...]:
        return (*self.group_names, NEUTRAL) if self.group_names else (*self.lexicon().groups, NEUTRAL)


# --------------------------------------------------------------------------------------------------- benchmarks
@dataclass
class SeatTest:
    """One SEAT/WEAT test: two target sets X, Y and two attribute sets A, B (sentences or words)."""

    name: str
    targ1: list[str]
    targ2: list[str]
    attr1: list[str]
    attr2: list[str]
    categories: tuple[str, str, str, str] = ("targ1", "targ2", "attr1", "attr2")


def load_seat(path: str | Path) -> SeatTest:
    """A SEAT test file: one JSON object ``{targ1, targ2, attr1, attr2: {category, examples}}``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"SEAT file {str(path)!r} not found")
    obj = json.loads(path.read_text(encoding="utf-8"))
    keys = ("targ1", "targ2", "attr1", "attr2")
    for k in keys:
        if k not in obj or not isinstance(obj[k], dict) or not obj[k].get("examples"):
            raise DataError(f"SEAT file {str(path)!r}: key {k!r} with a non-empty 'examples' list is required")
    name = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    return SeatTest(name, *(list(obj[k]["examples"]) for k in keys),
                    categories=tuple(str(obj[k].get("category", k)) for k in keys))


#: The gender SEAT tests (May et al. 2019; CCD paper Table 2 uses 6, 6b, 7, 7b, 8, 8b).
SEAT_GENDER_TESTS = ("sent-weat6", "sent-weat6b", "sent-weat7", "sent-weat7b", "sent-weat8", "sent-weat8b")


@dataclass
class CrowsPair:
    """A CrowS-Pairs row: the more and the less stereotyping sentence, and the direction."""

    more: str
    less: str
    direction: str
    bias_type: str


def load_crows_pairs(path: str | Path, bias_type: str | None = "gender") -> list[CrowsPair]:
    """CrowS-Pairs CSV (``sent_more, sent_less, stereo_antistereo, bias_type``), optionally one bias type."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"CrowS-Pairs file {str(path)!r} not found")
    out = []
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        need = {"sent_more", "sent_less", "stereo_antistereo", "bias_type"}
        if not need <= set(reader.fieldnames or []):
            raise DataError(f"CrowS-Pairs file {str(path)!r} needs columns {sorted(need)}, has {reader.fieldnames}")
        for row in reader:
            if bias_type is None or row["bias_type"] == bias_type:
                out.append(CrowsPair(row["sent_more"], row["sent_less"], row["stereo_antistereo"], row["bias_type"]))
    return out


@dataclass
class StereoSetItem:
    """A StereoSet intrasentence item: the context with ``BLANK`` and the three completions."""

    target: str
    bias_type: str
    context: str
    stereotype: str
    anti_stereotype: str
    unrelated: str


def load_stereoset_intrasentence(path: str | Path, bias_type: str | None = "gender") -> list[StereoSetItem]:
    """StereoSet intrasentence items from the flattened ``test.jsonl`` or the nested ``gender_test.json`` format."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"StereoSet file {str(path)!r} not found")
    text = path.read_text(encoding="utf-8").strip()
    out = []
    if text.startswith("["):
        for r, obj in enumerate(json.loads(text)):
            d = obj.get("data", {})
            try:
                item = StereoSetItem(obj["target"], obj["bias_type"], obj["context"], d["stereotype"]["sentence"],
                                     d["anti-stereotype"]["sentence"], d["unrelated"]["sentence"])
            except KeyError as e:
                raise DataError(f"StereoSet file {str(path)!r} item {r}: missing {e}") from None
            if bias_type is None or item.bias_type == bias_type:
                out.append(item)
        return out
    for r, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        obj = json.loads(line)
        if obj.get("type", "intrasentence") != "intrasentence":
            continue
        try:
            item = StereoSetItem(obj["target"], obj["bias_type"], obj["context"], obj["stereotype"],
                                 obj["anti-stereotype"], obj["unrelated"])
        except KeyError as e:
            raise DataError(f"StereoSet file {str(path)!r} row {r}: missing {e}") from None
        if bias_type is None or item.bias_type == bias_type:
            out.append(item)
    return out


@dataclass
class BiasIRQuery:
    """A Grep-BiasIR query with its documents (each in male, female and neutral wording)."""

    q_id: str
    category: str
    query: str
    documents: list[str]
    genders: list[str]  # F / M / N (a few rows: BOTH) per document
    relevant: list[int]


def load_grep_bias_ir(folder: str | Path) -> list[BiasIRQuery]:
    """Grep-BiasIR: ``queries.csv`` and ``queries-documents_<CATEGORY>.csv`` (names with spaces and ``&``)."""
    folder = Path(folder)
    qfile = folder / "queries.csv"
    if not qfile.is_file():
        raise FileNotFoundError(f"Grep-BiasIR queries file {str(qfile)!r} not found")
    with qfile.open(newline="", encoding="utf-8") as f:
        cats = {row["q_id"]: row["category"] for row in csv.DictReader(f)}
    by_q: dict[str, BiasIRQuery] = {}
    files = sorted(folder.glob("queries-documents_*.csv"))
    if not files:
        raise FileNotFoundError(f"no queries-documents_*.csv files in {str(folder)!r}")
    need = {"q_id", "relevant", "query", "document", "content_gender"}
    for p in files:
        category = p.stem[len("queries-documents_"):]
        with p.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if not need <= set(reader.fieldnames or []):
                raise DataError(f"Grep-BiasIR file {str(p)!r} needs columns {sorted(need)}, has {reader.fieldnames}")
            for r, row in enumerate(reader):
                g = row["content_gender"].strip().upper()
                if not g:
                    raise DataError(f"Grep-BiasIR file {str(p)!r} row {r}: empty content_gender")
                q = by_q.setdefault(row["q_id"], BiasIRQuery(row["q_id"], cats.get(row["q_id"], category),
                                                             row["query"], [], [], []))
                q.documents.append(row["document"])
                q.genders.append(g)
                q.relevant.append(int(row["relevant"]))
    return list(by_q.values())


__all__ = [
    "AttributeLexicon", "CDA", "CounterfactualTuples", "PolarityReport", "TupleDataset", "occurrences", "polarity",
    "polarity_check", "make_cda_tuples", "select_texts", "read_texts", "read_tuple_file", "write_tuple_file",
    "split_sentences",
    "SeatTest", "load_seat", "SEAT_GENDER_TESTS", "CrowsPair", "load_crows_pairs", "StereoSetItem",
    "load_stereoset_intrasentence", "BiasIRQuery", "load_grep_bias_ir", "BUILTIN_GENDER_PAIRS", "BUILTIN_NEUTRAL",
]
