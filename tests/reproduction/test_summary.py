"""The README's headline and the claims page are counted and copied from the reproduction results files
(benchmarks/reproduction/summary.py)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks" / "reproduction"))

import summary  # noqa: E402

TABLE = "| claim | protocol | Δ [95% CI] | verdict | control |\n|---|---|---|---|---|\n"


def _results(folder: Path, text_rows: list[tuple[str, str, str]]) -> Path:
    """A results folder: the real vision and embedding files, a text file with the given (claim, protocol, verdict)."""
    folder.mkdir()
    for _, name in summary.FILES[1:]:
        shutil.copy(summary.RESULTS / name, folder / name)
    rows = "".join(f"| {c} | {p} | -1.0 [-2.0, +0.0] | **{v}** | untestable |\n" for c, p, v in text_rows)
    (folder / "text_bench.md").write_text(f"# t\n\nRegenerate: `x`\nWall time: 1 min.\n\n{TABLE}{rows}\n| other |\n")
    return folder


def test_readme_and_page_are_up_to_date(capsys):
    assert summary.main(["--check"]) == 0, capsys.readouterr().err


def test_counts_are_the_verdicts_of_the_files(tmp_path):
    results = _results(tmp_path / "r", [("A lowers gap vs CE", "synthbios_minilm", "holds"),
                                        ("B lowers gap vs CE", "synthbios_minilm", "holds"),
                                        ("A lowers gap vs CE", "synthbios_minilm_dto", "contradicted")])
    found = summary.counts(results)
    paper, dto = found["Text, each paper's own selection"], found["Text, fairlib's DTO selection (`_dto` protocols)"]
    assert paper["holds"] == 2 and sum(paper.values()) == 2 and dto == {**dict.fromkeys(summary.VERDICTS, 0),
                                                                          "contradicted": 1}
    null = found["Embeddings, the untouched encoder (a null method: must not hold)"]
    assert null["holds"] == 0 and sum(null.values()) == 6
    head = summary.headline(results)
    assert "| Text, each paper's own selection | 2 | 0 |" in head and len(head.splitlines()) <= 14


def test_a_row_without_a_verdict_is_named(tmp_path):
    results = _results(tmp_path / "r", [("A lowers gap vs CE", "synthbios_minilm", "maybe")])
    with pytest.raises(SystemExit, match=r"text_bench\.md: row 'A lowers gap vs CE': expected a bold verdict"):
        summary.counts(results)


def test_extract_takes_the_regenerate_line_and_the_first_table():
    md = ("# T\n\nRegenerate: `x`\nWall time: 1 min.\n\ntext\n\n| claim | protocol |\n|---|---|\n| a | b |\n\n"
          "| other | table |\n|---|---|\n")
    regen, table = summary.extract(md, "t.md")
    assert regen == "Regenerate: `x` Wall time: 1 min."
    assert table == ["| claim | protocol |", "|---|---|", "| a | b |"]
    with pytest.raises(SystemExit, match="no summary table"):
        summary.extract("Regenerate: x\n", "t.md")
    with pytest.raises(SystemExit, match="no 'Regenerate' line"):
        summary.extract("| claim |\n", "t.md")


def test_out_of_date_copies_are_reported_and_rewritten(tmp_path):
    results = _results(tmp_path / "r", [("A lowers gap vs CE", "synthbios_minilm", "does not hold")])
    readme, page = tmp_path / "README.md", tmp_path / "claims.md"
    readme.write_text(f"# x\n{summary.HEADLINE[0]}\nold\n{summary.HEADLINE[1]}\nrest\n")
    page.write_text(f"# y\n{summary.SUMMARY[0]}\nold\n{summary.SUMMARY[1]}\n")
    args = ["--readme", str(readme), "--page", str(page), "--results", str(results)]
    assert summary.main(["--check", *args]) == 1
    assert summary.main(args) == 0
    assert summary.main(["--check", *args]) == 0
    text = readme.read_text()
    assert "\nold\n" not in text and text.endswith("rest\n")
    assert "| Text, each paper's own selection | 0 | 1 |" in text  # holds 0, does not hold 1
    assert "A lowers gap vs CE" in page.read_text() and "## Vision" in page.read_text()
    readme.write_text("# no block\n")
    with pytest.raises(SystemExit, match="README.md has no <!-- claims-headline:start -->"):
        summary.main(args)
