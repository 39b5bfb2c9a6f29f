"""MkDocs hook: each method page's cost and benchmark findings, taken from the results files at build time.

For every method in :data:`METHOD_ROWS` the hook writes ``generated/results/<Method>.md`` (into a temporary folder
added to the ``pymdownx.snippets`` base paths), which a method page includes with
``--8<-- "generated/results/<Method>.md"``. The snippet holds, straight from the results folders of
``benchmarks/performance/`` and ``benchmarks/reproduction/``:

- the rows of the overhead tables (``overhead*.md``) for CE and the method, under the table's own header;
- the rows of the benchmark tables (``*_bench.md``: the ``faircl bench`` record, the tables whose header starts with
  ``| claim |``) whose claim names the method.

Nothing is copied by hand: regenerating a results file changes the pages at the next build. A method without rows
says so. Run ``python docs/hooks.py ConFair`` to print one snippet.

It also typesets the equations (``$...$`` and ``$$...$$``, marked up by ``pymdownx.arithmatex``) as MathML at build
time with ``latex2mathml``, so the pages need no script from the network to show them.
"""

from __future__ import annotations

import html
import re
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the results folders read: the performance benchmarks' (overhead) and the reproduction benchmarks' (claims)
RESULTS = (REPO / "benchmarks" / "performance" / "results", REPO / "benchmarks" / "reproduction" / "results")
OVERHEAD_GLOB = "overhead*.md"
#: the benchmark record: ``faircl bench`` invocations (``benchmarks/reproduction/*_bench.py``)
BENCH_FILES = ("text_bench.md", "vision_bench.md", "embedding_bench.md")
#: the record of the scripts that preceded ``faircl bench`` (linked from every page, not parsed)
ARCHIVE = REPO / "benchmarks" / "reproduction" / "results" / "archive.md"
#: Method → (regex for the first cell of an overhead / per-protocol row, regex for a summary claim, note).
METHOD_ROWS: dict[str, tuple[str, str, str]] = {
    "CE": (r"^CE$", r"\bvs CE\b", "CE is the baseline of these claims (each Δ is the method's value minus CE's)."),
    "ConFair": (r"^(ConFair|Con_)", r"\bCon(Fair\b|_\*)", ""),
    "TwoStageCL": (r"^TwoStageCL\b", r"\bTwoStageCL\b", ""),
    "OneStageCL": (r"^OneStageCL\b", r"\bOneStageCL\b", ""),
    "Adversarial": (r"^Adv(ersarial)?\b", r"\bAdv(ersarial)?\b", ""),
    "DiverseAdversarial": (r"^DiverseAdv", r"\bDiverseAdv", ""),
    "INLP": (r"^INLP\b", r"\bINLP\b", ""),
    "DML": (r"^(DML|Margin)", r"\bvs DML\b", "DML (margin loss, distance-weighted mining) is the baseline of the "
            "PARADE claims (each Δ is PARADE's value minus DML's)."),
    "PARADE": (r"^PARADE\b", r"\bPARADE\b", ""),
    "FairSamplingSimCLR": (r"^FairSampling", r"FairSampling", ""),
    "SimCLR": (r"^SimCLR$", r"\bvs SimCLR\b", "SimCLR is the baseline of these claims (each Δ is the method's "
               "value minus SimCLR's)."),
    "CCD": (r"^CCD\b", r"\bCCD\b", ""),
}


