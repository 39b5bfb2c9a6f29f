"""Aligned attribute word lists (:class:`AttributeLexicon`) and the built-in English gender pairs.

Row ``r`` of a lexicon holds the same concept in every group (``he`` / ``she``); the neutral map gives the
gender-neutral counterpart used to write the neutral version of a tuple (``he → they``, ``mother → parent``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from faircl.data.io import DataError

__all__ = ["NEUTRAL", "BUILTIN_GENDER_PAIRS", "BUILTIN_NEUTRAL", "AttributeLexicon"]

NEUTRAL = "neutral"



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
