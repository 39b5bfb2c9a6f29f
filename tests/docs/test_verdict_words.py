"""The docs' definition of every verdict word is the code's: the table on the benchmarks page lists exactly the
words of :data:`faircl.eval.verdicts.WORDS`, each with the meaning the rule's own table gives it."""

from __future__ import annotations

import re
from pathlib import Path

from faircl.eval.verdicts import AXES, WORDS, word

PAGE = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "index.md"


def _docs_table() -> dict[str, str]:
    text = PAGE.read_text()
    block = text[text.index("<!-- verdict-words:start -->"):text.index("<!-- verdict-words:end -->")]
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| \*([^*]+)\* \| (.+) \|$", block, re.M)}


def test_every_word_is_defined_in_the_docs_as_in_the_code():
    assert _docs_table() == WORDS


def test_every_combination_of_axes_reads_a_defined_word():
    for d in AXES["direction"]:
        for s in AXES["size"]:
            for u in AXES["utility"]:
                assert word(d, s, u) in WORDS and word(d, s, u, negligible=True) in WORDS
    assert word("lowers", "smaller", "lost") == "utility lost" and word("raises", "smaller", "lost") == "contradicted"
