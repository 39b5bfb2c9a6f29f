"""How the ``faircl`` command reads its arguments and reports what is wrong with them: ``faircl sweep``'s jsonargparse
parser (its own options and its trials' ``faircl fit`` options in one parser, the trials given what the command line
gives them), ``faircl export``'s, the
one-line message taken from the exception (a class's own check that the parser wraps, an option's refused value),
config names resolved once, and the summary line of a one-seed sweep. Fast: no training."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import optuna
import pytest
from jsonargparse import ArgumentParser

from faircl.runs.parse_only import option_keys, parse_command
from faircl.runs.user_error import UserError, parser_refusal
from faircl.cli.dispatch import main, user_message
from faircl.cli.sweep import _same, _summary, add_sweep_arguments, parse_sweep


# ---------------------------------------------------------------------------------------------------- faircl sweep
FIT_ONLY = ("ckpt_path", "weights_only")  # Trainer.fit's own arguments: a sweep sets them for its trials


def _without(config, keys):
    """``config`` less ``keys`` and its note of the config files read."""
    config = config.clone()
    for key in (*keys, "config"):
        config.pop(key, None)
    return config


def test_one_parser_reads_the_sweeps_options_and_its_trials_and_the_trials_get_what_was_given():
    argv = ["--config", "ce/biased_features", "--search", "model.lr=log:1e-4:1e-2", "--model.init_args.lr", "0.01",
            "--trials", "2", "--data.n_train=64", "--search=model.lambda_fair=0:1", "--resume",
            "--model.encoder_kwargs={hidden_dim: 8}", "--sampler", "random", "--heartbeat=5", "--slurm.mem_gb=4",
            "--trainer.max_epochs", "3"]
    opts, given = parse_sweep(argv)
    assert opts.search == ["model.lr=log:1e-4:1e-2", "model.lambda_fair=0:1"]
    assert (opts.trials, opts.resume, opts.sampler, opts.heartbeat, opts.slurm.mem_gb) == (2, True, "random", 5, 4)
    trial_args = given.arguments()
    assert trial_args[0] == "--config" and len(trial_args) == 2  # one mapping, the file's values inlined
    inline = json.loads(trial_args[1])
    assert inline["model"]["class_path"] == "faircl.methods.CE" and inline["trainer"]["max_epochs"] == 3
    assert not set(inline) & {"search", "trials", "resume", "sampler", "heartbeat", "slurm", "config"}
    # the trials' fit parses to the config the sweep parsed
    trial, _ = parse_command(["fit", *trial_args])
    assert _without(trial, FIT_ONLY) == _without(opts, option_keys(add_sweep_arguments))
    assert (trial.model.init_args.lr, trial.data.init_args.n_train, trial.trainer.max_epochs) == (0.01, 64, 3)
    assert trial.model.init_args.encoder_kwargs["hidden_dim"] == 8
    # a value given before a config file that sets it too: the file's wins, for the sweep and for its trials
    opts, given = parse_sweep(["--trainer.max_epochs=7", "--config", "ce/biased_features"])
    assert parse_command(["fit", *given.arguments()])[0].trainer.max_epochs == opts.trainer.max_epochs
    # a method and data by name, a list value
    opts, given = parse_sweep(["--model", "ConFair", "--data", "BiasedFeatures", "--trainer.devices", "[0]"])
    trial, _ = parse_command(["fit", *given.arguments()])
    assert _without(trial, FIT_ONLY) == _without(opts, option_keys(add_sweep_arguments)) and trial.trainer.devices == [0]
    # the sweep's options alone (a worker joining a sweep): no run to check, nothing for the trials
    opts, given = parse_sweep(["--out", "somewhere", "--resume"])
    assert (opts.search, opts.trials, opts.resume, opts.pruner, opts.out) == ([], None, True, None, "somewhere")
    assert given.arguments() == []


def test_a_resumed_sweep_compares_its_trials_options_by_what_they_parse_to():
    """A sweep saved with the command line's own words (an earlier version) is the same sweep when its options parse
    to the same config, and another one when a value differs or they no longer parse."""
    _, given = parse_sweep(["--config", "ce/biased_features", "--trainer.max_epochs", "1"])
    saved = ["--config", "ce/biased_features", "--trainer.max_epochs", "1"]
    assert given.arguments() != saved and _same("fit_args", given.arguments(), saved)
    assert not _same("fit_args", given.arguments(), ["--config", "ce/biased_features", "--trainer.max_epochs", "2"])
    assert not _same("fit_args", given.arguments(), ["--config", "no/such_config"])
    assert _same("seeds", [0, 1], [0, 1]) and not _same("seeds", [0, 1], [0])


def test_a_sweep_option_in_the_trials_config_file_is_refused(tmp_path):
    config = tmp_path / "trial.yaml"
    config.write_text("model: CE\ndata: BiasedFeatures\ntrials: 40\n")
    with pytest.raises(UserError, match=r"trial.yaml: trials is a sweep option; a sweep's --config is its trials'"):
        parse_sweep(["--config", str(config)])


def test_sweep_help_comes_from_jsonargparse(capsys):
    assert main(["sweep", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: faircl sweep") and "--search PATH=RANGE" in out
    assert "(type: int, default: null)" in out  # jsonargparse's help formatter
    for option in ("--objectives", "--trials", "--seeds", "--out", "--storage", "--study", "--resume", "--sampler",
                   "--sampler_seed", "--pruner", "--heartbeat"):
        assert option in out, option


@pytest.mark.parametrize("args, expect", [
    (["--trials", "abc"], "faircl: error: --trials abc: not a valid value (expected int)"),
    (["--heartbeat=1.5"], "faircl: error: --heartbeat 1.5: not a valid value (expected int)"),
    (["--sampler", "grid"], "invalid choice: 'grid' (choose from 'gp', 'nsga2', 'qmc', 'random', 'tpe')"),
    (["--trials"], "argument --trials: expected one argument"),
])
def test_a_bad_sweep_option_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, args, expect):
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--config", "ce/biased_features", "--search", "model.lr=log:1e-4:1e-2", *args]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert lines[0].startswith("faircl: error: ") and expect in lines[0] and len(lines) <= 2, lines
    assert not list(tmp_path.iterdir())  # refused before any folder is made


def _study(seeds: int) -> tuple[optuna.Study, dict]:
    study = optuna.create_study(direction="maximize")
    per_seed = [0.8 + 0.02 * i for i in range(seeds)]
    mean = sum(per_seed) / seeds
    std = 0.0 if seeds == 1 else 0.0141
    study.add_trial(optuna.trial.create_trial(
        params={"model.lr": 0.01}, distributions={"model.lr": optuna.distributions.FloatDistribution(1e-4, 1e-1)},
        value=mean, user_attrs={"mean": {"val/accuracy": mean}, "std": {"val/accuracy": std},
                                "per_seed": {"val/accuracy": per_seed}}))
    return study, {"objectives": [["val/accuracy", "maximize"]], "seeds": list(range(seeds))}


def test_the_summary_prints_a_spread_only_over_several_seeds(tmp_path, capsys):
    study, definition = _study(1)
    _summary(study, definition, tmp_path)
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("best trial"))
    assert line.endswith("val/accuracy 0.8000") and "±" not in line, line
    study, definition = _study(2)
    _summary(study, definition, tmp_path)
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("best trial"))
    assert line.endswith("val/accuracy 0.8100 ± 0.0141"), line


# ---------------------------------------------------------------------------------------------------- faircl export
def test_export_help_and_missing_options(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["export", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: faircl export") and "--ckpt_path" in out and "--overwrite" in out
    assert main(["export", "--out", "enc"]) == 2
    line = capsys.readouterr().err.splitlines()[0]
    assert line.startswith("faircl: error: ") and "required" in line and "ckpt_path" in line, line
    assert main(["export", "--ckpt_path", "last", "--out", "enc"]) == 2  # no run here to take `last` from
    assert "--ckpt_path last: no run of any method" in capsys.readouterr().err
    assert not (tmp_path / "enc").exists()


# ---------------------------------------------------------------------------------------------------- messages
class Widget:
    """A class with its own check, built by a parser (as the CLI builds a method or a datamodule)."""

    def __init__(self, size: int = 1) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.size = size


class SmallWidget(Widget):
    pass


def _parser() -> ArgumentParser:
    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--widget", type=Optional[Widget])
    parser.add_argument("--count", type=Optional[int])
    parser.add_argument("--ratio", type=float)
    return parser


def _error_of(args: list[str], instantiate: bool = False) -> BaseException:
    parser = _parser()
    with pytest.raises(Exception) as info:
        cfg = parser.parse_args(args)
        if instantiate:
            parser.instantiate_classes(cfg)
    return info.value


def test_a_class_s_own_error_is_the_message_naming_the_class_built():
    err = _error_of(["--widget", f"{__name__}.SmallWidget", "--widget.size", "0"], instantiate=True)
    # the parser wraps the class's error (its union of Widget and None); the message is the class's own
    assert user_message(err) == "SmallWidget: size must be >= 1, got 0"


def test_a_refused_value_names_the_option_the_value_and_the_expected_type():
    assert user_message(_error_of(["--count", "many"])) == "--count many: not a valid value (expected int or null)"
    assert user_message(_error_of(["--ratio", "half"])) == "--ratio half: not a valid value (expected float)"
    err = _error_of(["--widget", f"{__name__}.Widget", "--widget.init_args.colour", "red"])
    assert user_message(err).startswith("--widget.init_args.colour red: not accepted by Widget (no such argument")


def test_a_refused_argument_of_a_class_names_its_dotted_option():
    # the parser's message nests the class's key, its class_path and the argument's key: the line names all three
    err = _error_of(["--widget", f"{__name__}.Widget", "--widget.init_args.size", "big"])
    assert user_message(err) == "--widget.init_args.size big: not a valid value (expected int)"
    err = _error_of(["--widget", "{class_path: %s.Widget, init_args: {size: big}}" % __name__])
    assert user_message(err) == "--widget.init_args.size big: not a valid value (expected int)"


def test_a_class_that_is_not_found_is_named_as_given():
    refusal = parser_refusal(_error_of(["--widget", "NoSuchWidget"]))
    assert (refusal.option, refusal.value, refusal.no_class) == ("widget", "NoSuchWidget", True)
    assert user_message(_error_of(["--widget", "NoSuchWidget"])) == (
        "--widget NoSuchWidget: no class of that name or import path")
    refusal = parser_refusal(_error_of(["--widget", "{class_path: NoSuchWidget}"]))
    assert (refusal.option, refusal.value, refusal.no_class) == ("widget", "NoSuchWidget", True)
    refusal = parser_refusal(_error_of(["--widget", "nosuchpkg.Widget"]))
    assert refusal.option == "widget" and "nosuchpkg" in refusal.reason


def test_an_error_that_names_no_option_keeps_its_own_line():
    assert parser_refusal(_error_of(["--nope", "1"])) is None
    assert "unrecognized arguments: --nope 1" in user_message(_error_of(["--nope", "1"])).lower()
    assert parser_refusal(ValueError("x")) is None


def test_other_errors_keep_their_own_line():
    assert user_message(UserError("config 'x' not found")) == "config 'x' not found"
    assert user_message(ValueError("bad\nsecond line")) == "ValueError: bad second line"
    try:
        try:
            raise KeyError("inner")
        except KeyError:
            raise ValueError("outer, raised by faircl while handling another error")
    except ValueError as err:
        assert user_message(err) == "ValueError: outer, raised by faircl while handling another error"


# ---------------------------------------------------------------------------------------------------- config names
def test_config_names_are_resolved_by_the_parser_with_their_files(tmp_path):
    own = tmp_path / "mine.yaml"
    own.write_text("trainer:\n  max_epochs: 1\n")
    parsed, given = parse_command(["fit", "--config", "ce/biased_features", "--model.lr=0.1", f"--config={own}"])
    shipped = given.files[0]
    assert shipped.is_file() and shipped.parts[-2:] == ("ce", "biased_features.yaml") and given.files[1] == own
    assert parsed.trainer.max_epochs == 1 and parsed.model.init_args.lr == 0.1
    with pytest.raises(UserError, match="'ce/no_such' not found"):
        parse_command(["fit", "--config", "ce/no_such"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(UserError, match="bad.yaml.*line 1.*refused"):
        parse_command(["fit", "--config", str(bad)])


@pytest.mark.parametrize("args, says", [
    (["--data", "BiasedFeatures"], "no method given: pass --model NAME"),
    (["--model", "CE"], "no datamodule given: pass --data NAME"),
])
def test_a_run_without_a_method_or_without_data_is_one_line_naming_the_option(tmp_path, monkeypatch, capsys, args,
                                                                              says):
    monkeypatch.chdir(tmp_path)
    assert main(["fit", *args]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert lines[0].startswith("faircl: error: ") and says in lines[0] and len(lines) <= 2, lines
    assert not list(tmp_path.iterdir())
