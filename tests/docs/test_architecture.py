"""docs/architecture.md's tree is the real tree: every package of faircl/ (a folder with ``__init__.py``) is in it,
and every file or folder it names exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "architecture.md"


def tree_entries(text: str) -> list[str]:
    """The paths the tree names, relative to the repository: the first code block under ``## Layout``, one entry a
    line (its first word), two spaces of indent per level below the folder (a name ending in ``/``) above it."""
    layout = text.split("\n## Layout", 1)
    if len(layout) < 2:
        raise ValueError("architecture.md: no '## Layout' section")
    block = re.search(r"```\n(.*?)```", layout[1], re.S)
    if block is None:
        raise ValueError("architecture.md: no code block under '## Layout'")
    stack: list[str] = []  # the folders above the current line, one per level
    out = []
    for number, line in enumerate(block.group(1).splitlines(), 1):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent % 2 or indent // 2 > len(stack):
            raise ValueError(f"architecture.md: tree line {number} is indented {indent} spaces under "
                             f"{'/'.join(stack) or 'the repository'}: expected a multiple of 2, at most one level "
                             f"deeper than the line above")
        stack = stack[:indent // 2]
        name = line.split()[0]
        path = "/".join([*stack, name.rstrip("/")])
        out.append(path + ("/" if name.endswith("/") else ""))
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
    return out


def problems(text: str, repo: Path) -> list[str]:
    """What is wrong with the tree of ``text`` against the files under ``repo`` ([] when nothing)."""
    entries = tree_entries(text)
    out = []
    missing = [e for e in entries if not (repo / e).exists()]
    if missing:
        out.append(f"architecture.md names what does not exist: {missing}")
    wrong_kind = [e for e in entries if (repo / e).exists() and e.endswith("/") != (repo / e).is_dir()]
    if wrong_kind:
        out.append(f"architecture.md: a folder without '/' or a file with it: {wrong_kind}")
    packages = sorted(p.parent.relative_to(repo).as_posix() + "/" for p in (repo / "faircl").rglob("__init__.py")
                      if "__pycache__" not in p.parts)
    absent = [p for p in packages if p not in entries]
    if absent:
        out.append(f"packages missing from architecture.md's tree: {absent}")
    return out


def test_every_package_is_in_the_tree_and_every_entry_exists():
    found = problems(PAGE.read_text(), REPO)
    assert not found, "\n".join(found)
    assert {"faircl/mining/", "faircl/bench/", "faircl/cli/"} <= set(tree_entries(PAGE.read_text()))


def test_the_check_finds_what_is_planted(tmp_path):
    for name in ("faircl/__init__.py", "faircl/bench/__init__.py", "faircl/bench/spec.py",
                 "faircl/mining/__init__.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    planted = ("# A\n\n## Layout\n\n```\nfaircl/\n  bench/             x\n    spec.py          y\n"
               "  cli/               z\n    gone.py          w\n```\n")
    assert tree_entries(planted) == ["faircl/", "faircl/bench/", "faircl/bench/spec.py", "faircl/cli/",
                                     "faircl/cli/gone.py"]
    assert problems(planted, tmp_path) == [
        "architecture.md names what does not exist: ['faircl/cli/', 'faircl/cli/gone.py']",
        "packages missing from architecture.md's tree: ['faircl/mining/']"]
    fixed = planted.replace("  cli/               z\n    gone.py          w\n", "  mining/  m\n")
    assert problems(fixed, tmp_path) == []
    assert problems(fixed.replace("spec.py ", "spec.py/"), tmp_path) == [
        "architecture.md: a folder without '/' or a file with it: ['faircl/bench/spec.py/']"]
    with pytest.raises(ValueError, match="line 3 is indented 6 spaces"):
        tree_entries("\n## Layout\n```\nfaircl/\n  bench/\n      spec.py\n```\n")
    with pytest.raises(ValueError, match="no '## Layout' section"):
        tree_entries("# nothing\n")
