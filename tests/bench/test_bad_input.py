"""Bad input to ``faircl bench`` with protocol files of one's own is one line naming the file, the key or the class and
what is accepted, exit status 2, and nothing run (no run folder, no worker): a claim on a gap that does not exist, a
datamodule that is not one, a bad key of the full protocol or of its quick variant whatever the options, ``--against``
naming the method itself, a user's class whose ``__init__`` raises or whose module does not parse (its file and
line). A valid folder of one's own passes the same checks."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

import faircl.bench.looks as looks
from faircl.bench.checks import check_bench
from faircl.bench.runner import MethodSpec, resolve_method
from faircl.bench.spec import load_suite
from faircl.cli.bench import _built_once
from faircl.cli.dispatch import main
from faircl.data import DATAMODULES
from faircl.eval.baseline import ROW_GAPS

#: a shipped quick protocol, the one a user's own folder is most likely copied from
SHIPPED = Path(str(resources.files("faircl.bench") / "protocols" / "text" / "synthbios.yaml")).read_text()

RAISES = '''\
from faircl.methods import CE


class Raising(CE):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        raise RuntimeError("no GPU for this loss")
'''

DATA = '''\
from faircl.data import SynthBios


class Raising(SynthBios):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        raise KeyError("no such split")


class Fine(SynthBios):
    pass
'''

BROKEN = "from faircl.methods import CE\n\n\nclass Mine(CE)\n    pass\n"


@pytest.fixture
def own(tmp_path, monkeypatch):
    """A folder of one's own protocols (the shipped synthbios, edited by ``edit``) and the user's modules in the
    current folder; the runs are recorded instead of started (none should be)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name, text in {"mine_method.py": RAISES, "mine_data.py": DATA, "mine_broken.py": BROKEN}.items():
        (tmp_path / name).write_text(text)
    started: list = []
    monkeypatch.setattr(looks, "run_tasks", lambda tasks, **kwargs: started.extend(tasks) or [])

    def edit(*swaps: tuple[str, str]) -> Path:
        text = SHIPPED
        for old, new in swaps:
            assert old in text, old
            text = text.replace(old, new)
        folder = tmp_path / "mine"
        folder.mkdir(exist_ok=True)
        (folder / "synthbios.yaml").write_text(text)
        return folder

    edit.started = started
    edit.root = tmp_path
    return edit


def _refused(capsys, own, folder: Path, *args: str) -> str:
    """``faircl bench`` on ``folder``: exit 2, one line (the --debug hint aside), nothing run; the line."""
    out, cache = own.root / "out", own.root / "cache"
    code = main(["bench", str(folder), *args, "--out", str(out), "--cache", str(cache)])
    err = [line for line in capsys.readouterr().err.splitlines() if line and not line.startswith("(add --debug")]
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("faircl: error: bench: ")
    assert not out.exists() and not cache.exists() and not own.started  # no run folder, no run
    return err[0]


def test_a_claim_on_a_gap_that_does_not_exist_names_the_gaps(capsys, own):
    folder = own(("{gap: tpr_gap_rms, baseline: CE", "{gap: tpr_gap, baseline: CE"))
    line = _refused(capsys, own, folder, "--method", "CE", "--quick")
    assert str(folder / "synthbios.yaml") in line and "claims[0]" in line and "'tpr_gap'" in line
    assert all(gap in line for gap in ROW_GAPS)


def test_an_unknown_datamodule_names_the_datamodules(capsys, own):
    folder = own(("class_path: SynthBios", "class_path: NoSuchData"))
    line = _refused(capsys, own, folder, "--method", "CE", "--quick")
    assert str(folder / "synthbios.yaml") in line and "data.class_path 'NoSuchData'" in line
    assert all(name in line for name in DATAMODULES) and "dotted path" in line


@pytest.mark.parametrize("swap, quick, says", [
    (("seeds: 5\n", "seeds: five\n"), True, "'seeds' must be an integer, got 'five'"),  # quick sets seeds: 3
    (("seeds: 5\n", "seeds: five\n"), False, "'seeds' must be an integer, got 'five'"),
    (("  seeds: 3\n", "  seeds: three\n"), False, "quick: 'seeds' must be an integer, got 'three'"),
    (("  seeds: 3\n", "  seedz: 3\n"), False, "quick: unknown key 'seedz'"),
])
def test_the_whole_file_is_checked_whatever_the_options(capsys, own, swap, quick, says):
    folder = own(swap)
    line = _refused(capsys, own, folder, "--method", "CE", *(["--quick"] if quick else []))
    assert f"{folder / 'synthbios.yaml'}: {says}" in line


def test_against_naming_the_method_itself_is_refused(capsys, own):
    folder = own()
    line = _refused(capsys, own, folder, "--method", "ConFair", "--against", "ConFair", "--quick")
    assert "--against ConFair" in line and "method under test" in line and "another method" in line


@pytest.mark.parametrize("swap, method, says", [
    (None, "mine_method.Raising", ["--method mine_method.Raising", "Raising.__init__ raised RuntimeError",
                                   "mine_method.py, line 7", "no GPU for this loss", "synthbios.yaml"]),
    (None, "mine_broken.Mine", ["--method 'mine_broken.Mine'", "mine_broken.py, line 4", "SyntaxError"]),
    (("class_path: SynthBios", "class_path: mine_data.Raising"), "CE",
     ["synthbios.yaml: data (mine_data.Raising)", "Raising.__init__ raised KeyError", "mine_data.py, line 7",
      "no such split"]),
    (("CE: {class_path: CE}", "CE: {class_path: mine_method.Raising}"), "ConFair",
     ["synthbios.yaml: baselines.CE (mine_method.Raising)", "Raising.__init__ raised RuntimeError",
      "mine_method.py, line 7"]),
    (("CE: {class_path: CE}", "CE: {class_path: mine_broken.Mine}"), "ConFair",
     ["synthbios.yaml: baselines.CE.class_path 'mine_broken.Mine'", "mine_broken.py, line 4", "SyntaxError"]),
])
def test_a_users_class_that_raises_or_does_not_parse_is_one_line(capsys, own, swap, method, says):
    folder = own(*([swap] if swap else []))
    line = _refused(capsys, own, folder, "--method", method, "--quick")
    assert all(s in line for s in says), line


def test_a_valid_folder_of_ones_own_passes_the_checks(own):
    folder = own(("class_path: SynthBios", "class_path: mine_data.Fine"))
    for quick in (False, True):
        protocols = load_suite(str(folder), quick=quick)
        path, cls = resolve_method("ConFair")
        check_bench(protocols, MethodSpec("ConFair", path, {"temperature": 0.2}, cls), ["ConFair", "DML"],
                    _built_once)  # ConFair with other arguments than its defaults is another setting
        check_bench(protocols, MethodSpec("ConFair", path, {}, cls), ["DML"], _built_once)
    assert not own.started and not (own.root / "out").exists()
