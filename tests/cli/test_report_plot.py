"""``report.png``: a plain ``faircl test`` draws it; ``report_plot: false`` (what a bench run's config says: the
bench draws its own figures) writes the report without it, and the switch never enters the fit record."""

from __future__ import annotations

import json
from pathlib import Path

from faircl.cli import run_cli

TINY = ["--model", "CE", "--data", "BiasedFeatures", "--data.n_train=256", "--data.n_val=64", "--data.n_test=128",
        "--model.encoder_kwargs={hidden_dim: 8}", "--trainer.max_epochs=1", "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false"]


def test_plain_test_draws_the_picture_and_report_plot_false_does_not(in_tmp, capsys):
    args = [*TINY, f"--trainer.default_root_dir={in_tmp}"]
    run_cli(["fit", *args, "--report_plot=false"])  # as a bench run's fit: the same config as its test
    plain = Path(run_cli(["test", *args, "--ckpt_path", "best"]).trainer.log_dir)
    assert (plain / "report.json").is_file() and (plain / "report.png").is_file()
    assert f"and {plain / 'report.png'}" in capsys.readouterr().out
    off = Path(run_cli(["test", *args, "--ckpt_path", "best", "--report_plot=false"]).trainer.log_dir)
    assert off != plain and (off / "report.json").is_file() and (off / "report.md").is_file()
    assert not (off / "report.png").exists()
    assert f"report written to {off / 'report.json'} and {off / 'report.md'}\n" in capsys.readouterr().out
    fits = [json.loads((d / "report.json").read_text())["meta"]["fit"] for d in (plain, off)]
    assert fits[0] == fits[1] and not any("report_plot" in k for k in fits[0]["config"])
