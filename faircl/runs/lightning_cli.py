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

import os
import warnings
from functools import partial, update_wrapper
from pathlib import Path
from types import MethodType
from typing import Any

import lightning.pytorch as pl
import torch
from jsonargparse import ActionConfigFile, ArgumentError, Namespace
from lightning.pytorch.cli import LightningCLI, LRSchedulerTypeTuple, SaveConfigCallback, instantiate_class
from lightning.pytorch.loggers import CSVLogger

from faircl.checkpoints import AtomicCheckpointIO, FairCheckpoint
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
from faircl.runs.config_files import read_config, resolve_config
from faircl.runs.given_options import LINKED, GivenOptions, argument_leaves, check_linked, set_argument_leaf
from faircl.runs.cli_names import check_accelerator, check_name, datamodules, import_class, same_method
from faircl.runs.outputs import PredictionFiles, config_filename, guard_outputs
from faircl.runs.quiet_log import QUIET, quiet_lightning_log
from faircl.runs.records import fit_record_of, run_record
from faircl.runs.user_error import UserError, parser_refusal

SUBCOMMANDS = ("fit", "validate", "test", "predict")
#: On ``fit --ckpt_path``: the checkpoint callback starts in a new folder; :class:`CarryBest` carries the best over.
RESUME_QUIET = r"(?s).*The dirpath has changed from.*won't be reloaded.*"
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
        if "overwrite" in self.config:  # this command's permission, not a setting of the run
            self.config = self.config.clone()
            del self.config["overwrite"]
        super().setup(trainer, pl_module, stage)


class _ConfigFile(ActionConfigFile):
    """``--config``: a file, a shipped config by name (:func:`~faircl.runs.config_files.resolve_config`) or an inline
    mapping (``{"trainer": {"max_epochs": 3}}``, JSON or YAML). A file is read first by
    :func:`~faircl.runs.config_files.read_config` (malformed YAML or a Python tag is one line naming the file), then
    parsed by jsonargparse as any config file."""

    def __call__(self, parser, cfg, values, option_string=None):
        if str(values).lstrip().startswith("{"):  # a mapping given inline (GivenOptions.arguments: a sweep's trials)
            super().__call__(parser, cfg, values, option_string)
            return
        path = resolve_config(str(values))
        read_config(path)
        super().__call__(parser, cfg, path, option_string)


