"""What a hostile user tried on the ``faircl`` command: options next to a checkpoint, validation messages, paths the
user may not write, pickle files, runs that would train nothing, Lightning's noise, Ctrl-C, and the help of
``findml`` and ``configs``. Each case goes through the command's entry point (:func:`faircl.cli.main`, or
``python -m faircl.cli`` in a subprocess where a signal, a second process or another user is involved)."""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from faircl.cli import main

REPO = Path(__file__).resolve().parents[2]
TINY = ["--data", "BiasedFeatures", "--data.n_train=128", "--data.n_val=64", "--data.n_test=64", "--data.dim=8",
        "--data.batch_size=32", "--model.encoder_kwargs={hidden_dim: 8}", "--model.leakage=false",
        "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]


@pytest.fixture(autouse=True)
def _lightning_log_to_this_stderr():
    import logging

    for name in ("lightning.pytorch", "lightning.fabric"):
        for h in logging.getLogger(name).handlers:
            if isinstance(h, logging.StreamHandler):
                h.setStream(sys.stderr)
    yield


def _err_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


def _one_line_error(capsys) -> str:
    lines = _err_lines(capsys)
    assert 1 <= len(lines) <= 2 and lines[0].startswith("faircl: error: "), lines
    assert "Traceback" not in "\n".join(lines) and "Union subtypes" not in lines[0]
    return lines[0]


def _versions(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "lightning_logs").glob("version_*"))


