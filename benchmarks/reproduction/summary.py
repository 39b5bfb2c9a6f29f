"""What the papers' claims came to, summed up from the reproduction results files: a headline of verdict counts for the
README, and the summary tables for the docs page ``docs/benchmarks/claims.md``.

    .venv/bin/python benchmarks/reproduction/summary.py           # rewrite both blocks
    .venv/bin/python benchmarks/reproduction/summary.py --check   # exit 1 when either is out of date

It reads ``text_bench.md``, ``vision_bench.md`` and ``embedding_bench.md`` in ``benchmarks/reproduction/results/``
(the claims judged by ``faircl bench``; the first table of each, whose header starts with ``| claim |``, its verdict
in bold). The block between ``<!-- claims-headline:start -->`` and ``<!-- claims-headline:end -->`` of README.md is
the headline: per group of claims, how many read each verdict. The block between ``<!-- results-summary:start -->``
and ``<!-- results-summary:end -->`` of the docs page is the same headline, then, for each file, its regenerating
command and wall-time line and its summary table as it stands in the file.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"
README = REPO / "README.md"
PAGE = REPO / "docs" / "benchmarks" / "claims.md"
FILES = (("Text", "text_bench.md"), ("Vision", "vision_bench.md"), ("Embeddings", "embedding_bench.md"))
#: the headline's columns: every verdict the rule gives (faircl.eval.verdicts)
VERDICTS = ("holds", "does not hold", "inconclusive", "untestable", "contradicted", "degenerate")
HEADLINE = ("<!-- claims-headline:start -->", "<!-- claims-headline:end -->")
SUMMARY = ("<!-- results-summary:start -->", "<!-- results-summary:end -->")


def _text_group(claim: str, protocol: str) -> str:
    dto = protocol.endswith("_dto")
    return "Text, fairlib's DTO selection (`_dto` protocols)" if dto else "Text, each paper's own selection"


def _embedding_group(claim: str, protocol: str) -> str:
    if claim.startswith("untouched"):
        return "Embeddings, the untouched encoder (a null method: must not hold)"
    if claim.startswith("CCD β=1 lowers"):
        return "Embeddings, CCD as the paper trains it (β = 1)"
    return "Embeddings, CCD's ablations (β = 0, 0.5, 1.5; ρ = variance)"


#: results file → the group of a claim (its first cell, its protocol: '' where the table has no protocol column)
GROUPS: dict[str, Callable[[str, str], str]] = {
    "text_bench.md": _text_group,
    "vision_bench.md": lambda claim, protocol: "Vision, each paper's own selection",
    "embedding_bench.md": _embedding_group,
}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def extract(md: str, name: str) -> tuple[str, list[str]]:
    """The ``Regenerate`` paragraph (command and wall time) and the first claims table of a results file."""
    lines = md.splitlines()
    at = next((i for i, ln in enumerate(lines[:12]) if ln.startswith("Regenerate")), None)
    if at is None:
        raise SystemExit(f"{name}: no 'Regenerate' line among the first 12 lines")
    paragraph = [lines[at]]
    for ln in lines[at + 1:]:  # the paragraph it opens (e.g. a wall-time line below it)
        if not ln.strip() or ln.startswith(("#", "|")):
            break
        paragraph.append(ln.strip())
    start = next((i for i, ln in enumerate(lines) if ln.startswith("| claim |")), None)
    if start is None:
        raise SystemExit(f"{name}: no summary table (a table whose header starts with '| claim |')")
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return " ".join(paragraph), lines[start:end]


def verdicts(table: list[str], name: str) -> list[tuple[str, str, str]]:
    """(claim, protocol, verdict) of every row of a claims table: the verdict is the bold cell of its ``verdict``
    column, the protocol its ``protocol`` column ('' when there is none)."""
    header = _cells(table[0])
    if "verdict" not in header:
        raise SystemExit(f"{name}: the claims table has no 'verdict' column (columns: {header})")
    col, pcol = header.index("verdict"), header.index("protocol") if "protocol" in header else None
    out = []
    for line in table[2:]:
        cells = _cells(line)
        found = re.fullmatch(r"\*\*(.+?)\*\*", cells[col]) if col < len(cells) else None
        if found is None or found.group(1) not in VERDICTS:
            raise SystemExit(f"{name}: row {cells[0]!r}: expected a bold verdict ({', '.join(VERDICTS)}) in column "
                             f"'verdict', got {cells[col] if col < len(cells) else 'nothing'!r}")
        out.append((cells[0], cells[pcol] if pcol is not None else "", found.group(1)))
    return out


def counts(results: Path = RESULTS) -> dict[str, dict[str, int]]:
    """Group → verdict → how many claims read it, over the three results files (groups in file order)."""
    out: dict[str, dict[str, int]] = {}
    for _, name in FILES:
        _, table = extract((results / name).read_text(), name)
        for claim, protocol, verdict in verdicts(table, name):
            group = out.setdefault(GROUPS[name](claim, protocol), dict.fromkeys(VERDICTS, 0))
            group[verdict] += 1
    return out


def headline(results: Path = RESULTS, link: str | None = "docs/benchmarks/claims.md") -> str:
    """The table of verdict counts per group of claims, with a total row (and a line linking ``link``)."""
    found = counts(results)
    shown = [v for v in VERDICTS if any(c[v] for c in found.values())]
    rows = [f"| claims | {' | '.join(shown)} | all |", "|---|" + "---:|" * (len(shown) + 1)]
    total = dict.fromkeys(shown, 0)
    for group, c in found.items():
        rows.append(f"| {group} | " + " | ".join(str(c[v]) for v in shown) + f" | {sum(c.values())} |")
        for v in shown:
            total[v] += c[v]
    rows.append("| **all** | " + " | ".join(f"**{total[v]}**" for v in shown) + f" | **{sum(total.values())}** |")
    more = ["", f"Every claim, its change and its interval: [{link}]({link})."] if link else []
    return "\n".join([HEADLINE[0], *rows, *more, HEADLINE[1]])


def summary(results: Path = RESULTS) -> str:
    """The docs page's block: the headline, then each results file's command, wall time and claims table."""
    out = [SUMMARY[0], "", headline(results, None), ""]
    for title, name in FILES:
        regen, table = extract((results / name).read_text(), name)
        link = f"reproduction/results/{name}"
        out += [f"## {title}", "", f"From [`{name}`]({link}). {regen}", "", *table, ""]
    out.append(SUMMARY[1])
    return "\n".join(out)


def updated(text: str, block: str, markers: tuple[str, str], name: str) -> str:
    """``text`` with the block between ``markers`` replaced by ``block`` (which carries the markers)."""
    start, end = markers
    if start not in text or end not in text:
        raise SystemExit(f"{name} has no {start} … {end} block")
    head, rest = text.split(start, 1)
    return head + block + rest.split(end, 1)[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when README.md or the docs page is out of date")
    ap.add_argument("--readme", default=str(README))
    ap.add_argument("--page", default=str(PAGE))
    ap.add_argument("--results", default=str(RESULTS))
    args = ap.parse_args(argv)
    results = Path(args.results)
    stale = []
    for path, block, markers in ((Path(args.readme), headline(results), HEADLINE),
                                 (Path(args.page), summary(results), SUMMARY)):
        text = path.read_text()
        new = updated(text, block, markers, path.name)
        if new == text:
            continue
        if args.check:
            stale.append(str(path))
        else:
            path.write_text(new)
            print(f"updated {path}")
    if stale:
        print(f"out of date: {', '.join(stale)}: run python benchmarks/reproduction/summary.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
