"""The package's import graph follows the layer map in CONTRIBUTING.md.

Every module of ``faircl`` is parsed (not imported); each ``import faircl...`` / ``from faircl... import`` /
relative import is resolved to a module and checked against the layers:

    _checks, utils  ->  losses, mining, metrics  ->  models  ->  data  ->  methods, checkpoints  ->  eval  ->  runs
    ->  bench  ->  cli, demo, testing

A module may import its own layer and the layers to its left, never one to its right; no two modules, and no two
packages (through any of their modules), may import each other, directly or through a longer cycle; and a ``faircl`` import inside a function needs a ``# deferred:`` comment
on its line saying which optional heavy dependency it defers.

An import by name counts as an import: ``importlib.import_module("faircl.x")`` and a string naming a faircl module or
a ``"faircl.x:function"`` target (a run pool's preload list, a launcher's target, a table of lazily imported names).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "faircl"
#: a module or ``module:function`` named in a string
_NAMED = re.compile(r"faircl(\.[A-Za-z_][A-Za-z0-9_]*)+(:[A-Za-z_][A-Za-z0-9_]*)?")

LAYERS: dict[str, int] = {
    "_checks": 0, "utils": 0,
    "losses": 1, "mining": 1, "metrics": 1,
    "models": 2,
    "data": 3,
    "methods": 4, "checkpoints": 4,
    "eval": 5,
    "runs": 6,
    "bench": 7,
    "cli": 8, "demo": 8, "testing": 8, "__main__": 8,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) < 2:  # the package root
        return None
    if parts[1] not in LAYERS:
        raise AssertionError(f"{module}: top-level part {parts[1]!r} has no layer; add it to LAYERS and CONTRIBUTING.md")
    return LAYERS[parts[1]]


def _resolve(target: str, known: dict[str, Path]) -> str:
    """The longest known module that ``target`` (a module or ``module.name``) starts with."""
    parts = target.split(".")
    while parts:
        name = ".".join(parts)
        if name in known:
            return name
        parts.pop()
    return target


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, known: dict[str, Path], lines: list[str]) -> None:
        self.module, self.is_package, self.known, self.lines = module, is_package, known, lines
        self.edges: list[tuple[str, int, bool]] = []  # (imported module, line, inside a function)
        self._depth = 0

    def _function(self, node: ast.AST) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _add(self, target: str, node: ast.AST) -> None:
        if target == "faircl" or target.startswith("faircl."):
            self.edges.append((_resolve(target, self.known), node.lineno, self._depth > 0))

    def visit_Constant(self, node: ast.Constant) -> None:
        """A string that names a faircl module (``"faircl.runs.engine"``, ``"faircl.cli.trial:run_seed"``): an import
        by name, counted as one made where the string is used (a function's: deferred, no comment needed)."""
        if isinstance(node.value, str) and _NAMED.fullmatch(node.value):
            self.edges.append((_resolve(node.value.split(":")[0], self.known), node.lineno, False))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.module.split(".")
            if not self.is_package:
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        for alias in node.names:
            self._add(f"{prefix}.{alias.name}", node)


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    known = _modules()
    graph: dict[str, set[str]] = {m: set() for m in known}
    local_imports: list[str] = []
    for module, path in known.items():
        lines = path.read_text().splitlines()
        visitor = _Imports(module, path.name == "__init__.py", known, lines)
        visitor.visit(ast.parse("\n".join(lines), filename=str(path)))
        for target, lineno, local in visitor.edges:
            if target != module and target in known:
                graph[module].add(target)
            entry = f"{path.relative_to(ROOT.parent)}:{lineno}: {lines[lineno - 1].strip()}"
            if local and "# deferred:" not in lines[lineno - 1] and entry not in local_imports:
                local_imports.append(entry)
    return graph, local_imports


def test_every_module_has_a_layer():
    for module in _modules():
        _layer(module)


def test_no_import_runs_up_the_layers():
    graph, _ = _graph()
    upward = []
    for module, targets in graph.items():
        here = _layer(module)
        for target in targets:
            there = _layer(target)
            if here is not None and there is not None and there > here:
                upward.append(f"{module} (layer {here}) imports {target} (layer {there})")
    assert not upward, "imports that run up the layer map:\n" + "\n".join(sorted(upward))


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def strongconnect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in list(edges):
        if v not in index:
            strongconnect(v)
    return cycles


def _package_graphs(graph: dict[str, set[str]], packages: set[str]) -> dict[str, dict[str, set[str]]]:
    """For every package, the import graph between its direct children (modules and subpackages), each subpackage
    standing for every module inside it: ``faircl.losses`` -> ``faircl.mining`` when any module of the one imports
    any module of the other. Imports of the package itself (its ``__init__``) are left out."""
    out: dict[str, dict[str, set[str]]] = {}
    for pkg in packages:
        prefix = pkg + "."

        def unit(module: str) -> str | None:
            if not module.startswith(prefix):
                return None
            return prefix + module[len(prefix):].split(".")[0]

        edges: dict[str, set[str]] = {}
        for module, targets in graph.items():
            here = unit(module)
            if here is None:
                continue
            edges.setdefault(here, set())
            for target in targets:
                there = unit(target)
                if there is not None and there != here:
                    edges[here].add(there)
        out[pkg] = edges
    return out


def test_no_import_cycles():
    graph, _ = _graph()
    # A package's __init__ re-exporting its submodules is not a cycle with them: drop package -> own child edges
    # when looking for cycles, but keep child -> package edges (a submodule importing its own package __init__ is).
    edges = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in graph.items()}
    cycles = _cycles(edges)
    assert not cycles, "modules that import each other: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_package_import_cycles():
    """No two packages (or a package and a module beside it) import each other through any of their modules:
    ``faircl.losses`` and ``faircl.mining`` may not both reach into the other, even when no module cycle forms."""
    graph, _ = _graph()
    packages = {m for m, p in _modules().items() if p.name == "__init__.py"}
    found = [f"{pkg}: " + " <-> ".join(c) for pkg, edges in sorted(_package_graphs(graph, packages).items())
             for c in _cycles(edges)]
    assert not found, "packages that import each other:\n" + "\n".join(found)


