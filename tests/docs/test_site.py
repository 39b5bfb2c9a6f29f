"""The documentation site: it builds with ``mkdocs build --strict``, its API reference covers every public name,
every method has a page with its configs and the benchmark rows taken from the results files, the CLI's
sub-commands are documented and the notebooks appear with their outputs."""

from __future__ import annotations

import html
import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra is not installed")


def _hooks():
    spec = importlib.util.spec_from_file_location("faircl_docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=REPO,
                          capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=600)
    took = time.perf_counter() - start
    assert proc.returncode == 0, f"mkdocs build --strict failed ({took:.0f} s):\n{proc.stdout}\n{proc.stderr}"
    assert "WARNING" not in proc.stderr, proc.stderr
    return out


def _text(page: Path) -> str:
    """The visible text of a built page, whitespace collapsed."""
    raw = re.sub(r"<script.*?</script>", " ", page.read_text(), flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", raw)))


#: The packages whose ``__all__`` the reference must cover, whatever the pages say.
REQUIRED = ("faircl.losses", "faircl.mining", "faircl.metrics", "faircl.models", "faircl.data", "faircl.methods",
            "faircl.checkpoints", "faircl.cli", "faircl.utils", "faircl._checks")


def _reference_ids(site: Path) -> set[str]:
    ids: set[str] = set()
    for page in site.rglob("index.html"):
        ids |= set(re.findall(r'id="(faircl[\w.]*)"', page.read_text()))
    return ids


def _documented_modules() -> list[str]:
    """The required packages, every module rendered by a ``:::`` directive, and every faircl.eval module."""
    names = set(REQUIRED)
    for page in [*(DOCS / "reference").glob("*.md"), *(DOCS / "methods").glob("*.md")]:
        for target in re.findall(r"^::: (faircl[\w.]*)", page.read_text(), flags=re.M):
            try:
                importlib.import_module(target)
            except ImportError:
                continue  # a class or function, not a module
            names.add(target)
    import faircl.eval

    names |= {m.name for m in pkgutil.walk_packages(faircl.eval.__path__, "faircl.eval.")
              if not m.name.rsplit(".", 1)[-1].startswith("_")}
    return sorted(names)


def test_strict_build_has_the_pages(site):
    pages = sorted(p.relative_to(site).parent.as_posix() for p in site.rglob("index.html"))
    for expected in ("guides/metrics", "guides/scaling", "guides/security", "guides/custom-method",
                     "guides/custom-datamodule", "guides/installing", "guides/cli", "guides/model-selection",
                     "methods/confair", "reference/losses", "reference/cli", "benchmarks/reproduction/results/text_bench",
                     "notebooks/01_quickstart"):
        assert expected in pages, pages


def test_every_name_in_all_is_in_the_reference(site):
    ids = _reference_ids(site)
    missing = []
    checked = 0
    for name in _documented_modules():
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            parts = name.split(".")
            # Listed under the module itself or re-exported by a parent package (faircl.data.text.X -> faircl.data.X).
            candidates = {".".join(parts[:i] + [attr]) for i in range(2, len(parts) + 1)}
            obj = getattr(module, attr, None)  # or where it is defined (a lazily imported name)
            if getattr(obj, "__module__", None) and getattr(obj, "__qualname__", None):
                candidates.add(f"{obj.__module__}.{obj.__qualname__}")
            checked += 1
            if not candidates & ids:
                missing.append(f"{name}.{attr}")
    assert checked > 200, checked
    assert not missing, "public names without a reference entry: " + ", ".join(missing)


#: The heading of docs/methods/index.md's table of the FairModule arguments every method takes.
SHARED = "Arguments every method takes"


def argument_names(source: str, heading: str = "## Arguments") -> set[str]:
    """The argument names in the first column of the table under the first heading starting with ``heading``."""
    if f"\n{heading}" not in source:
        return set()
    section = source.split(f"\n{heading}", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for row in section.splitlines():
        cells = row.split("|")
        if not row.startswith("|") or len(cells) < 3 or set(cells[1].strip()) <= set("-: "):
            continue  # not a table row, or the separator
        names |= set(re.findall(r"`(\w+)`", cells[1]))
    return names


def own_arguments(cls: type) -> list[str]:
    """The named arguments of every ``__init__`` a method class defines or inherits from another method (every
    class of its MRO below FairModule): the arguments its page must list itself."""
    from faircl.methods.base import FairModule

    names: list[str] = []
    for klass in cls.__mro__:
        if klass is FairModule or not issubclass(klass, FairModule) or "__init__" not in vars(klass):
            continue
        for param in list(inspect.signature(klass.__init__).parameters.values())[1:]:
            if param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD) and param.name not in names:
                names.append(param.name)
    return names


def test_argument_tables_parse():
    page = ("# M\n\n## Arguments and their paper names\n\nText with `not_an_arg`.\n\n| argument | paper name | meaning |\n"
            "|---|---|---|\n| `alpha` | α | uses `lr` |\n| `pos_margin`, `neg_margin` | | two |\n\nAfter `x`.\n\n"
            "## Shipped configs\n\n| `later` | | |\n")
    assert argument_names(page) == {"alpha", "pos_margin", "neg_margin"}
    assert argument_names("# M\n\n## Objective\n\n| `a` | |\n") == set()

    from faircl.methods import SimCLR
    from faircl.methods.base import FairModule

    own = own_arguments(SimCLR)  # its own fair_sampling and every FairSamplingSimCLR argument, none of FairModule's
    assert own[0] == "fair_sampling" and {"num_clusters", "probe_max_rows"} <= set(own)
    assert not set(own) & set(inspect.signature(FairModule.__init__).parameters)
    assert own_arguments(FairModule) == []


def test_shared_argument_table_lists_every_fairmodule_argument():
    from faircl.methods.base import FairModule

    listed = argument_names((DOCS / "methods" / "index.md").read_text(), f"## {SHARED}")
    params = [p.name for p in list(inspect.signature(FairModule.__init__).parameters.values())[1:]
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert len(params) >= 15, params
    for arg in params:
        assert arg in listed, f"docs/methods/index.md: FairModule argument {arg!r} is missing from '{SHARED}'"
    for arg in listed:
        assert arg in params, f"docs/methods/index.md: '{SHARED}' lists {arg!r}, which FairModule does not take"


def test_method_pages_list_every_argument():
    """Every argument named in a page's table is a real argument of the class, and every argument of the class's
    own ``__init__``s is listed (FairModule's are in the shared table, which the page must link to)."""
    from faircl.methods import METHODS
    from faircl.methods.base import FairModule

    hooks = _hooks()
    problems = []
    for name, cls in METHODS.items():
        page = f"docs/methods/{hooks.PAGES[name]}.md"
        source = (REPO / page).read_text()
        listed = argument_names(source)
        params = set()
        for klass in cls.__mro__:
            if issubclass(klass, FairModule):
                params |= set(inspect.signature(klass.__init__).parameters)
        problems += [f"{page}: documents an argument {arg!r} that {name} does not take"
                     for arg in sorted(listed - params)]
        problems += [f"{page}: argument {arg!r} of {name} is missing from the table under '## Arguments'"
                     for arg in own_arguments(cls) if arg not in listed]
        if "(index.md#arguments-every-method-takes)" not in source:
            problems.append(f"{page}: no link to '{SHARED}' (index.md#arguments-every-method-takes)")
    assert not problems, "\n".join(problems)


def _claim_table(text: str, heading: str = "## Summary") -> dict[tuple[str, str], dict[str, str]]:
    """The first table under ``heading`` of a results file: ``(claim, protocol) -> {column: cell}``."""
    lines = text.split("\n" + heading, 1)[1].split("\n## ", 1)[0].splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| claim |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    table = {}
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        row = dict(zip(header, (c.strip() for c in ln.strip("|").split("|"))))
        table[(row["claim"], row["protocol"])] = row
    return table


def test_confair_normalize_figures_are_the_results_files():
    """The ConFair page's table of ``normalize: true`` / ``false`` is the text script's Shen-selection summary rows of
    ``Con_* (l2 h, Shen)`` / ``Con_* (raw tanh h, fairlib)`` as the migration record keeps them (GAP and Leak@h: the
    mean effect; accuracy: the mean utility change of the GAP claim)."""
    page = (DOCS / "methods" / "confair.md").read_text()
    section = page.split("## `normalize`", 1)[1].split("\n## ", 1)[0]
    claims = _claim_table((REPO / "benchmarks" / "reproduction" / "results" / "archive.md").read_text(), "## Text")
    variants = {"true": "Shen: Con_* (l2 h, Shen)", "false": "Shen (fairlib's variant): Con_* (raw tanh h, fairlib)"}
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in section.splitlines() if ln.startswith("| ")]
    assert rows[0][2:] == ["`normalize: true`", "`normalize: false`"], rows[0]
    checked = 0
    for protocol, measure, *cells in rows[1:]:
        where = re.sub(r" \(\d+\)$", "", protocol) + "; shen selection"
        for value, cell in zip(("true", "false"), cells):
            metric = "GAP" if measure == "accuracy" else measure
            row = claims.get((f"{variants[value]} lowers {metric} vs CE (batch 1024)", where))
            assert row is not None, f"confair.md: no results row for normalize={value}, {metric}, {where}"
            column = "utility change" if measure == "accuracy" else "Δ (script)"
            effect = row[column].split(" [", 1)[0]  # the mean change; its interval is in the generated claims table
            assert cell == effect, f"confair.md: {protocol} {measure} normalize={value}: {cell}, the file: {effect}"
            checked += 1
    assert checked == 18, checked


def test_method_pages_have_configs_arguments_and_benchmark_rows(site):
    from faircl.methods import METHODS

    hooks = _hooks()
    assert set(hooks.PAGES) == set(METHODS), "every method needs a page (docs/hooks.py PAGES)"
    for name, cls in METHODS.items():
        page = hooks.PAGES[name]
        source = (DOCS / "methods" / f"{page}.md").read_text()
        # The benchmark snippet is included, not copied.
        assert f'--8<-- "generated/results/{name}.md"' in source, name
        text = _text(site / "methods" / page / "index.html")
        assert "Cost relative to CE" in text and "What the reproduction benchmarks found" in text, name
        snippet = hooks.snippet(name)
        claims = [hooks._cells(ln)[0] for ln in snippet.splitlines()
                  if ln.startswith("|") and "**" in ln and not ln.startswith("| claim")]
        for claim in claims:
            assert re.sub(r"\s+", " ", claim.replace("\\|", "|")) in text, (name, claim)
        cost = [ln for ln in snippet.splitlines() if ln.startswith("|") and hooks._first_cell(ln) != "CE"
                and re.search(hooks.METHOD_ROWS[name][0], hooks._first_cell(ln))]
        for row in cost[:2]:
            assert " ".join(hooks._cells(row)[:2]) in text, (name, row)
        # Every shipped config of the method is included on its page.
        for cfg in sorted((REPO / "configs" / page).glob("*.yaml")):
            assert f'--8<-- "configs/{page}/{cfg.name}"' in source, (name, cfg.name)
            assert f"{page}/{cfg.stem}" in text


def test_method_rows_come_from_the_results_files(tmp_path):
    hooks = _hooks()
    (tmp_path / "overhead.md").write_text("# t\n\n### Text\n\n| method | × CE |\n|---|---|\n| CE | 1.00 |\n"
                                          "| ConFair | 1.50 |\n| OneStageCL | 3.00 |\n")
    # A bench table: only the verdict column counts (another bold cell does not).
    (tmp_path / "text_bench.md").write_text(
        "# t\n\n| claim | Δ | verdict | wall |\n|---|---|---|---|\n"
        "| ConFair lowers tpr_gap_rms vs CE | -1.0 | **holds** | 1 min |\n"
        "| OneStageCL lowers eo_gap vs CE | +1.0 | **does not hold** | 1 min |\n"
        "| Con_* (raw h) lowers leakage_h vs CE | **-2.0** | **does not hold** | **2** min |\n")
    # Another results file in the folder is not parsed.
    (tmp_path / "text_fairness.md").write_text("# t\n\n| claim | verdict |\n|---|---|\n"
                                               "| Shen: ConFair lowers GAP vs CE | **holds** (x) |\n")
    confair = hooks.snippet("ConFair", tmp_path)
    assert "| ConFair | 1.50 |" in confair and "| CE | 1.00 |" in confair and "OneStageCL" not in confair
    assert "ConFair lowers tpr_gap_rms vs CE" in confair and "Shen: ConFair lowers GAP" not in confair
    assert "Con_* (raw h) lowers leakage_h" in confair  # the results files name ConFair's variants Con_*
    assert "archive.md" in confair  # the link to the migration record
    assert "Not measured yet" in hooks.snippet("INLP", tmp_path)
    assert "test no claim about INLP" in hooks.snippet("INLP", tmp_path)
    overview = hooks.overview(tmp_path)
    assert "| [ConFair](confair.md) | 1.50 (overhead) | 1 holds, 1 does not hold |" in overview
    assert "| [CE](ce.md) | 1.00 (overhead) | baseline of 3 claims |" in overview


def _subcommands() -> set[str]:
    """Every sub-command the ``faircl`` command dispatches: the tuples of sub-command names of the ``faircl.cli``
    modules (a tool counts once the module serving it exists) and every ``== "<name>"`` branch on the
    first argument in their sources."""
    import faircl.cli

    found: set[str] = set()
    for info in pkgutil.walk_packages(faircl.cli.__path__, "faircl.cli."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for attr in ("SUBCOMMANDS", "TRAINING", "COMMANDS", "TOOLS"):
            value = getattr(module, attr, None)
            if isinstance(value, dict):  # TOOLS: name -> the module serving it (counted once installed)
                found |= {k for k, mod in value.items() if importlib.util.find_spec(mod) is not None}
            elif isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value):
                found |= set(value)
        source = inspect.getsource(module)
        found |= set(re.findall(r'(?:argv\[0\]|command) == "(\w+)"', source))
    return found


def test_cli_subcommands_are_documented(site):
    subcommands = _subcommands()
    assert {"fit", "validate", "test", "predict", "export", "configs"} <= subcommands
    text = _text(site / "reference" / "cli" / "index.html")
    for sub in sorted(subcommands):
        assert f"faircl {sub}" in text, f"sub-command {sub!r} missing from the CLI reference (docs/reference/cli.md)"


def test_notebooks_appear_with_their_outputs(site):
    for nb in sorted((REPO / "notebooks").glob("*.ipynb")):
        page = site / "notebooks" / nb.stem / "index.html"
        assert page.is_file(), nb.name
        assert page.read_text().count("jp-OutputArea-output") > 0, f"{nb.name} shows no output"


def test_sphinx_roles_become_links_and_broken_ones_fail():
    import griffe

    spec = importlib.util.spec_from_file_location("faircl_docs_roles", DOCS / "griffe_roles.py")
    roles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roles)
    pkg = griffe.load("faircl", search_paths=[str(REPO)], resolve_aliases=False)
    obj = pkg["metrics.functional.rates.eo_gap"]
    # Relative name resolved in the object's module: an optional link.
    out = roles.rewrite("see :func:`eo_gap_from_confusion`", obj, pkg)
    assert 'identifier="faircl.metrics.functional.rates.eo_gap_from_confusion" optional' in out
    # ``~`` shows the last component.
    out = roles.rewrite(":class:`~faircl.methods.base.FairModule`", obj, pkg)
    assert "<code>FairModule</code>" in out and 'identifier="faircl.methods.base.FairModule"' in out
    # A faircl path naming nothing becomes a strict reference, which fails mkdocs build --strict.
    assert roles.rewrite(":class:`faircl.data.pairs.Nothing`", obj, pkg) == \
        "[<code>faircl.data.pairs.Nothing</code>][faircl.data.pairs.Nothing]"
    # Other libraries stay code.
    assert roles.rewrite(":class:`torchmetrics.Metric`", obj, pkg) == "<code>torchmetrics.Metric</code>"


