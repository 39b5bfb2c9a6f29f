"""``faircl bench``'s options, parsed by jsonargparse: bad input is one line on stderr and exit status 2 before any
run (an argument the method does not take, a class that refuses its arguments, ``--out`` naming a file), Ctrl-C says
how to resume (130), ``--help`` gives the quick variants' real seed count, and good input reaches the runs with the
arguments given (the protocol's model block fills the rest)."""

from __future__ import annotations

import pytest

import faircl.cli.bench as command
import faircl.bench.looks as looks
from faircl.bench.spec import load_suite, suite_names
from faircl.cli import main

MINE = '''\
from faircl.methods import CE


class Strict(CE):
    """A method with a check of its own."""

    def __init__(self, temperature: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        if temperature <= 0:
            raise ValueError("temperature must be > 0")
        self.temperature = temperature
'''


class Planned(Exception):
    """Raised by the stand-in for the runs: what would have run."""


@pytest.fixture
def runs(monkeypatch):
    """The runs ``faircl bench`` would start, instead of starting them."""
    planned: list = []

    def fake(tasks, **kwargs):
        planned.extend(tasks)
        raise Planned

    monkeypatch.setattr(looks, "run_tasks", fake)
    return planned


def _bench(capsys, *args: str) -> tuple[int, list[str]]:
    code = main(["bench", *args])
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if line and not line.startswith("(add --debug")]


def test_an_argument_the_method_does_not_take_is_named_with_the_ones_it_takes(tmp_path, capsys, runs):
    code, lines = _bench(capsys, "text", "--method", "ConFair", "--method.init_args.bogus", "1", "--quick",
                         "--out", str(tmp_path / "out"))
    assert code == 2 and len(lines) == 1, lines
    assert "'bogus'" in lines[0] and "ConFair" in lines[0] and "temperature" in lines[0] and "lambda_fcl" in lines[0]
    assert not runs and not (tmp_path / "out").exists()
    # the same in the JSON form, and a data size the protocol links
    code, lines = _bench(capsys, "text", "--method", '{"class_path": "ConFair", "init_args": {"bogus": 1}}',
                         "--out", str(tmp_path / "out"))
    assert code == 2 and len(lines) == 1 and "'bogus'" in lines[0]
    code, lines = _bench(capsys, "text", "--method", "ConFair", "--method.num_classes", "3", "--out",
                         str(tmp_path / "out"))
    assert code == 2 and len(lines) == 1 and "num_classes" in lines[0] and "data" in lines[0]
    assert not runs


def test_a_class_that_refuses_its_arguments_is_built_once_before_any_run(tmp_path, capsys, runs, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "mine_strict.py").write_text(MINE)
    code, lines = _bench(capsys, "text", "--method", "mine_strict.Strict", "--method.temperature", "-1",
                         "--protocol", "synthbios", "--quick", "--out", "out")
    assert code == 2 and len(lines) == 1, lines
    assert "Strict" in lines[0] and "temperature must be > 0" in lines[0] and not runs
    # a good value: the runs are planned with the arguments given, over the protocol's model block
    with pytest.raises(Planned):
        command.bench(["text", "--method", "mine_strict.Strict", "--method.init_args.temperature", "0.5",
                       "--protocol", "synthbios", "--quick", "--out", "out"])
    mine = [t for t in runs if not t.baseline]
    assert len(mine) == {p.name: p for p in load_suite("text", quick=True)}["synthbios"].seeds
    assert mine[0].class_path == "mine_strict.Strict" and mine[0].init_args == {"temperature": 0.5}
    model = mine[0].config()["model"]["init_args"]
    assert model["temperature"] == 0.5 and model["encoder"] == "bow"  # the protocol's encoder


@pytest.mark.parametrize("form", [["--method", "ConFair", "--method.init_args.temperature", "0.2"],
                                  ["--method", "ConFair", "--method.temperature", "0.2"],
                                  ["--method", '{"class_path": "ConFair", "init_args": {"temperature": 0.2}}']])
def test_the_forms_of_method_arguments_reach_the_runs(tmp_path, runs, form):
    with pytest.raises(Planned):
        command.bench(["text", *form, "--protocol", "synthbios", "--out", str(tmp_path / "out")])
    mine = [t for t in runs if not t.baseline]
    assert mine and all(t.init_args == {"temperature": 0.2} for t in mine)
    assert mine[0].class_path == "faircl.methods.confair.ConFair"  # the class path of the method's key, as before


def test_out_naming_a_file_is_one_line(tmp_path, capsys, runs):
    (tmp_path / "taken").write_text("")
    code, lines = _bench(capsys, "text", "--method", "ConFair", "--quick", "--out", str(tmp_path / "taken"))
    assert code == 2 and len(lines) == 1 and "taken" in lines[0] and "is a file" in lines[0] and not runs
    code, lines = _bench(capsys, "text", "--method", "ConFair", "--quick", "--protocol", "synthbios", "--out",
                         str(tmp_path / "taken" / "sub"))
    assert code == 2 and len(lines) == 1 and "is a file" in lines[0]