class FairCLI(LightningCLI):
    """LightningCLI with the datamodule → model links, default checkpoints, checkpoint look-up by ``best`` /
    ``last``, optimiser injection that keeps the method's parameter groups, prediction files and the fairness report
    after ``test``."""

    #: the top-level options of a command of its own beside the run's (faircl sweep's): not the run's, not checked
    own_keys: frozenset[str] = frozenset()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.untrained = False
        self.given = GivenOptions(Namespace(), [])
        self.ckpt_linked: dict[str, tuple[Any, str]] = {}
        self.ckpt_read: tuple[str | None, dict[str, Any]] = (None, {})
        self.ckpt_file: str | None = None
        self.ckpt_shapes: dict[str, tuple[int, ...]] = {}
        self.ckpt_progress: tuple[int | None, int | None] = (None, None)
        self.ckpt_overrides: list[tuple[str, Any, Any]] = []
        self.ckpt_used: str | None = None
        self.prediction_writer: PredictionFiles | None = None
        super().__init__(*args, **kwargs)

    def init_parser(self, **kwargs: Any):
        """The parser raises its errors (``faircl`` prints one line, exit 2) instead of printing the whole usage;
        ``--config`` also takes a shipped config's name."""
        kwargs.setdefault("dump_header", [f"lightning.pytorch=={pl.__version__}"])
        parser = self.parser_class(**kwargs)
        parser.exit_on_error = False
        parser.add_argument("-c", "--config", action=_ConfigFile,
                            help="a config file (yaml or json), or a shipped config's name (faircl configs)")
        return parser

    def add_core_arguments_to_parser(self, parser) -> None:
        """LightningCLI's trainer, model and data arguments, with ``--model`` left out allowed: a checkpoint file
        given as ``--ckpt_path`` names its method (:meth:`parse_arguments`, which also asks for a missing ``--data``
        in a line of its own)."""
        parser.add_lightning_class_args(self.trainer_class, "trainer")
        parser.set_defaults({"trainer." + k: v for k, v in self.trainer_defaults.items() if k != "callbacks"})
        parser.add_lightning_class_args(self._model_class, "model", subclass_mode=True, required=False)
        parser.add_lightning_class_args(self._datamodule_class, "data", subclass_mode=True, required=False)

    def parse_arguments(self, parser, args) -> None:
        """jsonargparse parses the command line twice: with the defaults (the run's config) and without (what the
        config files and the options give, :class:`~faircl.runs.given_options.GivenOptions`). An unknown method or
        datamodule is named with the choices; a checkpoint file is checked, and names the method when ``--model`` is
        left out."""
        if isinstance(args, (dict, Namespace)):
            super().parse_arguments(parser, args)
            return
        try:
            self.config = parser.parse_args(args)
            given = parser.parse_args(args, defaults=False)
        except ArgumentError as err:
            refusal = parser_refusal(err)
            if refusal is not None and refusal.option in ("model", "data") and (refusal.no_class or refusal.reason):
                check_name(refusal.option, str(refusal.value))  # raises the choices, or why the import failed
            raise
        sub = self.config.get("subcommand")
        self.given = GivenOptions.of(given.get(sub) if sub else given, drop=self.own_keys)
        if self.own_keys and not self.given.leaves() and not self.given.files:
            return  # only the command's own options (faircl sweep --out DIR --resume): no run to check
        node = self.config[sub] if sub else self.config
        if node.get("model") is not None and short_name(node.model.class_path) == FairModule.__name__:
            node.model = None  # only the method's options given (jsonargparse then takes the base class): no method
        if node.get("data") is None:
            raise UserError("no datamodule given: pass --data NAME (faircl configs lists the shipped configs), or a "
                           "--config with a data: section")
        check_name("data", node.data.class_path)
        check_accelerator(node.get("trainer"))
        ckpt = node.get("ckpt_path")
        self.untrained = "ckpt_path" in self.given.namespace and (ckpt is None or str(ckpt).lower() in UNTRAINED)
        if self.untrained:
            node.ckpt_path = None
        elif ckpt is not None and Path(ckpt).expanduser().is_file():
            # its hyper-parameters enter the config (_parse_ckpt_path): a corrupt or unsafe file fails here clearly
            stored = checkpoint_dict(ckpt)
            self.ckpt_read = (ckpt, stored)  # read once: _parse_ckpt_path takes it from here
            stored_class = checkpoint_class(stored)
            if node.get("model") is None and stored_class is not None:
                say(f"faircl: no --model given: using the checkpoint's method {short_name(stored_class)}")
                options = self.given.namespace.get("model")
                init = options.get("init_args") if options is not None else None
                update = {"model": {"class_path": stored_class, "init_args": init.as_dict() if init else {}}}
                self.config = parser.parse_object({sub: update} if sub else update, self.config)
                node = self.config[sub] if sub else self.config
            same_method(ckpt, node.model.class_path, stored_class)
            hp = stored.get("hyper_parameters") or {}
            self.ckpt_linked = {k: (hp[k], f"{k}={hp[k]} of --ckpt_path {ckpt}") for k in LINKED if hp.get(k) is not None}
        if node.get("model") is None:
            raise UserError("no method given: pass --model NAME (faircl configs lists the shipped ones), a --config "
                           "with a model: section, or --ckpt_path FILE of a trained run")
        check_name("model", node.model.class_path)

    def after_instantiate_classes(self) -> None:
        super().after_instantiate_classes()
        # the links overwrite the model's value with the data's: a different value given by the user is an error
        check_linked(self.given.linked(), self.datamodule)
        check_linked(self.ckpt_linked, self.datamodule, origin=" (stored in the checkpoint)")
        self._check_fits_checkpoint()

    # ------------------------------------------------------------------ a checkpoint's hyper-parameters
    # The one private LightningCLI method overridden (a checkpoint's hyper-parameters enter the config; no public hook
    # lies between the parse and the instantiation): pinned by tests/cli/test_lightning_cli_override.py, Lightning 2.5.5
    # (.ci/lowest) and the newest
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
        ckpt = self.ckpt_read[1] if self.ckpt_read[0] == path else checkpoint_dict(path)
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
            given = any(leaf == key or leaf.startswith(key + ".") for key in self.given.model_options())
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
        parser.add_argument("--overwrite", action="store_true", help="replace the outputs of an earlier run")
        # --optimizer / --lr_scheduler: applied by _inject_optimizer, keeping the method's parameter groups
        parser.add_optimizer_args((torch.optim.Optimizer,))
        parser.add_lr_scheduler_args(LRSchedulerTypeTuple)

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
                cls = import_class(class_path, FairModule, "method")
            return check_encoder_for(cls or FairModule, encoder, dm)
        except (UserError, ValueError) as err:  # raised after instantiation: jsonargparse would rewrite it here
            self._input_error = err
            return None

    def instantiate_classes(self) -> None:
        self._input_error: Exception | None = None
        super().instantiate_classes()
        if self._input_error is not None:
            raise self._input_error
        self._inject_optimizer()

    # ------------------------------------------------------------------ trainer: logger and callbacks
    def instantiate_trainer(self, **kwargs: Any) -> Any:
        """The trainer of the config, with faircl's defaults: a TensorBoard (else CSV) logger, atomic checkpoint
        writes, the best checkpoint by the model's monitored metric on ``fit``, the prediction files on
        ``predict``."""
        node = self.config_init.get(str(self.subcommand), self.config_init)
        config = {**(node.get("trainer") or {}), **kwargs}
        if config.get("logger") in (None, True):
            root = config.get("default_root_dir") or os.getcwd()
            try:
                from lightning.pytorch.loggers import TensorBoardLogger  # deferred: optional extra
                import tensorboard  # noqa: F401  # deferred: optional extra faircl[tensorboard]
                kwargs["logger"] = TensorBoardLogger(save_dir=root)
            except ImportError:
                kwargs["logger"] = CSVLogger(save_dir=root)
        if not config.get("plugins"):
            kwargs["plugins"] = [AtomicCheckpointIO()]  # a crash during a save never leaves a truncated checkpoint
        user = config.get("callbacks") or []
        callbacks = list(user) if isinstance(user, list) else [user]
        has_ckpt = any(type(c).__name__.endswith("ModelCheckpoint") or hasattr(c, "best_model_path")
                       for c in callbacks)
        if (self.subcommand == "fit" and not has_ckpt and config.get("enable_checkpointing", True) is not False
                and not config.get("fast_dev_run")):
            monitor, mode = monitor_spec(self.model)
            callbacks.append(FairCheckpoint(monitor=monitor, mode=mode))
        if self.subcommand == "predict":
            self.prediction_writer = PredictionFiles(split=getattr(self.datamodule, "predict_split", "test"))
            callbacks.append(self.prediction_writer)
        return super().instantiate_trainer(**kwargs, callbacks=callbacks)

    # ------------------------------------------------------------------ optimiser injection
    def _inject_optimizer(self) -> None:
        """``--optimizer X`` (and ``--lr_scheduler Y``) replace the optimiser class, keeping the method's parameter
        groups (:meth:`FairModule.param_groups`: ``module_lrs`` / ``lr_overrides``); the base learning rate is
        ``--model.lr``."""
        node = self.config_init.get(str(self.subcommand), self.config_init)
        opt_init = node.get("optimizer")
        if not opt_init:
            return
        if self.given.optimizer_lr():
            raise UserError("set the learning rate with --model.lr, not --optimizer.lr: an injected --optimizer keeps "
                           "the method's parameter groups and their own learning rates (module_lrs / lr_overrides) "
                           "and takes its base learning rate from the model")
        init = {"class_path": opt_init["class_path"], "init_args": dict(opt_init.get("init_args") or {})}
        init["init_args"]["lr"] = float(self.model.hparams.lr)
        optimizer = instantiate_class(self.model.param_groups(), init)
        sched_init = node.get("lr_scheduler")
        lr_scheduler = instantiate_class(optimizer, dict(sched_init)) if sched_init else None
        fn = partial(self.configure_optimizers, optimizer=optimizer, lr_scheduler=lr_scheduler)
        update_wrapper(fn, self.configure_optimizers)
        self.model.configure_optimizers = MethodType(fn, self.model)

    # ------------------------------------------------------------------ the commands: run folders and checkpoints
    # LightningCLI runs a command by the CLI's own method of that name when it has one, with the config's arguments
    # of the Trainer method (``ckpt_path``, ``verbose``, ...).
    def fit(self, model, datamodule=None, ckpt_path: str | None = None, **kwargs: Any) -> None:
        max_epochs, max_steps = self.trainer.max_epochs, self.trainer.max_steps
        if max_epochs == 0 or max_steps == 0:
            option = "max_epochs" if max_epochs == 0 else "max_steps"
            raise UserError(f"--trainer.{option} 0 trains nothing; pass 1 or more (or -1: no limit, with the "
                           "other one set)")
        self.trainer.callbacks.append(ResumeHint())
        if ckpt_path is not None:
            path = resolve_ckpt_path(ckpt_path, self.trainer.default_root_dir, explicit_untrained=False,
                                     **self._names())
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
            self.ckpt_used = path
        elif not self.trainer.fast_dev_run:  # a smoke run writes neither config nor checkpoints
            where = self.trainer.log_dir
            guard_outputs(where, (config_filename("fit", bool(self.trainer.loggers)), "checkpoints"),
                          self._overwrite())
            say(f"faircl: fit writes to {where}", self.trainer)
        self.trainer.fit(model, datamodule=datamodule, ckpt_path=self.ckpt_used, **kwargs)

    def validate(self, model, datamodule=None, ckpt_path: str | None = None, **kwargs: Any) -> None:
        self.trainer.validate(model, datamodule=datamodule, ckpt_path=self._evaluated("validate", ckpt_path),
                              **kwargs)

    def test(self, model, datamodule=None, ckpt_path: str | None = None, **kwargs: Any) -> None:
        kwargs["verbose"] = False  # the fairness report (after_test) is the one table of a test
        self.trainer.test(model, datamodule=datamodule, ckpt_path=self._evaluated("test", ckpt_path), **kwargs)

    def predict(self, model, datamodule=None, ckpt_path: str | None = None, **kwargs: Any) -> None:
        self.trainer.predict(model, datamodule=datamodule, ckpt_path=self._evaluated("predict", ckpt_path),
                             **kwargs)

    def _names(self) -> dict[str, str]:
        return {"model": type(self.model).__name__, "data": type(self.datamodule).__name__}

    def _overwrite(self) -> bool:
        return bool(self.config.get(self.subcommand, self.config).get("overwrite"))

    def _evaluated(self, command: str, given: str | None) -> str | None:
        """The checkpoint that ``validate`` / ``test`` / ``predict`` load (``None``: the weights at hand), after
        refusing to replace an earlier run's outputs."""
        smoke = given is None and bool(self.trainer.fast_dev_run)  # a smoke run evaluates the weights at hand
        path = resolve_ckpt_path(given, self.trainer.default_root_dir, explicit_untrained=self.untrained or smoke,
                                 **self._names())
        if path is not None:
            checkpoint_epoch(path)  # a clear message for an unreadable file
        self.ckpt_used = path
        config_file = config_filename(command, bool(self.trainer.loggers))
        outputs = {"test": (config_file, "report.json", "report.md"),
                   "predict": (config_file, "predictions.pt", "predictions.csv")}.get(command, (config_file,))
        if not smoke:
            guard_outputs(self.trainer.log_dir, outputs, self._overwrite())
        which = "the current (untrained) weights" if path is None else path
        say(f"faircl: {command} with {which}", self.trainer)
        return path

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