def test_the_package_check_can_fail():
    """The graph of the old layout (losses.mined -> mining -> losses.pairs) is a package cycle without any module
    cycle; a one-way import is not."""
    graph = {"faircl.losses": {"faircl.losses.pairs"}, "faircl.losses.pairs": set(),
             "faircl.losses.mined": {"faircl.mining", "faircl.losses.pairs"},
             "faircl.mining": {"faircl.losses.pairs"}}
    assert not _cycles({m: {t for t in ts if not t.startswith(m + ".")} for m, ts in graph.items()})
    edges = _package_graphs(graph, {"faircl", "faircl.losses"})
    assert _cycles(edges["faircl"]) == [["faircl.losses", "faircl.mining"]] and not _cycles(edges["faircl.losses"])
    graph["faircl.losses.mined"].discard("faircl.mining")
    assert not _cycles(_package_graphs(graph, {"faircl"})["faircl"])


def test_no_function_local_faircl_imports():
    _, local_imports = _graph()
    assert not local_imports, (
        "function-local faircl imports (move them to the top of the module, or mark the line with "
        "'# deferred: <optional dependency>' when the import defers one):\n" + "\n".join(local_imports)
    )


def test_no_file_over_500_lines():
    long = [f"{p.relative_to(ROOT.parent)}: {n}" for p in ROOT.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 500]
    assert not long, "files over 500 lines: " + ", ".join(long)


@pytest.mark.parametrize("source, expect", [
    ("from faircl.methods import CE\n", "upward"),
    ("def f():\n    from faircl.losses import supcon_loss\n", "local"),
    ("def f():\n    from faircl.losses import supcon_loss  # deferred: nothing heavy\n", None),
])
def test_the_checks_can_fail(source, expect):
    """The visitor sees an upward import and an unmarked function-local import in a lower-layer module."""
    known = _modules()
    visitor = _Imports("faircl.losses.example", False, known, source.splitlines())
    visitor.visit(ast.parse(source))
    lines = source.splitlines()
    upward = [t for t, _, _ in visitor.edges if (_layer(t) or 0) > 1]
    local = [ln for _, ln, loc in visitor.edges if loc and "# deferred:" not in lines[ln - 1]]
    if expect == "upward":
        assert upward and not local
    elif expect == "local":
        assert local and not upward
    else:
        assert not upward and not local
