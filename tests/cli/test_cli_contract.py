"""The ``faircl`` command as a Unix tool: ``best`` / ``last`` are this method's and data's newest run, a checkpoint
of another method is refused, a linked value that disagrees with the data is an error, user errors are exit 2 and at
most three lines, each command keeps its own config file, ``findml`` takes config names, help and version."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from faircl.cli import main

TINY = ["--data", "BiasedFeatures", "--data.n_train=128", "--data.n_val=64", "--data.n_test=64", "--data.dim=8",
        "--data.batch_size=32", "--model.encoder_kwargs={hidden_dim: 8}", "--model.leakage=false",
        "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]


@pytest.fixture(autouse=True)
def _lightning_log_to_this_stderr():
    """Lightning's log handlers write to the ``sys.stderr`` of the moment they were made: point them at this test's,
    so the lines a user would see are the lines counted."""
    import logging

    handlers = [h for name in ("lightning.pytorch", "lightning.fabric") for h in logging.getLogger(name).handlers
                if isinstance(h, logging.StreamHandler)]
    for h in handlers:
        h.setStream(sys.stderr)
    yield


def _fit(method: str, *extra: str) -> int:
    return main(["fit", "--model", method, *TINY, "--trainer.max_epochs=2", *extra])


def _err_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


def _ckpts(root: Path, pattern: str) -> list[Path]:
    return sorted(root.rglob(pattern), key=lambda p: p.stat().st_mtime)


# ------------------------------------------------------------------ best / last of this method and data
def test_best_is_refused_when_the_newest_run_kept_only_last(in_tmp, capsys):
    assert _fit("CE") == 0
    older_best = _ckpts(in_tmp, "best*.ckpt")
    assert older_best
    time.sleep(1.1)
    assert _fit("CE", "--trainer.limit_val_batches=0") == 0  # no validation: only last.ckpt is kept
    capsys.readouterr()
    assert main(["test", "--model", "CE", *TINY]) == 2
    err = capsys.readouterr().err
    assert "newest run of CE on BiasedFeatures" in err and "has no best checkpoint" in err
    assert str(older_best[0]) not in err


def test_best_ignores_the_runs_of_another_method(in_tmp, capsys):
    (in_tmp / "runs" / "confair").mkdir(parents=True)
    assert _fit("ConFair", "--trainer.default_root_dir=runs/confair") == 0
    capsys.readouterr()
    # no default_root_dir: the search starts in the working directory and must not pick the ConFair run
    assert main(["test", "--model", "CE", *TINY]) == 2
    err = capsys.readouterr().err
    assert "no run of CE on BiasedFeatures" in err and "ConFair on BiasedFeatures" in err and "Traceback" not in err
    assert _fit("CE") == 0
    assert main(["test", "--model", "CE", *TINY]) == 0
    assert "faircl: test with " + str(in_tmp / "lightning_logs") in capsys.readouterr().err


def test_best_after_a_resume_is_the_best_of_the_whole_run(in_tmp, capsys):
    assert _fit("CE") == 0
    last = _ckpts(in_tmp, "last.ckpt")[-1]
    best = _ckpts(in_tmp, "best*.ckpt")[-1]
    # The first run's best was excellent: no epoch of the resumed run can beat it.
    state = torch.load(last, weights_only=True)
    key = next(k for k in state["callbacks"] if k.startswith("FairCheckpoint"))
    monitor = state["callbacks"][key]["monitor"]
    state["callbacks"][key]["best_model_score"] = torch.tensor(-1e9 if "loss" in monitor else 1e9)
    crafted = in_tmp / "resume_from.ckpt"
    torch.save(state, crafted)
    time.sleep(1.1)
    assert _fit("CE", "--trainer.max_epochs=4", "--ckpt_path", str(crafted)) == 0
    resumed = _ckpts(in_tmp, "last.ckpt")[-1]
    assert resumed.parent != last.parent
    bests = list(resumed.parent.glob("best*.ckpt"))
    assert [b.name for b in bests] == [best.name]  # the first run's best, carried into the resumed run's folder
    carried, original = (torch.load(p, weights_only=True)["state_dict"] for p in (bests[0], best))
    assert carried.keys() == original.keys() and all(torch.equal(carried[k], original[k]) for k in carried)
    capsys.readouterr()
    assert main(["test", "--model", "CE", *TINY, "--ckpt_path", "best", "--overwrite"]) == 0
    assert str(bests[0]) in capsys.readouterr().err


# ------------------------------------------------------------------ checkpoint of another method, linked values
def test_a_checkpoint_of_another_method_is_refused_naming_both(in_tmp, capsys):
    assert _fit("ConFair") == 0
    ckpt = str(_ckpts(in_tmp, "last.ckpt")[-1])
    capsys.readouterr()
    assert main(["fit", "--model", "CE", *TINY, "--trainer.max_epochs=4", "--ckpt_path", ckpt]) == 2
    lines = _err_lines(capsys)
    assert len(lines) <= 3 and "holds a ConFair model" in lines[0] and "requested is CE" in lines[0]
    # without --model, the checkpoint's method is used, and said
    assert main(["test", *TINY, "--ckpt_path", ckpt]) == 0
    assert "using the checkpoint's method ConFair" in capsys.readouterr().err


def test_a_linked_value_that_disagrees_with_the_data_is_an_error(in_tmp, capsys):
    assert main(["fit", "--model", "ConFair", *TINY, "--model.init_args.num_groups", "5"]) == 2
    lines = _err_lines(capsys)
    assert len(lines) <= 3
    assert "--model.init_args.num_groups 5" in lines[0] and "BiasedFeatures has num_groups=2" in lines[0]
    assert main(["fit", "--model", "ConFair", *TINY, "--model.init_args.num_groups", "2",
                 "--trainer.max_epochs=1"]) == 0  # agreeing is fine


# ------------------------------------------------------------------ exit 2, at most three lines
@pytest.mark.parametrize("case", ["malformed_yaml", "python_tag", "gpu", "parser_type", "parser_unknown",
                                  "missing_data"])
def test_user_errors_are_exit_2_in_at_most_three_lines(in_tmp, capsys, case):
    marker = in_tmp / "ran"
    files = {"malformed_yaml": "trainer:\n  max_epochs: [1\nmodel: CE\n",
             "python_tag": f"model: !!python/object/apply:os.system ['touch {marker}']\n"}
    args = {"malformed_yaml": ["fit", "--config", "cfg.yaml"], "python_tag": ["fit", "--config", "cfg.yaml"],
            "gpu": ["fit", "--model", "CE", *TINY, "--trainer.accelerator", "gpu"],
            "parser_type": ["fit", "--model", "CE", *TINY, "--trainer.max_epochs", "abc"],
            "parser_unknown": ["fit", "--model", "CE", *TINY, "--trainer.no_such_option", "1"],
            "missing_data": ["fit", "--model", "CE"]}[case]
    if case in files:
        (in_tmp / "cfg.yaml").write_text(files[case])
    if case == "gpu" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert main(args) == 2
    lines = _err_lines(capsys)
    assert 1 <= len(lines) <= 3, lines
    assert lines[0].startswith("faircl: error: ") and "Traceback" not in "\n".join(lines)
    expect = {"malformed_yaml": "line 3", "python_tag": "python/object/apply", "gpu": "no GPU is available",
              "parser_type": "--trainer.max_epochs abc: not a valid value (expected int", "parser_unknown": "no_such_option",
              "missing_data": "data"}[case]
    assert expect in lines[0]
    assert not marker.exists()


def test_resume_with_max_epochs_below_the_stored_epoch_is_exit_2(in_tmp, capsys):
    assert _fit("CE", "--trainer.max_epochs=3") == 0
    capsys.readouterr()
    assert main(["fit", "--model", "CE", *TINY, "--trainer.max_epochs=1", "--ckpt_path", "last"]) == 2
    lines = _err_lines(capsys)
    assert len(lines) <= 3 and "saved in epoch 2" in lines[0] and "--trainer.max_epochs 1" in lines[0]


def test_debug_shows_the_traceback(in_tmp, capsys):
    (in_tmp / "cfg.yaml").write_text("trainer: [1\n")
    assert main(["fit", "--config", "cfg.yaml", "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


# ------------------------------------------------------------------ logger false: one config file per command
def test_test_after_fit_without_logger_keeps_both_config_files(in_tmp):
    common = ["--trainer.logger=false", "--trainer.default_root_dir=out"]
    assert _fit("CE", *common) == 0
    fit_config = (in_tmp / "out" / "config.yaml").read_bytes()
    assert main(["test", "--model", "CE", *TINY, *common]) == 0
    assert (in_tmp / "out" / "config.yaml").read_bytes() == fit_config
    assert (in_tmp / "out" / "config.test.yaml").is_file() and (in_tmp / "out" / "report.json").is_file()
    assert main(["test", "--model", "CE", *TINY, *common, "--overwrite"]) == 0
    assert (in_tmp / "out" / "config.yaml").read_bytes() == fit_config  # --overwrite replaces test's files only


# ------------------------------------------------------------------ findml
def test_findml_takes_config_names_and_checks_the_checkpoint_first(in_tmp, capsys):
    bad = in_tmp / "bad.ckpt"
    bad.write_bytes(b"garbage")
    start = time.perf_counter()
    assert main(["findml", "--ckpt", str(bad), "--config", "confair/biased_features"]) == 2
    lines = _err_lines(capsys)
    assert len(lines) <= 3 and "bad.ckpt" in lines[0] and time.perf_counter() - start < 20
    assert main(["findml", "--ckpt", str(bad), "--config", "no/such_config"]) == 2
    assert "not found" in capsys.readouterr().err


# ------------------------------------------------------------------ help, version, one table, no tips
def test_help_version_and_export_help(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "fair representation learning" in out and "Lightning Trainer command line tool" not in out
    for command in ("fit", "test", "predict", "configs", "export", "findml"):
        assert f"\n  {command} " in out, command
    assert main(["--version"]) == 0 and capsys.readouterr().out.strip().startswith("faircl ")
    assert main(["export", "--help"]) == 0 and "usage: faircl export" in capsys.readouterr().out


def test_test_prints_one_table_and_no_tips(in_tmp, capsys, caplog):
    assert _fit("CE") == 0
    capsys.readouterr()
    assert main(["test", "--model", "CE", *TINY]) == 0
    captured = capsys.readouterr()
    text = captured.out + captured.err + caplog.text
    assert "Tip:" not in text and "litlogger" not in text
    assert "Test metric" not in captured.out and captured.out.count("— test") == 1


def test_configs_needs_neither_torch_nor_lightning():
    code = ("import sys, time; t = time.perf_counter(); from faircl.cli import main; main(['configs']); "
            "print(time.perf_counter() - t, 'torch' in sys.modules, 'lightning' in sys.modules, file=sys.stderr)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    seconds, torch_loaded, lightning_loaded = res.stderr.split()[-3:]
    assert "confair/biased_features" in res.stdout.split()
    assert torch_loaded == "False" and lightning_loaded == "False", res.stderr
    assert float(seconds) < 1.0