def _cells(line: str) -> list[str]:
    """The cells of a table row (an escaped ``\\|`` stays inside its cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def _first_cell(line: str) -> str:
    return _cells(line)[0].strip("*` ")


def tables(md: str) -> list[tuple[str, list[str]]]:
    """Every Markdown table of ``md`` as (the last heading above it, its lines)."""
    out: list[tuple[str, list[str]]] = []
    lines = md.splitlines()
    context, i = "", 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|\s*$", lines[i + 1]):
            end = i
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            out.append((context, lines[i:end]))
            i = end
            continue
        if ln.startswith("#"):
            context = ln.strip()
        i += 1
    return out


def _folders(results: Path | tuple[Path, ...]) -> tuple[Path, ...]:
    return (results,) if isinstance(results, Path) else tuple(results)


def _find(name: str, results: Path | tuple[Path, ...]) -> Path:
    """The results file ``name`` in the first of the folders that has it (the last folder's path when none has)."""
    folders = _folders(results)
    return next((f / name for f in folders if (f / name).is_file()), folders[-1] / name)


def overhead_files(results: Path | tuple[Path, ...] = RESULTS) -> list[str]:
    """The overhead results files present, by name."""
    return sorted({p.name for f in _folders(results) for p in f.glob(OVERHEAD_GLOB)})


def _link(path: Path) -> str:
    """A link from a method page to a results file (its place under ``docs/benchmarks/``, which links each results
    folder at the same path as in the repository)."""
    try:
        target = "../" + path.resolve().relative_to(REPO.resolve()).as_posix()
    except ValueError:  # a folder outside the repository (a test's)
        target = path.name
    return f"[`{path.name}`]({target})"


def _heading(context: str) -> str:
    """A table's context line as plain text (a Markdown heading loses its hashes)."""
    return context.lstrip("#").strip()


def cost_rows(method: str, results: Path | tuple[Path, ...] = RESULTS) -> list[str]:
    """The overhead-table rows of CE and ``method`` (with each table's header), from ``overhead*.md``."""
    row_re = re.compile(METHOD_ROWS[method][0])
    out: list[str] = []
    for name in overhead_files(results):
        path = _find(name, results)
        for context, table in tables(path.read_text()):
            mine = [ln for ln in table[2:] if row_re.search(_first_cell(ln))]
            if not mine:
                continue
            base = [ln for ln in table[2:] if _first_cell(ln) == "CE" and ln not in mine]
            out += [f"From {_link(path)}: {_heading(context)}", "", *table[:2], *base, *mine, ""]
    return out


def finding_rows(method: str, results: Path | tuple[Path, ...] = RESULTS) -> list[str]:
    """The rows of the benchmark tables (``*_bench.md``) whose claim names ``method``, under each table's header."""
    claim_re, note = re.compile(METHOD_ROWS[method][1]), METHOD_ROWS[method][2]
    out: list[str] = []
    for name in BENCH_FILES:
        path = _find(name, results)
        if not path.is_file():
            continue
        for _, table in tables(path.read_text()):
            if _cells(table[0])[0].lower() != "claim":
                continue
            mine = [ln for ln in table[2:] if claim_re.search(_cells(ln)[0])]
            if mine:
                out += [f"Claims judged in {_link(path)}{': ' + note if note else ''}", "", *table[:2], *mine, ""]
    return out


def snippet(method: str, results: Path | tuple[Path, ...] = RESULTS) -> str:
    """The Markdown included by the method's page (cost, then findings)."""
    measured = ", ".join(_link(_find(n, results)) for n in overhead_files(results))
    cost = cost_rows(method, results) or [
        f"Not measured yet: no row for {method} in {measured or 'the overhead results'}.", ""]
    found = finding_rows(method, results) or [
        f"The reproduction benchmarks ({', '.join(_link(_find(n, results)) for n in BENCH_FILES)}) test no claim "
        f"about {method}.", ""]
    frozen = [f"The verdicts of the scripts that ran these benchmarks before `faircl bench` are kept in "
              f"{_link(ARCHIVE).replace(f'`{ARCHIVE.name}`', 'the migration record')}.", ""]
    return "\n".join(["### Cost relative to CE", "", *cost, "### What the reproduction benchmarks found", "",
                      *found, *frozen])


def _column(header: str, *starts: str) -> int | None:
    cells = _cells(header)
    return next((i for i, c in enumerate(cells) if c.startswith(starts)), None)


def overview(results: Path | tuple[Path, ...] = RESULTS) -> str:
    """One table over every method: its cost relative to CE and the verdicts of the claims that name it."""
    rows = ["| method | cost × CE (from `overhead*.md`) | claims tested: verdicts (from `*_bench.md`) |",
            "|---|---|---|"]
    baselines = {m for m, spec in METHOD_ROWS.items() if spec[2]}
    for method in METHOD_ROWS:
        costs = []
        row_re = re.compile(METHOD_ROWS[method][0])
        for name in overhead_files(results):
            path = _find(name, results)
            for context, table in tables(path.read_text()):
                col = _column(table[0], "× CE")
                for ln in table[2:]:
                    if col is not None and row_re.search(_first_cell(ln)):
                        costs.append(f"{_cells(ln)[col]} ({name.removesuffix('.md')})")
        verdicts: dict[str, int] = {}
        col = None
        for line in finding_rows(method, results):
            if line.startswith("| claim"):  # the bench's verdict column
                col = _column(line, "verdict")
            elif line.startswith("|") and "**" in line and col is not None:
                m = re.search(r"\*\*([^*]+)\*\*", _cells(line)[col])
                if m:
                    verdicts[m.group(1)] = verdicts.get(m.group(1), 0) + 1
        found = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items(), key=lambda kv: -kv[1])) or "none"
        if method in baselines and verdicts:
            found = f"baseline of {sum(verdicts.values())} claims"
        rows.append(f"| [{method}]({PAGES[method]}.md) | {', '.join(costs) or 'not measured'} | {found} |")
    return "\n".join(rows) + "\n"


#: Page of each method under docs/methods/ (file name without .md).
PAGES = {"CE": "ce", "ConFair": "confair", "TwoStageCL": "two_stage_cl", "OneStageCL": "one_stage_cl",
         "Adversarial": "adversarial", "DiverseAdversarial": "diverse_adversarial", "INLP": "inlp", "DML": "dml",
         "PARADE": "parade", "FairSamplingSimCLR": "fair_sampling_simclr", "SimCLR": "simclr", "CCD": "ccd"}

_TMP: list[str] = []


def on_config(config, **kwargs):
    """Write every method's snippet into a temporary folder and add it to the snippets' base paths."""
    tmp = tempfile.mkdtemp(prefix="faircl-docs-")
    _TMP.append(tmp)
    folder = Path(tmp) / "generated" / "results"
    folder.mkdir(parents=True)
    for method in METHOD_ROWS:
        (folder / f"{method}.md").write_text(snippet(method))
    (folder / "overview.md").write_text(overview())
    snippets = config["mdx_configs"].setdefault("pymdownx.snippets", {})
    base = snippets.get("base_path", ["."])
    snippets["base_path"] = [*([base] if isinstance(base, str) else base), tmp]
    return config


_MATH = re.compile(r'<(span|div) class="arithmatex">\\?(?:\\\(|\\\[)(.*?)(?:\\\)|\\\])</\1>', re.S)


def mathml(page_html: str) -> str:
    """Replace the ``arithmatex`` spans (inline) and divs (display) of a page by MathML."""
    from latex2mathml.converter import convert  # deferred: a docs-only dependency

    def one(m: re.Match) -> str:
        display = "block" if m.group(1) == "div" else "inline"
        return convert(html.unescape(m.group(2)).strip(), display=display)

    return _MATH.sub(one, page_html)


def on_page_content(page_html, **kwargs):
    return mathml(page_html)


def on_post_build(config, **kwargs):
    while _TMP:
        shutil.rmtree(_TMP.pop(), ignore_errors=True)


if __name__ == "__main__":
    for name in sys.argv[1:] or list(METHOD_ROWS):
        print(overview() if name == "overview" else snippet(name))
