"""The README's results summary is the summary tables of the results files (benchmarks/readme_summary.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import readme_summary  # noqa: E402


def test_readme_summary_is_up_to_date(capsys):
    assert readme_summary.main(["--check"]) == 0, capsys.readouterr().err


def test_extract_takes_the_regenerate_line_and_the_first_table():
    md = ("# T\n\nRegenerate: `x`\nWall time: 1 min.\n\ntext\n\n| claim | protocol |\n|---|---|\n| a | b |\n\n"
          "| other | table |\n|---|---|\n")
    regen, table = readme_summary.extract(md, "t.md")
    assert regen == "Regenerate: `x` Wall time: 1 min."
    assert table == ["| claim | protocol |", "|---|---|", "| a | b |"]
    with pytest.raises(SystemExit, match="no summary table"):
        readme_summary.extract("Regenerate: x\n", "t.md")
    with pytest.raises(SystemExit, match="no 'Regenerate' line"):
        readme_summary.extract("| claim |\n", "t.md")


def test_out_of_date_readme_is_reported(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{readme_summary.START}\nold\n{readme_summary.END}\n")
    assert readme_summary.main(["--check", "--readme", str(readme)]) == 1
    assert readme_summary.main(["--readme", str(readme)]) == 0
    assert readme_summary.main(["--check", "--readme", str(readme)]) == 0
    assert "| claim |" in readme.read_text() and "\nold\n" not in readme.read_text()