# ---------------------------------------------------------------------------------------------------- entry points
def cli_options(callbacks: list | None = None) -> dict[str, Any]:
    """The arguments faircl builds its :class:`FairCLI` with, for every command."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    datamodules()  # every datamodule class is imported, so a class name in a config resolves
    for message in QUIET:
        warnings.filterwarnings("ignore", message=message)
    quiet_lightning_log()
    defaults = {**TRAINER_DEFAULTS, **({"callbacks": list(callbacks)} if callbacks else {})}
    return dict(model_class=FairModule, datamodule_class=FairDataModule, subclass_mode_model=True,
                subclass_mode_data=True, seed_everything_default=0, trainer_defaults=defaults,
                save_config_callback=_SaveConfig, save_config_kwargs={"overwrite": True}, auto_configure_optimizers=False)


def run_cli(args: list[str], run: bool = True, callbacks: list | None = None) -> FairCLI:
    """Run ``faircl <args>`` in this process and return the :class:`FairCLI` (model, datamodule, trainer).

    ``callbacks`` join the trainer without entering the run's ``config.yaml`` (a run's epoch history, a sweep's
    pruning). Errors are raised (:class:`UserError`, ``DataError``, ...) for the caller to turn into an exit status."""
    return FairCLI(args=list(args), run=run, **cli_options(callbacks))
