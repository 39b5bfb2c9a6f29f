"""``--launcher`` and ``--slurm`` (:mod:`faircl.cli.launchers`): the SLURM settings from options or a YAML file, checked
before anything runs; ``--launcher slurm`` where no cluster answers is one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsonargparse import ArgumentParser

from faircl.cli import launchers
from faircl.cli.launchers import add_launcher_arguments, executor_from, slurm_settings
from faircl.runs.executors import FreshProcesses
from faircl.runs.user_error import UserError


def _parser() -> ArgumentParser:
    p = ArgumentParser(exit_on_error=False)
    add_launcher_arguments(p, "the runs")
    return p


def test_the_settings_come_from_options_or_a_file_and_the_log_folder_goes_under_out(tmp_path):
    (tmp_path / "cluster.yaml").write_text("partition: gpu\ngpus_per_task: 1\nextra_sbatch: [qos=high]\n")
    from_file = slurm_settings(_parser().parse_args(["--slurm", str(tmp_path / "cluster.yaml")]).slurm, tmp_path)
    assert (from_file.partition, from_file.gpus_per_task, from_file.sbatch_options()) == ("gpu", 1, {"qos": "high"})
    assert from_file.log_folder == tmp_path / "slurm"
    given = slurm_settings(_parser().parse_args(["--slurm.partition", "debug", "--slurm.log_folder", "logs"]).slurm,
                           tmp_path)
    assert given.partition == "debug" and given.log_folder == Path("logs")


def test_a_wrong_setting_is_refused_naming_it(tmp_path):
    (tmp_path / "bad.yaml").write_text("colour: red\n")
    with pytest.raises(Exception, match="colour"):
        _parser().parse_args(["--slurm", str(tmp_path / "bad.yaml")])
    with pytest.raises(UserError, match="cpus_per_task"):
        slurm_settings({"cpus_per_task": 0}, tmp_path)


def test_no_cluster_is_one_line_and_fresh_needs_none(tmp_path, monkeypatch):
    monkeypatch.setattr(launchers, "available", lambda: "no SLURM cluster: sbatch is not on PATH")
    with pytest.raises(UserError, match="--launcher slurm: no SLURM cluster: sbatch is not on PATH"):
        executor_from("slurm", _parser().parse_args([]).slurm, tmp_path)
    assert isinstance(executor_from("fresh", None, tmp_path), FreshProcesses)


def test_a_key_that_is_no_setting_is_named_with_the_settings_there_are(tmp_path, monkeypatch, capsys):
    from faircl.cli.dispatch import main

    (tmp_path / "cluster.yaml").write_text("partition: gpu\ncolour: red\n")
    monkeypatch.chdir(tmp_path)
    for given in (["--slurm.colour", "red"], ["--slurm", str(tmp_path / "cluster.yaml")]):
        for command in (["sweep", "--config", "ce/biased_features", "--search", "model.lr=log:1e-4:1e-2"],
                        ["bench", "text", "--method", "ConFair", "--quick", "--protocol", "synthbios_minilm"]):
            assert main([*command, "--launcher", "slurm", *given]) == 2
            line = capsys.readouterr().err.splitlines()[0]
            assert line.startswith("faircl: error: --slurm.colour: not a SLURM setting; the settings are partition, "
                                   "gpus_per_task"), line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cluster.yaml"]  # refused before anything is made
    with pytest.raises(Exception) as info:
        _parser().parse_args(["--slurm.partition"])
    assert launchers.unknown_setting(info.value) is None  # another error keeps its own line