#: Where each section of the former long README lives now (a phrase of the section that its page must keep).
README_HOMES = {
    "Set-up: two commands (constraints, GPU)": ("guides/installing.md", "constraints.txt"),
    "Offline models": ("guides/installing.md", "pretrained=False"),
    "Use: the command-line workflow": ("guides/cli.md", "faircl export  --ckpt_path"),
    "Use: exit codes": ("guides/cli.md", "FAIRCL_DEBUG=1"),
    "Use: runs": ("guides/cli.md", "lightning_logs/version_<n>/"),
    "Use: checkpoints": ("guides/cli.md", "--ckpt_path best"),
    "Use: reports": ("guides/cli.md", "report.json"),
    "Use: predictions": ("guides/cli.md", "predictions.csv"),
    "Use: names": ("guides/cli.md", "an unknown name"),
    "Use: optimisers": ("guides/cli.md", "`--optimizer.lr` is refused"),
    "Selecting models for fairness": ("guides/model-selection.md", "val/balanced_dto"),
    "In Python or a notebook (subclassing)": ("examples/custom_method.py", "super().losses(batch, out)"),
    "encoder=auto and not applicable": ("methods/index.md", "not applicable"),
    "Scaling out: DDP": ("guides/scaling.md", "gather_distributed: true"),
    "Scaling out: launchers": ("guides/scaling.md", "srun faircl fit"),
    "Scaling out: gradient cache": ("guides/scaling.md", "grad_cache_chunk: 64"),
    "Layout": ("architecture.md", "mining/ which pairs and triplets a batch trains on"),
    "Data": ("guides/data.md", "utkface_subset"),
    "Results and performance: scripts": ("benchmarks/index.md", "benchmarks/performance/loss_memory.py"),
    "Results and performance: figures": ("benchmarks/index.md", "How `GroupFairness` gets there"),
    "Results: verdict rule": ("benchmarks/index.md", "the same code path as `faircl compare`"),
    "Results: what the analysis shows": ("benchmarks/index.md", "Polish hate speech"),
    "Security and reliability": ("guides/security.md", "redirects are never followed"),
    "Environment variables": ("guides/data.md", "FAIRCL_LLM_BASE_URL"),
    "Evaluation commands": ("guides/cli.md", "python -m faircl.eval.embedding_bias"),
    "Use: faircl findml": ("guides/cli.md", "faircl findml"),
    "Scaling out: closing the process group": ("guides/scaling.md", "end_distributed()"),
    "Security: same seed, same weights": ("guides/security.md", "Same seed, same weights"),
    "Security: configs": ("guides/security.md", "yaml.safe_load"),
    "Results: timing harness": ("benchmarks/index.md", "benchmarks/performance/_timing.py"),
}


@pytest.mark.parametrize("section", sorted(README_HOMES))
def test_every_former_readme_section_has_a_home(section):
    page, phrase = README_HOMES[section]
    text = re.sub(r"\s+", " ", (DOCS / page).read_text())
    assert re.sub(r"\s+", " ", phrase) in text, f"README section {section!r} lost from docs/{page}"


def test_readme_is_short_and_links_to_the_site():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    for page in re.findall(r"\(docs/([\w/.-]+\.md)\)", readme):
        assert (DOCS / page).is_file(), page


def test_displayed_equations_lose_their_backticks():
    spec = importlib.util.spec_from_file_location("faircl_docs_roles2", DOCS / "griffe_roles.py")
    roles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roles)
    text = "For anchor i:\n\n    ``ℓ_i = −log p_i``.\n\nArgs:\n    z: ``[B, d]``\n        ``x`` continues"
    out = roles.unwrap_equations(text)
    assert "\n    ℓ_i = −log p_i.\n" in out
    assert "z: ``[B, d]``" in out and "        ``x`` continues" in out  # not a displayed block: unchanged
