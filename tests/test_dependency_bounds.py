"""constraints-lowest.txt (what the CI lowest-versions pass installs) pins exactly the lower bounds pyproject.toml
declares, for the dependencies and every extra; the generator refuses a requirement without a floor."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("lowest_constraints", REPO / ".ci" / "lowest_constraints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _committed_pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "constraints-lowest.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            assert name not in pins, f"{name} pinned twice"
            pins[name] = version
    return pins


def _declared_floors() -> dict[str, str]:
    """The floors read straight off pyproject.toml, independently of the generator: ``>=X`` or ``==X``."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    floors = {}
    for req in project["dependencies"] + [r for group in project["optional-dependencies"].values() for r in group]:
        name = re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", req).group(0)).lower()
        floors[name] = re.search(r"(?:>=|==)\s*([^,;\s]+)", req).group(1)
    return floors


def test_committed_constraints_equal_the_declared_lower_bounds():
    committed, declared = _committed_pins(), _declared_floors()
    assert committed == declared, (
        f"constraints-lowest.txt disagrees with pyproject.toml: only in the file {set(committed) - set(declared)}, "
        f"only in pyproject {set(declared) - set(committed)}, differing "
        f"{ {k: (committed[k], declared[k]) for k in set(committed) & set(declared) if committed[k] != declared[k]} }"
        "; run: python .ci/lowest_constraints.py")
    assert _generator().main(["--check"]) == 0


def test_a_changed_bound_is_caught(tmp_path):
    gen = _generator()
    text = (REPO / "pyproject.toml").read_text()
    assert '"lightning>=' in text
    moved = tmp_path / "pyproject.toml"
    moved.write_text(re.sub(r'"lightning>=[^,"]+', '"lightning>=2.5.1', text))
    assert gen.lowest_pins(moved)["lightning"] == "2.5.1"
    assert gen.render(gen.lowest_pins(moved)) != (REPO / "constraints-lowest.txt").read_text()


@pytest.mark.parametrize(("requirement", "expected"), [
    ("torch>=2.2,<3", ("torch", "2.2")),
    ("jsonargparse[signatures]>=4.27.7,<5", ("jsonargparse", "4.27.7")),
    ("wn==0.0.23", ("wn", "0.0.23")),
    ("Scikit_Learn >= 1.3 ; python_version >= '3.10'", ("scikit-learn", "1.3")),
    ("rich<16,>=13", ("rich", "13")),
])
def test_lower_bound_of_a_requirement(requirement, expected):
    assert _generator().lower_bound(requirement) == expected


@pytest.mark.parametrize("requirement", ["tqdm", "numpy<3", "torch>=2.2,>=2.3", "foo==1.*"])
def test_a_requirement_without_one_floor_is_refused(requirement):
    with pytest.raises(ValueError, match="lower bound"):
        _generator().lower_bound(requirement)


def test_installed_versions_are_compared_by_release():
    gen = _generator()
    assert gen._release("2.4") == gen._release("2.4.0") == gen._release("2.4.0+cpu")
    assert gen._release("2.4.1") != gen._release("2.4")
    assert gen.installed_mismatches({"pytest": "0.0.1"})[0].startswith("pytest: installed ")
    assert gen.installed_mismatches({"no-such-package-xyz": "1"}) == ["no-such-package-xyz: not installed (want 1)"]
