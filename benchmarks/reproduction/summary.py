"""Copy the summary tables of the reproduction results files into the README's results section.

    .venv/bin/python benchmarks/readme_summary.py           # rewrite the block in README.md
    .venv/bin/python benchmarks/readme_summary.py --check   # exit 1 when README.md is out of date

The block between ``<!-- results-summary:start -->`` and ``<!-- results-summary:end -->`` is replaced by, for each
of ``text_bench.md``, ``vision_bench.md`` and ``embedding_bench.md`` (the benchmarks as ``faircl bench``
invocations, each claim beside the verdict of the script that preceded it): its regenerating command and
wall-time line, and its summary table (the first table after the title) as it stands in the file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
FILES = (("Text", "text_bench.md"), ("Vision", "vision_bench.md"), ("Embeddings", "embedding_bench.md"))
START, END = "<!-- results-summary:start -->", "<!-- results-summary:end -->"


def extract(md: str, name: str) -> tuple[str, list[str]]:
    """The ``Regenerate`` paragraph (command and wall time) and the first markdown table of a results file."""
    lines = md.splitlines()
    at = next((i for i, ln in enumerate(lines[:12]) if ln.startswith("Regenerate")), None)
    if at is None:
        raise SystemExit(f"{name}: no 'Regenerate' line among the first 12 lines")
    paragraph = [lines[at]]
    for ln in lines[at + 1:]:  # the paragraph it opens (e.g. a wall-time line below it)
        if not ln.strip() or ln.startswith(("#", "|")):
            break
        paragraph.append(ln.strip())
    regen = " ".join(paragraph)
    start = next((i for i, ln in enumerate(lines) if ln.startswith("| claim |")), None)
    if start is None:
        raise SystemExit(f"{name}: no summary table (a table whose header starts with '| claim |')")
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return regen, lines[start:end]


def block(results: Path = RESULTS) -> str:
    out = [START, ""]
    for title, name in FILES:
        regen, table = extract((results / name).read_text(), name)
        out += [f"**{title}** ([`benchmarks/results/{name}`](benchmarks/results/{name})). {regen}", "", *table, ""]
    out.append(END)
    return "\n".join(out)


def updated(readme: str, new_block: str) -> str:
    if START not in readme or END not in readme:
        raise SystemExit(f"README.md has no {START} … {END} block")
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    return head + new_block + tail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when README.md differs from the results files")
    ap.add_argument("--readme", default=str(REPO / "README.md"))
    args = ap.parse_args(argv)
    path = Path(args.readme)
    text = path.read_text()
    new = updated(text, block())
    if args.check:
        if new != text:
            print(f"{path} is out of date: run python benchmarks/readme_summary.py", file=sys.stderr)
            return 1
        return 0
    path.write_text(new)
    print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
