"""The examples in the docstrings of faircl.losses and faircl.metrics run as doctests (torchmetrics style)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
import torch

import faircl.losses
import faircl.metrics

#: Fewer examples than this means some were deleted or stopped being collected.
MIN_DOCSTRINGS_WITH_EXAMPLES = 41


def _modules() -> list[str]:
    names = []
    for pkg in (faircl.losses, faircl.metrics):
        names.append(pkg.__name__)
        names += [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]
    return sorted(names)


def _doctests(name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    # Only the docstrings defined in this module (re-exports are collected where they are defined).
    return [t for t in finder.find(module, name, module=module) if t.examples]


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name):
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    torch.manual_seed(0)
    for test in _doctests(name):
        runner.run(test, out=lambda s: None)
    # Rerun verbosely on failure so the report shows the expected and the actual output.
    results = runner.summarize(verbose=False)
    if results.failed:
        report: list[str] = []
        verbose = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
        for test in _doctests(name):
            verbose.run(test, out=report.append)
        pytest.fail("".join(report))


def test_examples_are_collected():
    tests = [t for name in _modules() for t in _doctests(name)]
    examples = sum(len(t.examples) for t in tests)
    assert len(tests) >= MIN_DOCSTRINGS_WITH_EXAMPLES, [t.name for t in tests]
    # Every public loss function has an example.
    documented = {t.name.rsplit(".", 1)[-1] for t in tests}
    for fn in ("supcon_loss", "fcl_loss", "cs_infonce_loss", "nt_xent_loss", "triplet_margin_loss", "MarginLoss",
               "ccd_bias_loss", "GroupFairness", "eo_gap", "tpr_gap_rms", "GroupRecallAtK", "CCEDGap"):
        assert fn in documented, fn
    assert examples >= 150, examples
