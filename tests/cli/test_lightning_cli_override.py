"""The one private LightningCLI method faircl overrides, pinned: ``_parse_ckpt_path`` (where a checkpoint's
hyper-parameters enter the config; no public hook lies between the parse and the classes' instantiation), and the
public extension points faircl relies on instead of the others. Run at both ends of the declared Lightning range
(``.ci/lowest`` runs this file with Lightning 2.5.5 and jsonargparse 4.39; ``make test`` with the newest)."""

from __future__ import annotations

import inspect

from lightning.pytorch.cli import LightningCLI

from faircl.cli.dispatch import main
from faircl.runs.lightning_cli import FairCLI
from faircl.runs.parse_only import parse_command

TINY = ["--data", "BiasedFeatures", "--data.n_train=64", "--data.n_val=32", "--data.n_test=32", "--data.dim=8",
        "--data.batch_size=32", "--model.leakage=false", "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false"]


def _private_overrides() -> set[str]:
    return {name for name in vars(FairCLI) if name.startswith("_") and not name.startswith("__")
            and hasattr(LightningCLI, name)}


def test_one_private_lightning_cli_method_is_overridden_and_lightning_still_calls_it_in_its_place():
    assert _private_overrides() == {"_parse_ckpt_path"}
    init = inspect.getsource(LightningCLI.__init__)
    parse, ckpt, before = (init.index(s) for s in ("self.parse_arguments(", "self._parse_ckpt_path()",
                                                   "self.before_instantiate_classes()"))
    assert parse < ckpt < before  # after the parse, before anything is built
    assert list(inspect.signature(LightningCLI._parse_ckpt_path).parameters) == ["self"]


def test_the_public_hooks_faircl_uses_instead_are_where_lightning_calls_them():
    # a command runs through the CLI's own method of its name (FairCLI.fit / test / ...), with the Trainer
    # method's arguments of the config
    assert "getattr(self, subcommand" in inspect.getsource(LightningCLI._run_subcommand)
    for hook in ("init_parser", "add_core_arguments_to_parser", "parse_arguments", "instantiate_trainer"):
        assert hook in vars(LightningCLI) and hook in vars(FairCLI), hook
    assert "self.add_core_arguments_to_parser(parser)" in inspect.getsource(LightningCLI._add_arguments)


def test_a_checkpoint_s_hyper_parameters_build_its_model_and_the_command_line_wins(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    hidden = ["--model.init_args.encoder_kwargs.hidden_dim", "16"]
    assert main(["fit", "--model", "CE", *TINY, *hidden, "--trainer.max_epochs=1"]) == 0
    last = next(tmp_path.rglob("last.ckpt"))
    # no hidden_dim given: the checkpoint's 16 builds the model (the default, 64, would not take its weights)
    assert main(["test", "--model", "CE", *TINY, "--ckpt_path", str(last)]) == 0
    # a config file's value is the checkpoint's to replace; a command-line value replaces the checkpoint's
    config = tmp_path / "other.yaml"
    config.write_text("model:\n  class_path: CE\n  init_args:\n    lr: 0.5\n")
    capsys.readouterr()
    assert main(["test", "--config", str(config), *TINY, "--ckpt_path", str(last), "--overwrite"]) == 0
    assert "used instead of the checkpoint" not in capsys.readouterr().err
    assert main(["test", "--model", "CE", *TINY, "--ckpt_path", str(last), "--model.init_args.lr", "0.5"]) == 0
    assert "--model.init_args.lr 0.5 (the checkpoint has 0.001)" in capsys.readouterr().err


def test_what_the_command_line_gives_is_told_from_what_a_config_file_gives(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("model:\n  class_path: CE\n  init_args:\n    lr: 0.5\nseed_everything: 3\n")
    parsed, given = parse_command(["fit", "--config", str(config), "--data", "BiasedFeatures",
                                   "--model.init_args.weight_decay", "0.1", "--trainer.max_epochs", "2"])
    assert parsed.model.init_args.lr == 0.5 and parsed.trainer.max_epochs == 2
    cli = given.command_line()
    assert {"model.init_args.weight_decay", "trainer.max_epochs"} <= cli.keys()
    assert "model.init_args.lr" not in cli and "seed_everything" not in cli and "model.class_path" not in cli
    assert given.model_options() == ["weight_decay"]
    # the same value on the command line as in the file is the file's; another one is the command line's
    _, given = parse_command(["fit", "--config", str(config), "--data", "BiasedFeatures", "--model.init_args.lr",
                              "0.25"])
    assert given.model_options() == ["lr"]
