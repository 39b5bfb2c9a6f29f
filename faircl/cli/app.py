"""``faircl fit|validate|test|predict|export|configs``: the LightningCLI of faircl.

Methods and datamodules are selected by class name (``--model ConFair --data HateSpeech``) or by import path
(``--model mypkg.mymodule.MyMethod``: any :class:`~faircl.methods.base.FairModule` /
:class:`~faircl.data.base.FairDataModule` subclass on the Python path). ``num_classes``, ``num_groups`` and
``input_dim`` and ``input_kind`` are linked from the datamodule into the model.

Every ``fit`` keeps ``last.ckpt`` and the best checkpoint by the model's monitored validation metric
(``--model.monitor``); ``test`` / ``validate`` / ``predict`` load ``--ckpt_path best`` by default (``last``, a file,
or ``none`` for the untrained weights) and ``fit --ckpt_path last`` resumes the newest run. Outputs of an earlier run
are never overwritten without ``--overwrite``. Exit status: 0 on success, 2 on a usage, config or data error (one
line on stderr; ``FAIRCL_DEBUG=1`` shows the traceback), 1 on any other failure.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
import warnings
from functools import partial, update_wrapper
from pathlib import Path
from types import MethodType
from typing import Any

import yaml
from lightning.pytorch.cli import LightningCLI, SaveConfigCallback, instantiate_class
from lightning.pytorch.loggers import CSVLogger

import faircl.data
from faircl.checkpoints import AtomicCheckpointIO, FairCheckpoint
from faircl.cli.outputs import PredictionFiles, export_encoder
from faircl.cli.runs import (UNTRAINED, CLIError, checkpoint_epoch, config_files, expand_configs, find_checkpoint,
                             guard_outputs, option_value, resolve_ckpt_path, sets_optimizer_lr, shipped_configs)
from faircl.data.base import FairDataModule
from faircl.data.io import DataError
from faircl.eval.report import print_report, write_report
from faircl.methods import METHODS
from faircl.methods.base import FairModule
from faircl.methods.inputs import check_encoder_for
from faircl.methods.selection import monitor_spec

SUBCOMMANDS = ("fit", "validate", "test", "predict")
#: Lightning warnings that carry no advice for a faircl run (the datamodules choose workers and shard themselves;
#: evaluation never needs the checkpoint callback; a torch / Lightning deprecation inside Lightning itself).
QUIET = (r".*does not have many workers.*", r".*smaller than the logging interval.*",
         r".*callbacks used to create the checkpoint need to be provided.*", r".*LeafSpec.*is deprecated.*")
TRAINER_DEFAULTS = {
    # The datamodules shard and balance batches themselves (rank-aware samplers).
    "use_distributed_sampler": False,
    "max_epochs": 10,
    "log_every_n_steps": 10,
}


class _SaveConfig(SaveConfigCallback):
    """Saves ``config.yaml``; the CLI has already refused to overwrite an earlier run's file (``--overwrite``)."""


