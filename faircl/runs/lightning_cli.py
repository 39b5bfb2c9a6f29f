"""The LightningCLI of faircl: what ``faircl fit|validate|test|predict`` and every run (:mod:`faircl.runs.engine`)
build from a command line or a run's config.

Methods and datamodules are selected by class name (``--model ConFair --data HateSpeech``) or by import path
(``--model mypkg.mymodule.MyMethod``: any :class:`~faircl.methods.base.FairModule` /
:class:`~faircl.data.base.FairDataModule` subclass on the Python path). ``num_classes``, ``num_groups``,
``input_dim`` and ``input_kind`` are linked from the datamodule into the model.

Every ``fit`` keeps ``last.ckpt`` and the best checkpoint by the model's monitored validation metric
(``--model.monitor``); ``test`` / ``validate`` / ``predict`` load ``--ckpt_path best`` by default (``last``, a file,
or ``none`` for the untrained weights) and ``fit --ckpt_path last`` resumes the newest run. Outputs of an earlier run
are never overwritten without ``--overwrite``. Errors are raised (:mod:`faircl.runs.user_error` tells the user's).
"""

from __future__ import annotations

import importlib
import logging
import os
import warnings
from functools import partial, update_wrapper
from pathlib import Path
from types import MethodType
from typing import Any

import torch
from lightning.pytorch.cli import LightningCLI, SaveConfigCallback, instantiate_class
from lightning.pytorch.loggers import CSVLogger

import faircl.data
from faircl.checkpoints import AtomicCheckpointIO, CheckpointError, FairCheckpoint, check_checkpoint
from faircl.data.base import FairDataModule
from faircl.eval.report import print_report, write_report
from faircl.eval.report_plot import plot_report
from faircl.methods import METHODS
from faircl.methods.base import FairModule
from faircl.methods.inputs import check_encoder_for
from faircl.methods.selection import monitor_spec
from faircl.runs.callbacks import CarryBest, ConfiguredOptimizer, ResumeHint, say
from faircl.runs.checkpoint_lookup import (UNTRAINED, checkpoint_class, checkpoint_dict, checkpoint_epoch,
                                           epochs_trained, resolve_ckpt_path, short_name)
from faircl.runs.config_files import option_value, read_config, resolve_configs
from faircl.runs.given_options import (LINKED, argument_leaves, check_linked, given_model_options,
                                       linked_values_given, set_argument_leaf, sets_optimizer_lr)
from faircl.runs.outputs import PredictionFiles, config_filename, guard_outputs
from faircl.runs.records import fit_record_of, run_record
from faircl.runs.user_error import UserError

SUBCOMMANDS = ("fit", "validate", "test", "predict")
#: Lightning warnings that carry no advice for a faircl run (the datamodules choose workers and shard themselves;
#: evaluation never needs the checkpoint callback; a torch / Lightning deprecation inside Lightning itself; a run on a
#: machine that has SLURM but was not started by ``srun``: the cluster guide says when to use it).
QUIET = (r".*does not have many workers.*", r".*smaller than the logging interval.*", r".*LeafSpec.*is deprecated.*",
         r".*callbacks used to create the checkpoint need to be provided.*", r".*`srun` command is available.*",
         r".*args parameter is intended to run from within Python.*",
         # the metrics faircl logs are already global (torchmetrics states synced across processes; the stage is the
         # same on every rank; the train terms are logged with sync_dist): Lightning's advice to sync is moot
         r"(?s).*self\.log\('(val|test|train)/.*sync_dist=True.*", r"(?s).*self\.log\('stage'.*sync_dist=True.*")
#: On ``fit --ckpt_path``: the checkpoint callback starts in a new folder; :class:`CarryBest` carries the best over.
RESUME_QUIET = r"(?s).*The dirpath has changed from.*won't be reloaded.*"
#: Lines of Lightning's log that say nothing to a faircl user: the promotion of a hosted logging service, printed by
#: every Trainer without one, and the absent accelerators (a present GPU is still reported).
SILENT_PREFIXES = ("\N{ELECTRIC LIGHT BULB} Tip:", "GPU available: False", "TPU available: False",
                   "HPU available: False")