def test_ctrl_c_during_the_runs_says_how_to_resume(tmp_path, capsys, monkeypatch):
    def interrupted(tasks, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(looks, "run_tasks", interrupted)
    args = ["text", "--method", "ConFair", "--quick", "--protocol", "synthbios", "--out", str(tmp_path / "o")]
    assert main(["bench", *args]) == 130
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("faircl: interrupted")]
    assert len(said) == 1 and said[0].endswith("faircl bench " + " ".join(args)) and "resume" in said[0]


def test_help_gives_the_quick_variants_real_seed_count(capsys):
    with pytest.raises(SystemExit):
        command._parser().parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    counts = sorted({p.seeds for s in suite_names() for p in load_suite(s, quick=True)})
    said = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    assert f"{said} seeds" in text and "--method.init_args.NAME" in text
    assert counts == [2, 3]  # the shipped quick blocks: 2 seeds (cda_minilm) to 3 (synthbios)


PROTOCOL = """\
name: biased
version: 1
title: BiasedFeatures, tiny
input_kind: features
data: {class_path: BiasedFeatures, init_args: {n_train: 200, n_val: 100, n_test: 200, dim: 8}}
model: {encoder: mlp, encoder_kwargs: {hidden_dim: 8}, lr: 0.01}
trainer: {max_epochs: 1}
seeds: 3
baselines:
  CE: {class_path: CE}
claims:
  - {gap: tpr_gap_rms, baseline: CE}
"""


def test_a_second_bench_with_other_settings_into_the_same_out_is_refused(tmp_path, capsys, monkeypatch):
    """``--out`` holding another bench's results: one line naming the folder and what differs, exit 2, before any
    run; the same settings resume, a higher --max-seeds continues, --overwrite replaces; a bench.json of an older
    faircl (without ``settings``) is read from its other entries."""
    import json
    from types import SimpleNamespace

    import faircl.bench.results as results

    looked: list = []

    def fake_looks(runnable, method, starts, max_seeds, out, cache, **kwargs):
        looked.append(method.label)
        return SimpleNamespace(rows=[], tasks={}, failures=[], undecided=[], seeds=dict(starts), looks=[])

    def fake_results(out, *args):
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.md").write_text("# results\n")
        return out / "results.md", out / "results.csv", None

    monkeypatch.setattr(looks, "run_looks", fake_looks)
    monkeypatch.setattr(results, "write_results", fake_results)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "mine_renamed.py").write_text("from faircl.methods import CE\n\n\nclass Renamed(CE):\n    pass\n")
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "biased.yaml").write_text(PROTOCOL)
    (tmp_path / "suite" / "plain.yaml").write_text(PROTOCOL.replace("name: biased", "name: plain"))
    out = tmp_path / "out"

    def args(method: str = "CE", *more: str) -> list[str]:
        return ["bench", str(tmp_path / "suite"), "--method", method, "--protocol", "biased", "--out", str(out),
                "--cache", str(tmp_path / "cache"), *more]

    assert main(args()) == 0 and len(looked) == 1
    assert json.loads((out / "bench.json").read_text())["settings"]["protocols"] == {"biased": 1}
    assert main(args()) == 0 and len(looked) == 2  # the same bench again: it resumes
    assert main(args("CE", "--max-seeds", "6")) == 0 and len(looked) == 3  # continued with more seeds
    capsys.readouterr()
    for other, differs in ((args("mine_renamed.Renamed"), "method"), (args("CE", "--seeds", "5"), "seeds"),
                           (args("CE", "--protocol", "plain"), "protocols"), (args("CE", "--max-seeds", "4"), "max_seeds"),
                           (args("CE", "--permutations", "500"), "permutations")):
        code, lines = _bench(capsys, *other[1:])
        assert code == 2 and len(lines) == 1, lines
        assert f"--out {out} " in lines[0] and f"{differs} " in lines[0] and "--overwrite" in lines[0], lines[0]
        assert len(looked) == 3  # refused before any run
    assert main(args("mine_renamed.Renamed", "--overwrite")) == 0 and looked[-1] == "Renamed"
    info = json.loads((out / "bench.json").read_text())
    del info["settings"]  # as an older faircl wrote it
    (out / "bench.json").write_text(json.dumps(info))
    assert main(args("mine_renamed.Renamed")) == 0 and len(looked) == 5
    capsys.readouterr()
    code, lines = _bench(capsys, *args()[1:])
    assert code == 2 and len(lines) == 1 and "method " in lines[0] and f"--out {out} " in lines[0]
