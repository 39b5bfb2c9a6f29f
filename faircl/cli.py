"""``faircl fit|validate|test|predict --config configs/<method>/<dataset>.yaml``.

The methods of :data:`faircl.methods.METHODS` and the datamodules of ``faircl.data.DATAMODULES`` are selectable by
class name (``--model ConFair --data HateSpeech``). ``num_classes``, ``num_groups`` and ``input_dim`` are
linked from the datamodule into the model. After ``test`` a fairness report is printed and written as
``report.json`` / ``report.md`` in the run's log directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from lightning.pytorch.cli import LightningCLI

import faircl.data
from faircl.data.base import FairDataModule
from faircl.eval.report import print_report, write_report
from faircl.methods import METHODS
from faircl.methods.base import FairModule

TRAINER_DEFAULTS = {
    # The datamodules shard and balance batches themselves (rank-aware samplers).
    "use_distributed_sampler": False,
    "max_epochs": 10,
    "log_every_n_steps": 10,
}


class FairCLI(LightningCLI):
    """LightningCLI with the datamodule → model links and the fairness report after ``test``."""

    def add_arguments_to_parser(self, parser) -> None:
        for attr in ("num_classes", "num_groups", "input_dim"):
            parser.link_arguments(f"data.{attr}", f"model.init_args.{attr}", apply_on="instantiate")

    def after_test(self) -> None:
        report = getattr(self.model, "test_report", None)
        if not report or not self.trainer.is_global_zero:
            return
        log_dir = Path(self.trainer.log_dir or self.trainer.default_root_dir)
        meta = {"method": type(self.model).__name__, "data": type(self.datamodule).__name__,
                "checkpoint": str(self.config_init.get(self.subcommand, {}).get("ckpt_path"))
                if self.subcommand else None}
        path = write_report(report, log_dir, meta=meta)
        print_report(report, title=f"{meta['method']} on {meta['data']} — test")
        print(f"report written to {path} and {path.with_suffix('.md')}")


def datamodules() -> dict[str, type[FairDataModule]]:
    """The selectable datamodules by class name (``faircl.data.DATAMODULES``)."""
    registry = getattr(faircl.data, "DATAMODULES", None)
    return dict(registry) if registry is not None else faircl.data.available_datamodules()


def _check_names(args: list[str]) -> None:
    """Fail early, listing the choices, when ``--model`` / ``--data`` (or a config's ``class_path``) is unknown."""
    import yaml

    wanted: list[tuple[str, str]] = []
    for i, arg in enumerate(args):
        for key in ("model", "data"):
            if arg == f"--{key}" and i + 1 < len(args):
                wanted.append((key, args[i + 1]))
            elif arg.startswith(f"--{key}="):
                wanted.append((key, arg.split("=", 1)[1]))
        if arg == "--config" and i + 1 < len(args) and Path(args[i + 1]).is_file():
            cfg = yaml.safe_load(Path(args[i + 1]).read_text()) or {}
            for key in ("model", "data"):
                node = cfg.get(key)
                if isinstance(node, dict) and isinstance(node.get("class_path"), str):
                    wanted.append((key, node["class_path"]))
                elif isinstance(node, str):
                    wanted.append((key, node))
    if not wanted:
        return
    choices = {"model": METHODS, "data": datamodules()}
    for key, value in wanted:
        if value.endswith((".yaml", ".yml", ".json")) or "{" in value:
            continue
        short = value.rsplit(".", 1)[-1]
        if short not in choices[key]:
            kind = "method" if key == "model" else "datamodule"
            raise SystemExit(f"faircl: unknown {kind} {value!r} for --{key}; available: "
                             f"{', '.join(sorted(choices[key]))}")


def main(args: list[str] | None = None, run: bool = True) -> FairCLI:
    """Entry point of the ``faircl`` command (also callable from Python and tests with a list of arguments)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    argv = list(sys.argv[1:] if args is None else args)
    datamodules()  # every datamodule class is imported, so a class name in a config resolves
    _check_names(argv)
    return FairCLI(
        FairModule,
        FairDataModule,
        subclass_mode_model=True,
        subclass_mode_data=True,
        args=argv,
        run=run,
        seed_everything_default=0,
        trainer_defaults=TRAINER_DEFAULTS,
        save_config_kwargs={"overwrite": True},
        auto_configure_optimizers=True,
    )


if __name__ == "__main__":
    main()