class FairCLI(LightningCLI):
    """LightningCLI with the datamodule → model links, default checkpoints, checkpoint look-up by ``best`` /
    ``last``, optimiser injection that keeps the method's parameter groups, prediction files and the fairness report
    after ``test``."""

    def __init__(self, *args: Any, overwrite: bool = False, untrained: bool = False,
                 optimizer_lr_given: bool = False, **kwargs: Any) -> None:
        self.overwrite, self.untrained, self.optimizer_lr_given = overwrite, untrained, optimizer_lr_given
        self.ckpt_used: str | None = None
        self.prediction_writer: PredictionFiles | None = None
        super().__init__(*args, **kwargs)

    def add_arguments_to_parser(self, parser) -> None:
        for attr in ("num_classes", "num_groups", "input_dim"):
            parser.link_arguments(f"data.{attr}", f"model.init_args.{attr}", apply_on="instantiate")
        # input_kind: the model is built once, for the datamodule's input (faircl.methods.inputs)
        parser.link_arguments("data", "model.init_args.input_kind", compute_fn=self._linked_input_kind,
                              apply_on="instantiate")

    def _linked_input_kind(self, dm: FairDataModule) -> str | None:
        """The datamodule's ``input_kind`` when the chosen method (and an explicit encoder) can train on it; else
        ``None``, and :meth:`instantiate_classes` raises the reason, naming the method, encoder and datamodule."""
        node = self.config.get(self.subcommand, self.config) if self.subcommand else self.config
        model = node.get("model") if hasattr(node, "get") else None
        class_path = getattr(model, "class_path", None)
        init = getattr(model, "init_args", None)
        encoder = (init.get("encoder") if hasattr(init, "get") else None) or "auto"
        try:
            cls = METHODS.get(str(class_path).rsplit(".", 1)[-1]) if class_path else None
            if class_path and (cls is None or f"{cls.__module__}.{cls.__name__}" != class_path):
                cls = _import_class(class_path, FairModule, "method")
            return check_encoder_for(cls or FairModule, encoder, dm)
        except (CLIError, ValueError) as err:  # raised after instantiation: jsonargparse would rewrite it here
            self._input_error = err
            return None

    def instantiate_classes(self) -> None:
        self._input_error: Exception | None = None
        super().instantiate_classes()
        if self._input_error is not None:
            raise self._input_error

    # ------------------------------------------------------------------ trainer: logger and callbacks
    def _instantiate_trainer(self, config: dict[str, Any], callbacks: list) -> Any:
        if config.get("logger") in (None, True):
            root = config.get("default_root_dir") or os.getcwd()
            try:
                from lightning.pytorch.loggers import TensorBoardLogger  # deferred: optional extra
                import tensorboard  # noqa: F401  # deferred: optional extra faircl[tensorboard]
                config["logger"] = TensorBoardLogger(save_dir=root)
            except ImportError:
                config["logger"] = CSVLogger(save_dir=root)
        if not config.get("plugins"):
            config["plugins"] = [AtomicCheckpointIO()]  # a crash during a save never leaves a truncated checkpoint
        callbacks = list(callbacks)
        user = config.get("callbacks") or []
        user = user if isinstance(user, list) else [user]
        has_ckpt = any(type(c).__name__.endswith("ModelCheckpoint") or hasattr(c, "best_model_path") for c in user)
        if (self.subcommand == "fit" and not has_ckpt and config.get("enable_checkpointing", True) is not False
                and not config.get("fast_dev_run")):
            monitor, mode = monitor_spec(self.model)
            callbacks.append(FairCheckpoint(monitor=monitor, mode=mode))
        if self.subcommand == "predict":
            split = getattr(self.datamodule, "predict_split", "test")
            self.prediction_writer = PredictionFiles(split=split)
            callbacks.append(self.prediction_writer)
        return super()._instantiate_trainer(config, callbacks)

    # ------------------------------------------------------------------ optimiser injection
    def _add_configure_optimizers_method_to_model(self, subcommand: str | None) -> None:
        """``--optimizer X`` (and ``--lr_scheduler Y``) replace the optimiser class, keeping the method's parameter
        groups (:meth:`FairModule.param_groups`: ``module_lrs`` / ``lr_overrides``); the base learning rate is
        ``--model.lr``."""
        opt_init = self._get(self.config_init, "optimizer")
        if not opt_init:
            return
        if not isinstance(self.model, FairModule):
            return super()._add_configure_optimizers_method_to_model(subcommand)
        if self.optimizer_lr_given:
            raise CLIError("set the learning rate with --model.lr, not --optimizer.lr: an injected --optimizer keeps "
                           "the method's parameter groups and their own learning rates (module_lrs / lr_overrides) "
                           "and takes its base learning rate from the model")
        init = {"class_path": opt_init["class_path"], "init_args": dict(opt_init.get("init_args") or {})}
        init["init_args"]["lr"] = float(self.model.hparams.lr)
        optimizer = instantiate_class(self.model.param_groups(), init)
        sched_init = self._get(self.config_init, "lr_scheduler")
        lr_scheduler = instantiate_class(optimizer, dict(sched_init)) if sched_init else None
        fn = partial(self.configure_optimizers, optimizer=optimizer, lr_scheduler=lr_scheduler)
        update_wrapper(fn, self.configure_optimizers)
        self.model.configure_optimizers = MethodType(fn, self.model)

    # ------------------------------------------------------------------ run folders and checkpoints
    def _prepare_subcommand_kwargs(self, subcommand: str) -> dict[str, Any]:
        kwargs = super()._prepare_subcommand_kwargs(subcommand)
        root = self.trainer.default_root_dir
        given = kwargs.get("ckpt_path")
        if subcommand == "fit":
            if given is not None:
                path = resolve_ckpt_path(given, root, explicit_untrained=False)
                epoch = checkpoint_epoch(path)
                print(f"faircl: resuming from {path} (saved in epoch {epoch}, counted from 0); this run writes to "
                      f"{self.trainer.log_dir}", file=sys.stderr)
                kwargs["ckpt_path"] = path
                self.ckpt_used = path
            elif not self.trainer.fast_dev_run:  # a smoke run writes neither config nor checkpoints
                guard_outputs(self.trainer.log_dir, ("config.yaml", "checkpoints"), self.overwrite)
            return kwargs
        # fast_dev_run is a smoke run: without --ckpt_path it evaluates the weights at hand.
        smoke = given is None and bool(self.trainer.fast_dev_run)
        path = resolve_ckpt_path(given, root, explicit_untrained=self.untrained or smoke)
        if path is not None:
            checkpoint_epoch(path)  # a clear message for an unreadable file
        kwargs["ckpt_path"] = path
        self.ckpt_used = path
        outputs = {"test": ("config.yaml", "report.json", "report.md"),
                   "predict": ("config.yaml", "predictions.pt", "predictions.csv")}.get(subcommand, ("config.yaml",))
        if not smoke:
            guard_outputs(self.trainer.log_dir, outputs, self.overwrite)
        which = "the current (untrained) weights" if path is None else path
        print(f"faircl: {subcommand} with {which}", file=sys.stderr)
        return kwargs

    def after_test(self) -> None:
        # ``trainer.log_dir`` is a collective (a broadcast from rank 0): every rank reads it before any returns.
        log_dir = Path(self.trainer.log_dir or self.trainer.default_root_dir)
        report = getattr(self.model, "test_report", None)
        if not report or not self.trainer.is_global_zero:
            return
        meta = {"method": type(self.model).__name__, "data": type(self.datamodule).__name__,
                "checkpoint": self.ckpt_used or "none (untrained weights)"}
        path = write_report(report, log_dir, meta=meta)
        print_report(report, title=f"{meta['method']} on {meta['data']} — test")
        print(f"report written to {path} and {path.with_suffix('.md')}")

    def after_predict(self) -> None:
        if self.prediction_writer is not None and self.prediction_writer.written and self.trainer.is_global_zero:
            print("predictions written to " + " and ".join(str(p) for p in self.prediction_writer.written))