TRAINER_DEFAULTS = {
    # The datamodules shard and balance batches themselves (rank-aware samplers).
    "use_distributed_sampler": False,
    "max_epochs": 10,
    "log_every_n_steps": 10,
}


class _SaveConfig(SaveConfigCallback):
    """Saves the run's config (:func:`~faircl.runs.outputs.config_filename`: ``config.yaml``, or
    ``config.<command>.yaml`` for a command other than ``fit`` without a logger); the CLI has already refused to
    overwrite an earlier run's file (``--overwrite``)."""

    def setup(self, trainer, pl_module, stage: str) -> None:
        command = str(getattr(trainer.state.fn, "value", None) or stage)  # TrainerFn.TESTING -> "test"
        self.config_filename = config_filename(command, bool(trainer.loggers))
        super().setup(trainer, pl_module, stage)


class FairCLI(LightningCLI):
    """LightningCLI with the datamodule → model links, default checkpoints, checkpoint look-up by ``best`` /
    ``last``, optimiser injection that keeps the method's parameter groups, prediction files and the fairness report
    after ``test``."""

    def __init__(self, *args: Any, overwrite: bool = False, untrained: bool = False,
                 optimizer_lr_given: bool = False, linked_given: dict[str, tuple[Any, str]] | None = None,
                 ckpt_linked: dict[str, tuple[Any, str]] | None = None, model_options: list[str] | None = None,
                 **kwargs: Any) -> None:
        self.overwrite, self.untrained, self.optimizer_lr_given = overwrite, untrained, optimizer_lr_given
        self.linked_given, self.ckpt_linked = dict(linked_given or {}), dict(ckpt_linked or {})
        self.model_options = list(model_options or [])
        self.ckpt_file: str | None = None
        self.ckpt_shapes: dict[str, tuple[int, ...]] = {}
        self.ckpt_progress: tuple[int | None, int | None] = (None, None)
        self.ckpt_overrides: list[tuple[str, Any, Any]] = []
        self.ckpt_used: str | None = None
        self.prediction_writer: PredictionFiles | None = None
        super().__init__(*args, **kwargs)

    def init_parser(self, **kwargs: Any):
        """The parser raises its errors (``faircl`` prints one line, exit 2) instead of printing the whole usage."""
        parser = super().init_parser(**kwargs)
        parser.exit_on_error = False
        return parser

    def after_instantiate_classes(self) -> None:
        super().after_instantiate_classes()
        # the links overwrite the model's value with the data's: a different value given by the user is an error
        check_linked(self.linked_given, self.datamodule)
        check_linked(self.ckpt_linked, self.datamodule, origin=" (stored in the checkpoint)")
        self._check_fits_checkpoint()

    # ------------------------------------------------------------------ a checkpoint's hyper-parameters
    # Private LightningCLI method (a checkpoint's hyper-parameters enter the config): Lightning 2.5.5 (.ci/lowest), 2.6.6
    def _parse_ckpt_path(self) -> None:
        """The model of a checkpoint is built with the checkpoint's hyper-parameters (``best`` / ``last`` are
        resolved to their file first), except the options given on the command line: those are kept, and
        :meth:`_check_fits_checkpoint` refuses the ones its weights cannot take (a wider encoder)."""
        sub = self.config.get("subcommand")
        if not sub:
            return
        node = self.config[sub]
        path = self._checkpoint_to_load(sub, node)
        if path is None:
            return
        node.ckpt_path = self.ckpt_file = path
        ckpt = checkpoint_dict(path)
        self.ckpt_progress = (ckpt.get("epoch"), epochs_trained(ckpt))
        self.ckpt_shapes = {k: tuple(v.shape) for k, v in ckpt["state_dict"].items()}
        hparams = {k: v for k, v in (ckpt.get("hyper_parameters") or {}).items() if k != "_instantiator"}
        if not hparams or node.get("model") is None:
            return
        before = argument_leaves(node.model.get("init_args"))
        if "_class_path" in hparams:
            hparams = {"class_path": hparams.pop("_class_path"), "dict_kwargs": hparams}
        self.config = self.parser.parse_object({sub: {"model": hparams}}, self.config)
        init = self.config[sub].model.init_args
        after = argument_leaves(init)
        for leaf, value in before.items():
            given = any(leaf == key or leaf.startswith(key + ".") for key in self.model_options)
            if given and leaf.split(".")[0] not in LINKED and leaf in after and after[leaf] != value:
                self.ckpt_overrides.append((leaf, value, after[leaf]))
                set_argument_leaf(init, leaf, value)  # the value given on the command line wins over the stored one

    def _checkpoint_to_load(self, sub: str, node: Any) -> str | None:
        """The checkpoint file this command loads (``best`` / ``last`` resolved), or ``None`` (the current
        weights; a ``fit`` that does not resume)."""
        given = node.get("ckpt_path")
        trainer = node.get("trainer")
        smoke = bool(trainer.get("fast_dev_run")) if trainer is not None else False
        if given is None and (sub == "fit" or self.untrained or smoke):
            return None
        root = (trainer.get("default_root_dir") if trainer is not None else None) or os.getcwd()
        names = {key: short_name(getattr(node.get(key), "class_path", node.get(key))) for key in ("model", "data")}
        return resolve_ckpt_path(given, root, explicit_untrained=False, **names)

    def _check_fits_checkpoint(self) -> None:
        """Refuse, in one line, an option the checkpoint's weights cannot take (naming it and the checkpoint's
        value), before any run folder is made; say which given values replace the checkpoint's."""
        if not self.ckpt_shapes or not isinstance(self.model, torch.nn.Module):
            return
        sized = set(getattr(self.model, "checkpoint_sized_buffers", ()))  # the method takes the checkpoint's size
        mismatch = [(k, tuple(v.shape), self.ckpt_shapes[k]) for k, v in self.model.state_dict().items()
                    if k in self.ckpt_shapes and tuple(v.shape) != self.ckpt_shapes[k]
                    and k.rsplit(".", 1)[-1] not in sized]
        if mismatch:
            key, built, stored = mismatch[0]
            shapes = f"{key} is {list(stored)} in the checkpoint, {list(built)} in the model the options build"
            sizes = set(built) | set(stored)
            culprits = [o for o in self.ckpt_overrides if o[1] in sizes and o[2] in sizes] or self.ckpt_overrides
            if culprits:
                options = ", ".join(f"--model.init_args.{leaf} {given}" for leaf, given, _ in culprits)
                stored_values = ", ".join(f"{leaf}={value}" for leaf, _, value in culprits)
                raise UserError(f"{options} cannot apply to --ckpt_path {self.ckpt_file}: it was trained with "
                               f"{stored_values} ({shapes}); leave the option out to use the checkpoint's value, or "
                               "train a new model with it")
            raise UserError(f"--ckpt_path {self.ckpt_file}: its weights do not fit the model ({shapes})")
        if self.ckpt_overrides:
            say("faircl: given on the command line, used instead of the checkpoint's values: " + ", ".join(
                f"--model.init_args.{leaf} {given} (the checkpoint has {stored})"
                for leaf, given, stored in self.ckpt_overrides))

    def add_arguments_to_parser(self, parser) -> None:
        for attr in ("num_classes", "num_groups", "input_dim"):
            parser.link_arguments(f"data.{attr}", f"model.init_args.{attr}", apply_on="instantiate")
        # input_kind: the model is built once, for the datamodule's input (faircl.methods.inputs)
        parser.link_arguments("data", "model.init_args.input_kind", compute_fn=self._linked_input_kind,
                              apply_on="instantiate")
        parser.add_argument("--report_plot", type=bool, default=True, help="test draws report.png (bench runs: no)")

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
        except (UserError, ValueError) as err:  # raised after instantiation: jsonargparse would rewrite it here
            self._input_error = err
            return None

    def instantiate_classes(self) -> None:
        self._input_error: Exception | None = None
        super().instantiate_classes()
        if self._input_error is not None:
            raise self._input_error

    # ------------------------------------------------------------------ trainer: logger and callbacks
    # Private LightningCLI method (no public hook sees the model first): checked in Lightning 2.5.5 (.ci/lowest), 2.6.6
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
    # Private LightningCLI method (where --optimizer is applied): checked in Lightning 2.5.5 (.ci/lowest) and 2.6.6
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
            raise UserError("set the learning rate with --model.lr, not --optimizer.lr: an injected --optimizer keeps "
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
    # Private LightningCLI method (no public hook sets ckpt_path): checked in Lightning 2.5.5 (.ci/lowest) and 2.6.6
    def _prepare_subcommand_kwargs(self, subcommand: str) -> dict[str, Any]:
        kwargs = super()._prepare_subcommand_kwargs(subcommand)
        root = self.trainer.default_root_dir
        given = kwargs.get("ckpt_path")
        names = {"model": type(self.model).__name__, "data": type(self.datamodule).__name__}
        config_file = config_filename(subcommand, bool(self.trainer.loggers))
        if subcommand == "fit":
            max_epochs, max_steps = self.trainer.max_epochs, self.trainer.max_steps
            if max_epochs == 0 or max_steps == 0:
                option = "max_epochs" if max_epochs == 0 else "max_steps"
                raise UserError(f"--trainer.{option} 0 trains nothing; pass 1 or more (or -1: no limit, with the "
                               "other one set)")
            self.trainer.callbacks.append(ResumeHint())
            if given is not None:
                path = resolve_ckpt_path(given, root, explicit_untrained=False, **names)
                epoch, done = self.ckpt_progress if path == self.ckpt_file else (checkpoint_epoch(path), None)
                if done is not None and max_epochs is not None and max_epochs != -1 and max_epochs <= done:
                    raise UserError(f"--ckpt_path {path}: the checkpoint has trained {done} epoch(s) (saved in epoch "
                                   f"{epoch}, counted from 0), so --trainer.max_epochs {max_epochs} leaves nothing "
                                   f"to train; pass --trainer.max_epochs {done + 1} or more to train further")
                if isinstance(self.trainer.checkpoint_callback, FairCheckpoint):
                    warnings.filterwarnings("ignore", message=RESUME_QUIET)  # CarryBest carries the best over
                self.trainer.callbacks.append(CarryBest(path))  # best of the whole run, not of the resumed part
                # the optimiser's learning rate and weight decay are this run's, not the ones stored with its state
                self.trainer.callbacks.append(ConfiguredOptimizer())
                where = self.trainer.log_dir  # a collective under DDP: every rank reads it
                say(f"faircl: resuming from {path} (saved in epoch {epoch}, counted from 0); this run writes to "
                     f"{where}", self.trainer)
                kwargs["ckpt_path"] = path
                self.ckpt_used = path
            elif not self.trainer.fast_dev_run:  # a smoke run writes neither config nor checkpoints
                where = self.trainer.log_dir
                guard_outputs(where, (config_file, "checkpoints"), self.overwrite)
                say(f"faircl: fit writes to {where}", self.trainer)
            return kwargs
        # fast_dev_run is a smoke run: without --ckpt_path it evaluates the weights at hand.
        smoke = given is None and bool(self.trainer.fast_dev_run)
        path = resolve_ckpt_path(given, root, explicit_untrained=self.untrained or smoke, **names)
        if path is not None:
            checkpoint_epoch(path)  # a clear message for an unreadable file
        kwargs["ckpt_path"] = path
        self.ckpt_used = path
        if subcommand == "test":
            kwargs["verbose"] = False  # the fairness report below is the one table of a test
        outputs = {"test": (config_file, "report.json", "report.md"),
                   "predict": (config_file, "predictions.pt", "predictions.csv")}.get(subcommand, (config_file,))
        if not smoke:
            guard_outputs(self.trainer.log_dir, outputs, self.overwrite)
        which = "the current (untrained) weights" if path is None else path
        say(f"faircl: {subcommand} with {which}", self.trainer)
        return kwargs

    def before_fit(self) -> None:
        # the fit record travels in the checkpoint: `faircl compare` pairs runs by the fit's seed and settings
        node = self.config.get(self.subcommand) if self.subcommand else self.config
        self.model.fit_record = fit_record_of(node.as_dict() if hasattr(node, "as_dict") else dict(node))

    def after_test(self) -> None:
        # ``trainer.log_dir`` is a collective (a broadcast from rank 0): every rank reads it before any returns.
        log_dir = Path(self.trainer.log_dir or self.trainer.default_root_dir)
        report = getattr(self.model, "test_report", None)
        if not report or not self.trainer.is_global_zero:
            return
        meta = {"method": type(self.model).__name__, "data": type(self.datamodule).__name__,
                "checkpoint": self.ckpt_used or "none (untrained weights)"}
        rows = getattr(self.model, "test_rows", None) or {}
        meta.update(run_record(self.model, self.datamodule, rows, log_dir))
        path = write_report(report, log_dir, meta=meta)
        files = [path, path.with_suffix(".md")]
        if (self.config.get(self.subcommand) or self.config).get("report_plot", True):  # false: a bench's runs
            files.append(log_dir / "report.png")
            plot_report(report, files[-1], title=f"{meta['method']} on {meta['data']} — test",
                        rows=rows.get("test"), class_names=getattr(self.datamodule, "class_names", None))
        print_report(report, title=f"{meta['method']} on {meta['data']} — test")
        print(f"report written to {', '.join(map(str, files[:-1]))} and {files[-1]}")

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
        raise UserError(f"cannot import {kind} {path!r}: {err} (is its package on the Python path?)") from err
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise UserError(f"{kind} {path!r} is not a subclass of {base.__module__}.{base.__name__}")
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
            raise UserError(f"unknown {kind} {value!r} for --{key}; available: {', '.join(sorted(choices[key]))}, or "
                           f"an import path such as mypkg.mymodule.My{'Method' if key == 'model' else 'Data'}")


# ---------------------------------------------------------------------------------------------------- entry points
def _prepare(argv: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Strip faircl's own options from ``argv``, resolve config names and check what can be checked before
    LightningCLI parses: the names, an explicit checkpoint (readable, of the requested method), the accelerator.

    Returns (argv, FairCLI options)."""
    overwrite = "--overwrite" in argv
    argv = [a for a in argv if a != "--overwrite"]
    argv, files = resolve_configs(argv)
    configs = [read_config(p) for p in files]
    check_names(argv, configs)
    _check_accelerator(argv, configs)
    ckpt = option_value(argv, "ckpt_path")
    untrained = ckpt is not None and ckpt.lower() in UNTRAINED
    ckpt_linked: dict[str, tuple[Any, str]] = {}
    if ckpt is not None and Path(ckpt).expanduser().is_file():
        # LightningCLI reads the file's hyper-parameters first: a corrupt or unsafe one fails here clearly
        try:
            stored = check_checkpoint(ckpt)
        except CheckpointError as err:
            raise UserError(str(err)) from None
        argv = _model_of_checkpoint(argv, configs, ckpt, stored)
        hp = stored.get("hyper_parameters") or {}
        ckpt_linked = {k: (hp[k], f"{k}={hp[k]} of --ckpt_path {ckpt}") for k in LINKED if hp.get(k) is not None}
    if untrained:
        argv = [a for a in argv if not a.startswith("--ckpt_path=")]
        argv = [a for i, a in enumerate(argv) if a != "--ckpt_path" and not (i and argv[i - 1] == "--ckpt_path")]
    return argv, {"overwrite": overwrite, "untrained": untrained, "model_options": given_model_options(argv),
                  "optimizer_lr_given": sets_optimizer_lr(argv, configs),
                  "linked_given": linked_values_given(argv, list(zip(files, configs))), "ckpt_linked": ckpt_linked}


def _requested_model(argv: list[str], configs: list[dict[str, Any]]) -> str | None:
    value = option_value(argv, "model")
    if value is not None and not value.endswith((".yaml", ".yml", ".json")) and "{" not in value:
        return value
    for cfg in reversed(configs):
        name = short_name(cfg.get("model")) if isinstance(cfg, dict) else None
        if name is not None:
            return cfg["model"] if isinstance(cfg["model"], str) else cfg["model"]["class_path"]
    return None


def _model_of_checkpoint(argv: list[str], configs: list[dict[str, Any]], ckpt: str, stored: dict) -> list[str]:
    """Refuse a checkpoint of another method than the requested one; with no method requested, use the
    checkpoint's (and say so)."""
    stored_class = checkpoint_class(stored)
    if stored_class is None:
        return argv
    wanted = _requested_model(argv, configs)
    if wanted is None:
        say(f"faircl: no --model given: using the checkpoint's method {short_name(stored_class)}")
        return [*argv, "--model", stored_class]
    if short_name(wanted) != short_name(stored_class):
        raise UserError(f"--ckpt_path {ckpt} holds a {short_name(stored_class)} model, but the method requested is "
                       f"{short_name(wanted)}: pass a checkpoint of a {short_name(wanted)} run, or --model "
                       f"{short_name(stored_class)} (or leave --model out to use the checkpoint's method)")
    return argv


def _check_accelerator(argv: list[str], configs: list[dict[str, Any]]) -> None:
    value = option_value(argv, "trainer.accelerator")
    if value is None:
        for cfg in configs:
            trainer = cfg.get("trainer") if isinstance(cfg, dict) else None
            if isinstance(trainer, dict) and isinstance(trainer.get("accelerator"), str):
                value = trainer["accelerator"]
    if value is not None and value.lower() in ("gpu", "cuda"):
        if not torch.cuda.is_available():
            raise UserError(f"--trainer.accelerator {value}: no GPU is available to this process "
                           "(torch.cuda.is_available() is False); use --trainer.accelerator cpu (or auto)")


def _quiet_lightning_log() -> None:
    """Filter the :data:`SILENT_PREFIXES` lines out of Lightning's rank-zero log, and its "Seed set to" line (the
    seed is in the run's config), once per process."""
    log = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    if not any(getattr(f, "faircl_quiet", False) for f in log.filters):
        quiet = logging.Filter()
        quiet.filter = lambda record: not str(record.getMessage()).startswith(SILENT_PREFIXES)  # type: ignore
        quiet.faircl_quiet = True  # type: ignore[attr-defined]
        log.addFilter(quiet)
    logging.getLogger("lightning.fabric.utilities.seed").setLevel(logging.WARNING)


def run_cli(args: list[str], run: bool = True, callbacks: list | None = None) -> FairCLI:
    """Run ``faircl <args>`` in this process and return the :class:`FairCLI` (model, datamodule, trainer).

    ``callbacks`` join the trainer without entering the run's ``config.yaml`` (a run's epoch history, a sweep's
    pruning). Errors are raised (:class:`UserError`, ``DataError``, ...) for the caller to turn into an exit status."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    datamodules()  # every datamodule class is imported, so a class name in a config resolves
    argv, options = _prepare(list(args))
    for message in QUIET:
        warnings.filterwarnings("ignore", message=message)
    _quiet_lightning_log()
    defaults = {**TRAINER_DEFAULTS, **({"callbacks": list(callbacks)} if callbacks else {})}
    return FairCLI(FairModule, FairDataModule, subclass_mode_model=True, subclass_mode_data=True, args=argv, run=run,
                   seed_everything_default=0, trainer_defaults=defaults, save_config_callback=_SaveConfig,
                   save_config_kwargs={"overwrite": True}, auto_configure_optimizers=True, **options)
