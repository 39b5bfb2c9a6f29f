"""Every registered method × every embedded datamodule through the ``faircl`` CLI: it fits and tests, or it fails
early with a declared "not applicable" (never a shape error deep inside a layer)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from faircl.cli import main, run_cli
from faircl.data import BiasedFeatures, ColoredDigits, SynthBios
from faircl.methods import METHODS, ConFair
from faircl.methods.inputs import NotApplicableError

# small splits: the matrix checks that every pair is wired, not how well it learns
DATA_ARGS = {
    "BiasedFeatures": ["--data.init_args.n_train", "256", "--data.init_args.n_val", "64",
                       "--data.init_args.n_test", "128"],
    "SynthBios": ["--data.init_args.n_train", "256", "--data.init_args.n_val", "64",
                  "--data.init_args.n_test", "128"],
    "ColoredDigits": [],
}
# the pairs expected to be declared not applicable (CCD trains on counterfactual tuples only)
NOT_APPLICABLE = {("CCD", data) for data in DATA_ARGS}


def _args(command: str, method: str, data: str, root) -> list[str]:
    # one train / val / test batch, as fast_dev_run, but the run's outputs are kept: `fit` writes its best
    # checkpoint under `root`, where `test` (default --ckpt_path best) reloads it
    args = [command, "--model", method, "--data", data, *DATA_ARGS[data], "--trainer.max_epochs", "1",
            "--trainer.limit_train_batches", "1", "--trainer.limit_val_batches", "1",
            "--trainer.limit_test_batches", "1", "--trainer.num_sanity_val_steps", "0", "--trainer.logger", "false",
            "--trainer.default_root_dir", str(root),
            "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false",
            "--trainer.accelerator", "cpu"]
    if command == "test":
        args.append("--overwrite")  # test keeps its own config.test.yaml beside the fit run's config.yaml
    if METHODS[method].requires_views:
        args += ["--data.init_args.two_views", "true"]
    return args


@pytest.mark.slow
@pytest.mark.parametrize("data", sorted(DATA_ARGS))
@pytest.mark.parametrize("method", sorted(METHODS))
def test_method_runs_on_datamodule_or_is_not_applicable(method, data, tmp_path, capsys):
    torch.manual_seed(0)
    rc = main(_args("fit", method, data, tmp_path))
    err = capsys.readouterr().err
    if (method, data) in NOT_APPLICABLE:
        assert rc == 2 and "not applicable: " in err, err[-2000:]
        return
    assert rc == 0, f"{method} on {data}: fit failed\n{err[-3000:]}"
    rc = main(_args("test", method, data, tmp_path))
    err = capsys.readouterr().err
    assert rc == 0, f"{method} on {data}: test failed\n{err[-3000:]}"
    assert list(tmp_path.rglob("report.json")), sorted(str(p) for p in tmp_path.rglob("*"))


def test_default_encoder_follows_token_input(tmp_path):
    """The reproduced crash: ConFair (default encoder) on SynthBios (token ids) fits, with the token encoder."""
    cli = run_cli(_args("fit", "ConFair", "SynthBios", tmp_path))
    assert cli.trainer.state.finished
    assert cli.model.hparams.encoder == "tokens" and cli.model.hparams.input_kind == "tokens"
    assert type(cli.model.encoder).__name__ == "TokenEncoder"


def test_explicit_mismatched_encoder_names_both_sides(tmp_path):
    args = _args("fit", "CE", "SynthBios", tmp_path) + ["--model.init_args.encoder", "mlp"]
    with pytest.raises(ValueError, match=r"encoder 'mlp' reads features inputs but SynthBios emits 'tokens'"):
        run_cli(args)


def test_views_required_without_two_views_is_not_applicable(tmp_path):
    args = [a for a in _args("fit", "OneStageCL", "BiasedFeatures", tmp_path)]
    i = args.index("--data.init_args.two_views")
    del args[i:i + 2]
    with pytest.raises(NotApplicableError, match="not applicable: OneStageCL trains on two augmented views"):
        run_cli(args)


def test_checkpoint_reload_rebuilds_resolved_encoder(tmp_path):
    """A model built for tokens saves ``encoder='tokens'``; load_from_checkpoint builds the same. Built without
    ``input_kind`` (the feature MLP), it is not rebuilt at set-up: fit stops with "not applicable" naming both."""
    import lightning as L

    from faircl.utils import quiet_trainer_kwargs

    dm = SynthBios(n_train=128, n_val=32, n_test=32)
    guessed = ConFair(num_classes=dm.num_classes, num_groups=dm.num_groups, input_dim=dm.input_dim)
    assert guessed.hparams.encoder == "mlp"  # without input_kind: features
    with pytest.raises(NotApplicableError, match=r"not applicable: ConFair was built for 'features' inputs .* but "
                                                 r"SynthBios emits 'tokens' inputs; build it with input_kind='tokens'"):
        L.Trainer(**quiet_trainer_kwargs(max_steps=1)).fit(guessed, datamodule=dm)
    model = ConFair(num_classes=dm.num_classes, num_groups=dm.num_groups, input_dim=dm.input_dim,
                    input_kind=dm.input_kind)
    trainer = L.Trainer(**quiet_trainer_kwargs(max_steps=1, enable_checkpointing=True,
                                               default_root_dir=str(tmp_path)))
    trainer.fit(model, datamodule=dm)
    assert type(model.encoder).__name__ == "TokenEncoder"
    path = tmp_path / "m.ckpt"
    trainer.save_checkpoint(path)
    again = ConFair.load_from_checkpoint(path)
    assert again.hparams.encoder == "tokens" and type(again.encoder).__name__ == "TokenEncoder"
    batch = next(iter(dm.test_dataloader()))
    model.eval(), again.eval()
    with torch.no_grad():
        assert torch.equal(model(batch["x"])["logits"], again(batch["x"])["logits"])


@pytest.mark.parametrize("method,data,ok", [("CE", "ColoredDigits", True), ("CCD", "BiasedFeatures", False)])
def test_console_command(method, data, ok, tmp_path):
    """The console entry point (``python -m faircl.cli``) in a subprocess: a pair that used to crash, and a declared
    "not applicable" pair (exit status 2, the reason on stderr)."""
    proc = subprocess.run([sys.executable, "-m", "faircl.cli", *_args("fit", method, data, tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    if ok:
        assert proc.returncode == 0, proc.stderr[-3000:]
    else:
        assert proc.returncode == 2 and f"not applicable: {method} trains on tuples" in proc.stderr, proc.stderr[-3000:]


def test_datamodules_declare_their_input_kind():
    from faircl.data.counterfactual import CounterfactualTuples
    from faircl.data.text import HateSpeech

    assert BiasedFeatures().input_kind == "features"
    assert SynthBios().input_kind == "tokens" and SynthBios(representation="text").input_kind == "text"
    assert ColoredDigits().input_kind == "images"
    assert HateSpeech().input_kind == "tokens" and HateSpeech(features="trained").input_kind == "features"
    assert CounterfactualTuples.input_kind == "tuples"


def test_encoder_registry_checks_input_kinds():
    from faircl.methods import CE, CCD, TwoStageCL
    from faircl.models import check_encoder_input, default_encoder

    assert [default_encoder(k) for k in ("features", "tokens", "text", "images")] == ["mlp", "tokens", "hf", "conv"]
    check_encoder_input("bow", "tokens")
    with pytest.raises(ValueError, match=r"encoder 'conv' reads images inputs but .* emits 'features'"):
        check_encoder_input("conv", "features")
    model = CE(input_dim=50, input_kind="tokens")  # auto → the token encoder, recorded for checkpoints
    assert model.hparams.encoder == "tokens" and type(model.encoder).__name__ == "TokenEncoder"
    with pytest.raises(ValueError, match=r"encoder 'mlp' reads features inputs but input_kind='images' emits"):
        CE(input_dim=3, encoder="mlp", input_kind="images")
    assert CCD.input_kinds == ("tuples",) and TwoStageCL.requires_views and not CE.requires_views