# ---------------------------------------------------------------------------------------------------- names
def datamodules() -> dict[str, type[FairDataModule]]:
    """The selectable datamodules by class name (``faircl.data.DATAMODULES``)."""
    registry = getattr(faircl.data, "DATAMODULES", None)
    return dict(registry) if registry is not None else faircl.data.available_datamodules()


def _import_class(path: str, base: type, kind: str) -> type:
    module, _, name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise CLIError(f"cannot import {kind} {path!r}: {err} (is its package on the Python path?)") from err
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise CLIError(f"{kind} {path!r} is not a subclass of {base.__module__}.{base.__name__}")
    return cls


def check_names(argv: list[str], configs: list[dict[str, Any]]) -> None:
    """Fail early, listing the choices, when ``--model`` / ``--data`` (or a config's ``class_path``) is unknown.

    A dotted name must import a ``FairModule`` / ``FairDataModule`` subclass; a plain name must be registered."""
    wanted: list[tuple[str, str]] = []
    for key in ("model", "data"):
        for cfg in configs:
            node = cfg.get(key) if isinstance(cfg, dict) else None
            if isinstance(node, dict) and isinstance(node.get("class_path"), str):
                wanted.append((key, node["class_path"]))
            elif isinstance(node, str):
                wanted.append((key, node))
        value = option_value(argv, key)
        if value is not None:
            wanted.append((key, value))
    choices = {"model": METHODS, "data": datamodules()}
    bases = {"model": FairModule, "data": FairDataModule}
    for key, value in wanted:
        if value.endswith((".yaml", ".yml", ".json")) or "{" in value or ":" in value:
            continue
        kind = "method" if key == "model" else "datamodule"
        if value.startswith("faircl.") and value.rsplit(".", 1)[-1] in choices[key]:
            continue
        if "." in value:
            _import_class(value, bases[key], kind)
        elif value not in choices[key]:
            raise CLIError(f"unknown {kind} {value!r} for --{key}; available: {', '.join(sorted(choices[key]))}, or "
                           f"an import path such as mypkg.mymodule.My{'Method' if key == 'model' else 'Data'}")