def _cli(*args: str, cwd: Path, prefix: tuple[str, ...] = (), **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([*prefix, sys.executable, "-m", "faircl.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=kw.get("timeout", 300))


# ------------------------------------------------------------------ options next to a checkpoint (item 1, 4, 6)
def test_options_a_checkpoint_cannot_take_are_refused_and_the_others_applied(in_tmp, capsys, recwarn):
    assert main(["fit", "--model", "CE", *TINY, "--trainer.max_epochs=2"]) == 0
    last = in_tmp / "lightning_logs" / "version_0" / "checkpoints" / "last.ckpt"
    assert "faircl: fit writes to " + str(in_tmp / "lightning_logs" / "version_0") in capsys.readouterr().err
    wider = ["--model.init_args.encoder_kwargs.hidden_dim", "16"]
    for command in (["test"], ["fit", "--trainer.max_epochs=3"]):
        assert main([command[0], "--model", "CE", *TINY, *command[1:], "--ckpt_path", str(last), *wider]) == 2
        line = _one_line_error(capsys)
        assert "--model.init_args.encoder_kwargs.hidden_dim 16 cannot apply" in line
        assert "trained with encoder_kwargs.hidden_dim=8" in line
        assert _versions(in_tmp) == ["version_0"]  # no empty run folder
    # best / last are resolved first, so their run's hyper-parameters are refused alike
    assert main(["test", "--model", "CE", *TINY, *wider]) == 2 and "hidden_dim=8" in _one_line_error(capsys)
    # a value the weights can take is used, and said; a resume's learning rate reaches the restored optimizer
    assert main(["fit", "--model", "CE", *TINY, "--trainer.max_epochs=3", "--ckpt_path", str(last),
                 "--model.init_args.lr", "0.1"]) == 0
    err = capsys.readouterr().err
    assert "--model.init_args.lr 0.1 (the checkpoint has 0.001)" in err
    assert "resumed optimizer trains with lr 0.1 (stored 0.001)" in err
    assert "won't be reloaded" not in err and not [w for w in recwarn if "won't be reloaded" in str(w.message)]
    resumed = torch.load(in_tmp / "lightning_logs" / "version_1" / "checkpoints" / "last.ckpt", weights_only=True)
    assert [g["lr"] for g in resumed["optimizer_states"][0]["param_groups"]] == [0.1]
    assert resumed["hyper_parameters"]["lr"] == 0.1
    before = torch.load(last, weights_only=True)
    assert [g["lr"] for g in before["optimizer_states"][0]["param_groups"]] == [0.001]


def test_a_resumed_schedule_keeps_its_place_at_the_new_learning_rate(in_tmp, capsys):
    sched = ["--model.init_args.scheduler=step", "--model.init_args.lr=0.01"]
    assert main(["fit", "--model", "CE", *TINY, *sched, "--trainer.max_epochs=6"]) == 0
    last = next(in_tmp.rglob("last.ckpt"))
    stored = torch.load(last, weights_only=True)
    stored_lr = stored["optimizer_states"][0]["param_groups"][0]["lr"]
    assert stored_lr == pytest.approx(0.01 * 0.1 ** 3)  # step: gamma 0.1 every 2 of 6 epochs, after epoch 5
    # a longer run: the given base 0.1 replaces 0.01, the schedule keeps its place (three steps down)
    assert main(["fit", "--model", "CE", *TINY, *sched, "--trainer.max_epochs=7", "--ckpt_path", str(last),
                 "--model.init_args.lr", "0.1"]) == 0
    assert "lr 0.1 (stored 0.01)" in capsys.readouterr().err
    resumed = torch.load(in_tmp / "lightning_logs" / "version_1" / "checkpoints" / "last.ckpt", weights_only=True)
    group = resumed["optimizer_states"][0]["param_groups"][0]
    assert group["initial_lr"] == pytest.approx(0.1)
    assert resumed["lr_schedulers"][0]["base_lrs"] == pytest.approx([0.1])
    assert group["lr"] == pytest.approx(0.1 * 0.1 ** 3)


def test_a_fit_that_would_train_nothing_is_refused(in_tmp, capsys):
    assert main(["fit", "--model", "CE", *TINY, "--trainer.max_epochs=0"]) == 2
    assert "--trainer.max_epochs 0 trains nothing" in _one_line_error(capsys)
    assert not (in_tmp / "lightning_logs").exists()
    assert main(["fit", "--model", "CE", *TINY, "--trainer.max_epochs=2"]) == 0
    capsys.readouterr()
    # epochs 0 and 1 are done: max_epochs 2 leaves nothing, 3 trains one more epoch
    assert main(["fit", "--model", "CE", *TINY, "--trainer.max_epochs=2", "--ckpt_path", "last"]) == 2
    line = _one_line_error(capsys)
    assert "has trained 2 epoch(s)" in line and "pass --trainer.max_epochs 3 or more" in line
    assert _versions(in_tmp) == ["version_0"]
    assert main(["fit", "--model", "CE", *TINY, "--trainer.max_epochs=3", "--ckpt_path", "last"]) == 0
    resumed = torch.load(in_tmp / "lightning_logs" / "version_1" / "checkpoints" / "last.ckpt", weights_only=True)
    assert resumed["epoch"] == 2


# ------------------------------------------------------------------ validation messages (item 3)
@pytest.mark.parametrize("case", ["batch_size_0", "batch_size_neg", "lr_neg", "predict_split", "csv_one_class"])
def test_a_class_s_own_validation_message_is_the_one_line(in_tmp, capsys, case):
    args = {"batch_size_0": ["fit", "--model", "CE", *TINY, "--data.init_args.batch_size", "0"],
            "batch_size_neg": ["fit", "--model", "CE", *TINY, "--data.init_args.batch_size", "-3"],
            "lr_neg": ["fit", "--model", "CE", *TINY, "--model.init_args.lr", "-1"],
            "predict_split": ["predict", "--model", "CE", *TINY, "--ckpt_path", "none",
                              "--data.init_args.predict_split", "nope"]}.get(case)
    if case == "csv_one_class":
        for name, n in (("train.csv", 30), ("val.csv", 10), ("test.csv", 10)):
            rows = ["text,label,gender"] + [f"good day {i},0,{'MF'[i % 2]}" for i in range(n)]
            (in_tmp / name).write_text("\n".join(rows) + "\n")
        args = ["fit", "--model", "CE", "--model.encoder=bow", "--data", "TextCSV", f"--data.data_dir={in_tmp}",
                "--data.files={train: train.csv, val: val.csv, test: test.csv}", "--data.attribute_columns=gender",
                "--trainer.max_epochs=1"]
    assert main(args) == 2
    line = _one_line_error(capsys)
    expect = {"batch_size_0": "BiasedFeatures: batch_size must be >= 1, got 0",
              "batch_size_neg": "BiasedFeatures: batch_size must be >= 1, got -3",
              "lr_neg": "CE: lr must be > 0, got -1.0", "predict_split": "predict_split='nope'",
              "csv_one_class": "CE: num_classes must be >= 2, got 1"}[case]
    assert expect in line, line


# ------------------------------------------------------------------ pickle files and another method (item 5)
def test_a_plain_pickle_checkpoint_gets_the_right_advice_in_every_command(in_tmp, capsys):
    assert main(["fit", "--model", "CE", *TINY, "--trainer.max_epochs=1"]) == 0
    state = torch.load(next(in_tmp.rglob("last.ckpt")), weights_only=True)
    bad = in_tmp / "old.ckpt"
    with bad.open("wb") as fh:
        pickle.dump(state, fh, protocol=4)  # plain pickle: not a torch.save file
    capsys.readouterr()
    for command in ("fit", "validate", "test", "predict"):
        extra = ["--trainer.max_epochs=3"] if command == "fit" else []
        assert main([command, "--model", "CE", *TINY, *extra, "--ckpt_path", str(bad)]) == 2
        line = _one_line_error(capsys)
        assert "plain pickle file" in line and "weights_only" not in line, line
    assert main(["findml", "--ckpt", str(bad), "--config", "ce/biased_features"]) == 2
    line = _one_line_error(capsys)
    assert "plain pickle file" in line and "weights_only" not in line


def test_findml_refuses_another_method_s_checkpoint_before_reading_data(in_tmp, capsys, monkeypatch):
    assert main(["fit", "--model", "ConFair", *TINY, "--trainer.max_epochs=1"]) == 0
    ckpt = str(next(in_tmp.rglob("last.ckpt")))
    capsys.readouterr()
    import faircl.eval.findml as findml

    monkeypatch.setattr(findml, "build_datamodule", lambda *a, **k: pytest.fail("data read before the check"))
    assert main(["findml", "--ckpt", ckpt, "--config", "ce/biased_features"]) == 2
    line = _one_line_error(capsys)
    assert "holds a ConFair model" in line and "config of CE" in line and "blocked" not in line


# ------------------------------------------------------------------ a folder the user may not write (item 4)
def test_a_folder_the_user_may_not_write_is_exit_2_in_one_line(tmp_path):
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:  # root writes anywhere: drop the capabilities that let it
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot take away the right to write a folder")
        prefix = ("setpriv", "--inh-caps=-dac_override,-dac_read_search",
                  "--bounding-set=-dac_override,-dac_read_search", "--")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        res = _cli("fit", "--model", "CE", *TINY, "--trainer.max_epochs=1", f"--trainer.default_root_dir={locked}",
                   cwd=tmp_path, prefix=prefix)
    finally:
        locked.chmod(0o755)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip() and not ln.startswith("faircl: fit writes to")]
    assert res.returncode == 2, res.stderr
    assert lines[0].startswith("faircl: error: ") and "Permission denied" in lines[0] and str(locked) in lines[0]
    assert "Traceback" not in res.stderr and len(lines) <= 2


# ------------------------------------------------------------------ noise and signals (item 8)
PLAIN_FIT = """
import lightning.pytorch as L
from faircl.checkpoints import FairCheckpoint
from faircl.data import BiasedFeatures
from faircl.methods import CE

dm = BiasedFeatures(n_train=64, n_val=32, n_test=32, dim=8, batch_size=32)
model = CE(num_classes=2, num_groups=2, input_dim=8, encoder_kwargs={"hidden_dim": 8}, leakage=False)
trainer = L.Trainer(max_epochs=1, enable_progress_bar=False, logger=False, enable_model_summary=False)
trainer.fit(model, datamodule=dm)
assert isinstance(trainer.checkpoint_callback, FairCheckpoint)
print("policy applied")
"""


def test_a_plain_trainer_fit_does_not_announce_faircl_s_checkpoint_policy(tmp_path):
    """A notebook's script, in its own process as a user runs it (pytest resets warning filters between tests, so
    an in-process check would depend on which test imported faircl first)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    res = subprocess.run([sys.executable, "-W", "default", "-c", PLAIN_FIT], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "policy applied" in res.stdout, res.stderr[-3000:]  # the policy applied ...
    assert "will override existing callbacks" not in res.stderr  # ... without Lightning's note about it
    assert "LeafSpec" not in res.stderr  # nor a deprecation inside Lightning


def test_sigint_during_fit_exits_130_with_how_to_resume(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    args = [a for a in TINY if not a.startswith("--data.n_train")] + ["--data.n_train=1024"]
    # Ctrl-C as a terminal gives it: the default disposition (a process that ignores SIGINT passes that on to the
    # processes it starts, and Lightning ignores it after an interrupted run in this test process)
    proc = subprocess.Popen([sys.executable, "-m", "faircl.cli", "fit", "--model", "CE", *args,
                             "--trainer.max_epochs=100000"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 240
        while not list(tmp_path.rglob("last.ckpt")) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:  # never leave a 100,000-epoch fit running
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "faircl: interrupted; resume the run with the same command and --ckpt_path last" in err
    assert "Traceback" not in err


@pytest.mark.e2e
@pytest.mark.parametrize("command", ["fit", "test"])
def test_two_processes_print_no_sync_dist_advice_and_rank_0_notes_once(tmp_path, command):
    ddp = ["--trainer.devices=2", "--trainer.strategy=ddp", "--trainer.accelerator=cpu"]
    if command == "test":
        res = _cli("fit", "--model", "CE", *TINY, "--trainer.max_epochs=1", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    args = [command, "--model", "CE", *TINY, *ddp] + (["--trainer.max_epochs=1"] if command == "fit" else [])
    res = _cli(*args, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "sync_dist" not in res.stderr
    note = "faircl: fit writes to" if command == "fit" else "faircl: test with"
    assert res.stderr.count(note) == 1, res.stderr


# ------------------------------------------------------------------ help (item 9)
def test_findml_and_configs_help(capsys):
    assert main(["findml", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: faircl findml") and "python -m" not in out
    assert main(["configs", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: faircl configs") and "\nadversarial/" not in out and len(out.splitlines()) <= 4
    assert main(["configs"]) == 0 and "confair/biased_features" in capsys.readouterr().out.split()


def test_an_interrupted_run_gives_ctrl_c_back_to_the_caller(monkeypatch):
    """Lightning ignores SIGINT after its graceful shutdown; ``main`` restores it, so a notebook (and every process
    it starts later) can still be interrupted."""
    import faircl.runs.lightning_cli as app
    import faircl.runs.callbacks as callbacks

    def interrupted_fit(args):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # what Lightning's shutdown leaves behind
        raise SystemExit(1)

    previous = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(app, "run_cli", interrupted_fit)
    monkeypatch.setattr(callbacks, "interruption", lambda: "resume with --ckpt_path last")
    try:
        assert main(["fit", "--model", "CE", "--data", "BiasedFeatures"]) == 130
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