# ---------------------------------------------------------------------------------------------------- entry points
def _prepare(argv: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Strip faircl's own options from ``argv`` and resolve config names; returns (argv, FairCLI options)."""
    overwrite = "--overwrite" in argv
    argv = [a for a in argv if a != "--overwrite"]
    argv = expand_configs(argv)
    configs = [yaml.safe_load(p.read_text()) or {} for p in config_files(argv)]
    check_names(argv, configs)
    ckpt = option_value(argv, "ckpt_path")
    untrained = ckpt is not None and ckpt.lower() in UNTRAINED
    if ckpt is not None and Path(ckpt).expanduser().is_file():
        checkpoint_epoch(ckpt)  # LightningCLI reads the file's hyper-parameters first: a corrupt one fails here clearly
    if untrained:
        argv = [a for a in argv if not a.startswith("--ckpt_path=")]
        argv = [a for i, a in enumerate(argv) if a != "--ckpt_path" and not (i and argv[i - 1] == "--ckpt_path")]
    return argv, {"overwrite": overwrite, "untrained": untrained,
                  "optimizer_lr_given": sets_optimizer_lr(argv, configs)}


def run_cli(args: list[str], run: bool = True) -> FairCLI:
    """Run ``faircl <args>`` in this process and return the :class:`FairCLI` (model, datamodule, trainer).

    Errors are raised (:class:`CLIError`, ``DataError``, ...); :func:`main` turns them into an exit status."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    datamodules()  # every datamodule class is imported, so a class name in a config resolves
    argv, options = _prepare(list(args))
    for message in QUIET:
        warnings.filterwarnings("ignore", message=message)
    return FairCLI(FairModule, FairDataModule, subclass_mode_model=True, subclass_mode_data=True, args=argv, run=run,
                   seed_everything_default=0, trainer_defaults=TRAINER_DEFAULTS, save_config_callback=_SaveConfig,
                   save_config_kwargs={"overwrite": True}, auto_configure_optimizers=True, **options)


def _export(argv: list[str]) -> None:
    ckpt, out = option_value(argv, "ckpt_path"), option_value(argv, "out")
    if not ckpt or not out or "-h" in argv or "--help" in argv:
        raise CLIError("usage: faircl export --ckpt_path <file.ckpt | best | last> [--root DIR] --out DIR "
                       "[--overwrite]  (best / last: the newest run under --root, default the current directory)")
    if ckpt in ("best", "last"):
        ckpt = str(find_checkpoint(option_value(argv, "root") or ".", ckpt))
    path = export_encoder(ckpt, out, overwrite="--overwrite" in argv)
    print(f"encoder of {ckpt} exported to {path}")


def main(args: list[str] | None = None) -> int:
    """The ``faircl`` command; returns the exit status (0 success, 2 usage / config / data error, 1 other)."""
    argv = list(sys.argv[1:] if args is None else args)
    debug = os.environ.get("FAIRCL_DEBUG", "") not in ("", "0")
    try:
        if argv and argv[0] == "configs":
            print("\n".join(shipped_configs()))
        elif argv and argv[0] == "export":
            _export(argv[1:])
        else:
            saved = sys.argv
            sys.argv = [saved[0] if saved else "faircl"]  # the arguments go in `args` only
            try:
                run_cli(argv)
            finally:
                sys.argv = saved
    except SystemExit as exc:  # --help, --print_config and argument errors of the parser
        code = exc.code
        if isinstance(code, str):
            print(f"faircl: error: {code}", file=sys.stderr)
            return 2
        return int(code or 0)
    except (CLIError, DataError, FileNotFoundError, NotADirectoryError, ValueError, TypeError) as err:
        if debug:
            traceback.print_exc()
        print(f"faircl: error: {_message(err)}", file=sys.stderr)
        if not debug:
            print("(set FAIRCL_DEBUG=1 to see the traceback)", file=sys.stderr)
        return 2
    except Exception:
        traceback.print_exc()
        return 1
    return 0


def _message(err: BaseException) -> str:
    return str(err) if isinstance(err, CLIError) else f"{type(err).__name__}: {err}"
