"""`FairModule`: the LightningModule every faircl method subclasses.

It owns the shared machinery, so that a concrete method holds only its heads (built in its ``__init__`` after
``super().__init__(**kwargs)``) and its loss (:meth:`FairModule.losses`): the encoder and classifier (or an online
probe, :meth:`FairModule.add_online_probe`); the second view (:meth:`FairModule.second_view`, through the gradient
cache when ``grad_cache_chunk`` is set, :mod:`faircl.methods.scale`); the classifier's cross-entropy
(:meth:`FairModule.classifier_terms`); ``gather_distributed``; group names and batch rows; stages
(:meth:`FairModule.stage_epochs`, :meth:`FairModule.on_stage_start`) and frozen sub-modules
(:meth:`FairModule.freeze_module`); the optimiser with per-module learning rates (:meth:`FairModule.module_lrs`);
the checkpoint policy (:meth:`FairModule.configure_callbacks`); passes over the datamodule
(:meth:`FairModule.collect`); validation / test metrics and the test report (:meth:`FairModule.extra_test_metrics`).

Arguments are typed (``Literal`` for a choice) and validated through :mod:`faircl._checks`. FairModule's own
options are read from ``self.hparams``; a method's own arguments are stored once as attributes of the same name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import lightning as L
import torch
from lightning.pytorch.trainer.states import TrainerFn
from torch import nn
from torch.nn import functional as F

from faircl._checks import check_choice, check_positive
from faircl.checkpoints import FairCheckpoint, check_finite_terms, is_default_checkpoint
from faircl.data.base import FairDataModule
from faircl.methods.inputs import TRAINABLE_KINDS, check_datamodule, resolve_encoder
from faircl.methods.optim import OPTIMIZERS, SCHEDULERS, build_optimizer, param_groups
from faircl.methods.passes import collect as collect_rows
from faircl.methods.records import ROW_PREDICTIONS, default_fit_record, test_rows
from faircl.methods.scale import cached_training_step, close_worker_group, rewrap_ddp
from faircl.methods.selection import monitor_mode as resolve_monitor_mode
from faircl.methods.selection import monitor_spec, selection_scores
from faircl.methods.steplog import log_epoch_terms, record_train_terms, stack_terms
from faircl.metrics import GroupFairness
from faircl.metrics.leakage import fit_leakage_probe
from faircl.metrics.probes import probe_accuracy
from faircl.models import build_encoder, mlp
from faircl.utils import gather_rows, group_names_or_default, per_group_items


class FairModule(L.LightningModule):
    """Base method: encoder → classifier, trained with cross-entropy unless a subclass overrides :meth:`losses`.

    Args:
        num_classes: task classes (linked from the datamodule by the CLI).
        num_groups: protected-attribute groups (linked from the datamodule).
        input_dim: feature dimension / vocabulary size / image channels (linked from the datamodule).
        encoder: a registered encoder (``mlp``, ``tokens``, ``hf``, ``conv``...); ``auto`` follows ``input_kind``.
        encoder_kwargs: keyword arguments of that encoder.
        classifier_hidden: hidden width of a 2-layer MLP classifier; ``0`` gives a linear classifier.
        lr: learning rate.
        weight_decay: weight decay.
        optimizer: ``adam`` | ``adamw`` | ``sgd`` (or pass ``--optimizer`` to the CLI to inject any optimiser).
        scheduler: ``none`` | ``cosine`` | ``step`` (per epoch).
        lr_overrides: learning rate by sub-module name (a prefix of the parameter names, e.g.
            ``{"objective": 5e-4}``); merged over the method's own :meth:`module_lrs`.
        leakage: at test end, measure Leakage@h and Leakage@ŷ (linear SVM trained on the train split).
        leakage_max_rows: at most this many train rows to fit the leakage probes (seeded subset).
        row_predictions: where the per-row predictions of a test (``rows.npz``, what ``faircl compare`` and
            ``faircl bench`` judge) come from: ``logits`` (the classifier, or an embedding method's online probe),
            ``knn`` (the label of the nearest training embedding, cosine, over ``z`` where the method has one, else
            ``h``: retrieval, finDML's Recall@1) or ``probe`` (a logistic regression fit on the standardised training
            ``h``: SimCLR's linear evaluation). The test report's metrics stay those of the logits.
        monitor: validation metric that selects the best checkpoint (default ``default_monitor``), e.g. ``val/dto``.
        monitor_mode: ``min`` | ``max`` for ``monitor`` (default: ``min`` for losses, gaps, leakage and DTO).
        input_kind: the datamodule's ``input_kind`` (linked by the CLI); ``None``: ``encoder="auto"`` assumes
            features when ``input_dim >= 1`` and the datamodule is checked at set-up (:mod:`faircl.methods.inputs`).
        gather_distributed: under DDP, losses that contrast rows across the batch (SupCon, CS-InfoNCE, NT-Xent)
            contrast the local anchors with every process's rows: the loss of the global batch, exact gradients
            after DDP averaging. Methods without such a loss ignore it.
        grad_cache_chunk: train with a gradient cache of this many rows per chunk (the memory of a ``chunk``-row
            step, the gradients of the whole batch; manual optimisation, see :mod:`faircl.methods.scale`).
    """

    #: (metric, "min" | "max") selecting the best checkpoint unless ``monitor`` is given; methods may override.
    default_monitor: tuple[str, str] = ("val/accuracy", "max")
    #: stop at the first NaN / inf loss term (one device sync per step); set False to skip the check.
    check_finite_loss: bool = True
    #: input kinds the method trains on (:mod:`faircl.methods.inputs`)
    input_kinds: tuple[str, ...] = TRAINABLE_KINDS
    #: the method trains on two augmented views (``x2``; the datamodule's ``two_views=True``)
    requires_views: bool = False
    #: buffers sized by the data a run saw (one entry per train row), taken at the checkpoint's size on load
    checkpoint_sized_buffers: tuple[str, ...] = ()
    #: the method can train through the gradient cache: its outputs are ``self(x)`` of the batch's views and every
    #: trained parameter is reached through them (no parameters used only inside :meth:`losses`)
    supports_grad_cache: bool = True

    def __init__(
        self,
        num_classes: int = 2,
        num_groups: int = 2,
        input_dim: int = 0,
        encoder: str = "auto",
        encoder_kwargs: dict[str, Any] | None = None,
        classifier_hidden: int = 0,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        optimizer: Literal["adam", "adamw", "sgd"] = "adam",
        scheduler: Literal["none", "cosine", "step"] = "none",
        lr_overrides: dict[str, float] | None = None,
        leakage: bool = True,
        leakage_max_rows: int = 5000,
        row_predictions: Literal["logits", "knn", "probe"] = "logits",
        monitor: str | None = None,
        monitor_mode: Literal["min", "max"] | None = None,
        input_kind: str | None = None,
        gather_distributed: bool = True,
        grad_cache_chunk: int | None = None,
    ) -> None:
        super().__init__()
        check_choice("optimizer", optimizer, tuple(OPTIMIZERS))
        check_choice("scheduler", scheduler, SCHEDULERS)
        check_choice("row_predictions", row_predictions, ROW_PREDICTIONS)
        check_positive("num_classes", num_classes, minimum=2)
        check_positive("num_groups", num_groups, minimum=1)
        check_positive("lr", lr)
        check_positive("weight_decay", weight_decay, strict=False)
        check_positive("classifier_hidden", classifier_hidden, strict=False)
        if monitor_mode is not None:
            resolve_monitor_mode(monitor or type(self).default_monitor[0], monitor_mode)
        if grad_cache_chunk is not None:
            check_positive("grad_cache_chunk", grad_cache_chunk, minimum=1)
            if not type(self).supports_grad_cache:
                raise ValueError(f"grad_cache_chunk: {type(self).__name__} does not train through the gradient cache "
                                 "(leave it None)")
        self.save_hyperparameters()  # the arguments of every __init__ up to the concrete class
        self.num_classes, self.num_groups = num_classes, num_groups
        self.hparams["encoder"] = resolve_encoder(type(self), encoder, input_kind, input_dim)  # the built one
        self.encoder = build_encoder(self.hparams.encoder, input_dim, **(encoder_kwargs or {}))
        self.classifier: nn.Module | None = mlp(self.encoder.out_dim, classifier_hidden, num_classes,
                                                num_layers=2 if classifier_hidden else 1)
        self.automatic_optimization = grad_cache_chunk is None
        self.val_fairness = GroupFairness(num_classes, num_groups)
        self.test_fairness = GroupFairness(num_classes, num_groups)
        self.test_report: dict[str, float] = {}
        self.test_rows: dict[str, dict[str, Any]] = {}  # per-row predictions of the last test (faircl.eval.row_predictions)
        self.fit_record: dict[str, Any] | None = None  # set by the faircl command or read from the checkpoint
        self._leakage_probes: dict[str, Any] = {}  # the last test's leakage probes by representation
        self._active_stage: str | None = None
        self._test_outputs: list[dict[str, torch.Tensor]] = []
        self._frozen: list[nn.Module] = []
        self._probe_on, self._probe_trained = None, False  # see add_online_probe
        self._second_view: dict[str, torch.Tensor] | None = None  # see provide_second_view
        self._ddp_wrapped: Any = None  # see faircl.methods.scale.rewrap_ddp

    # ------------------------------------------------------------------ model
    def add_online_probe(self, in_dim: int, on: str = "h", trained: bool = True) -> None:
        """Make ``self.classifier`` a linear probe ``out[on].detach() → logits`` (no gradient into the features).

        With ``trained``, :meth:`with_probe_loss` adds its cross-entropy to the loss terms as ``probe_ce``; the probe
        gives the prediction-fairness metrics and Leakage@ŷ of methods that have no classifier of their own.
        """
        self.classifier = nn.Linear(in_dim, self.num_classes)
        self._probe_on, self._probe_trained = on, trained

    def encode(self, x: Any) -> torch.Tensor:
        """``x → h``, the representation every head and metric sees (default: the encoder output)."""
        return self.encoder(x)

    def embed_heads(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        """Extra outputs computed from ``h`` (e.g. ``{"z": normalised projection}``). Default: none."""
        return {}

    def forward(self, x: Any) -> dict[str, torch.Tensor]:
        """``x → {"h": encode(x), **embed_heads(h), "logits": classifier(...)}``."""
        h = self.encode(x)
        out = {"h": h, **self.embed_heads(h)}
        if self.classifier is not None:
            feats = out[self._probe_on].detach() if self._probe_on else h
            out["logits"] = self.classifier(feats)
        return out

    def step_outputs(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """Outputs of one batch in every step (default: ``self(batch["x"])``)."""
        return self(batch["x"])

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Named loss terms with ``loss`` the total. Default objective: :meth:`classifier_terms`.

        Methods that need the second view call :meth:`second_view` here.
        """
        return self.classifier_terms(batch, out)

    def classifier_terms(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``{"ce": cross-entropy of out["logits"] against batch["y"] (float32), "loss": the same}``: the CE
        baseline and the classifier stage of staged methods."""
        ce = F.cross_entropy(out["logits"].float(), batch["y"])
        return {"ce": ce, "loss": ce}

    def with_probe_loss(self, terms: dict[str, torch.Tensor], batch: dict[str, Any],
                        out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``terms`` plus the online probe's cross-entropy ``probe_ce`` (added to ``loss``) when the probe trains."""
        if self._probe_trained and "logits" in out:
            terms["probe_ce"] = F.cross_entropy(out["logits"].float(), batch["y"])
            terms["loss"] = terms["loss"] + terms["probe_ce"]
        return terms

    def require_views(self, batch: dict[str, Any]) -> Any:
        """The second augmented view ``batch["x2"]``; a ``ValueError`` naming the datamodule option otherwise."""
        if "x2" not in batch:
            raise ValueError(f"{type(self).__name__} trains on two augmented views but the batch has no 'x2': set "
                             "the datamodule's two_views=True (`data.init_args.two_views: true`; the datamodule "
                             "must define a view_transform)")
        return batch["x2"]

    def second_view(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """Outputs of the second view ``batch["x2"]``: inside a gradient-cache step the cached ones (see
        :meth:`provide_second_view`), else ``self(batch["x2"])``."""
        if self._second_view is not None:
            return self._second_view
        return self(self.require_views(batch))

    @contextmanager
    def provide_second_view(self, out2: dict[str, torch.Tensor] | None) -> Iterator[None]:
        """Within the block, :meth:`second_view` returns ``out2`` (outputs of ``x2`` computed elsewhere, e.g. by a
        gradient cache); ``None`` changes nothing."""
        previous, self._second_view = self._second_view, out2
        try:
            yield
        finally:
            self._second_view = previous

    def batch_rows(self, batch: dict[str, Any]) -> int:
        """Number of rows of ``batch`` (of ``idx``, else ``y``): the batch size every logged value is weighted by."""
        return int(len(batch["idx" if "idx" in batch else "y"]))

    # ------------------------------------------------------------------ frozen parts
    def freeze_module(self, module: nn.Module, frozen: bool = True) -> None:
        """Freeze (or unfreeze) a sub-module: no gradients, and eval mode (dropout / batch norm) that stays on
        across Lightning's ``train()`` calls."""
        for p in module.parameters():
            p.requires_grad_(not frozen)
        self._frozen = [m for m in self._frozen if m is not module]
        if frozen:
            self._frozen.append(module)
            module.eval()
        else:
            module.train(self.training)

    def unfreeze_module(self, module: nn.Module) -> None:
        """Undo :meth:`freeze_module`."""
        self.freeze_module(module, frozen=False)

    def _apply_frozen_modes(self) -> None:
        for m in self._frozen:
            m.eval()

    def train(self, mode: bool = True) -> FairModule:
        super().train(mode)
        self._apply_frozen_modes()
        return self

    # ------------------------------------------------------------------ stages
    def stage_epochs(self) -> list[tuple[str, int | None]]:
        """Stages as ``(name, epochs)``; the last may have ``None`` epochs (open-ended). Default: one stage."""
        return [("train", None)]

    def stage_at(self, epoch: int) -> str:
        """Name of the stage that epoch ``epoch`` belongs to."""
        start = 0
        stages = self.stage_epochs()
        for name, n in stages:
            if n is None or epoch < start + n:
                return name
            start += n
        return stages[-1][0]

    def stage_start_epoch(self, name: str) -> int:
        """First epoch of stage ``name``."""
        start = 0
        for stage, n in self.stage_epochs():
            if stage == name:
                return start
            start += n or 0
        raise KeyError(f"{type(self).__name__} has no stage {name!r}")

    @property
    def stage(self) -> str:
        """Current stage, derived from ``current_epoch`` (so a resumed checkpoint lands in the right stage)."""
        return self.stage_at(self.current_epoch)

    def on_stage_start(self, stage: str) -> None:
        """Hook: called at the first train epoch of ``stage`` and after resuming inside it. Override."""

    def on_train_epoch_start(self) -> None:
        stage = self.stage
        if stage != self._active_stage:
            self._active_stage = stage
            self.on_stage_start(stage)
            if self.attached_trainer is not None:  # DDP over this stage's trainable parameters (tests/scale)
                self._ddp_wrapped = rewrap_ddp(self.trainer, self, self._ddp_wrapped)
        self._apply_frozen_modes()
        self.log("stage", float([s for s, _ in self.stage_epochs()].index(stage)), on_epoch=True, on_step=False)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self._active_stage = None  # on_stage_start runs again after a resume
        self.fit_record = self.fit_record or checkpoint.get("faircl_fit")

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        # what trained these weights (seed, method, data, configuration): ``faircl compare`` pairs runs by it
        checkpoint["faircl_fit"] = self.fit_record or default_fit_record(self, self.attached_datamodule)

    # ------------------------------------------------------------------ trainer
    @property
    def attached_trainer(self) -> L.Trainer | None:
        """The trainer this module is attached to, or ``None`` (``self.trainer`` raises when there is none)."""
        return self._trainer

    def setup(self, stage: str) -> None:
        """Check the attached datamodule against the method (:func:`faircl.methods.inputs.check_datamodule`)."""
        check_datamodule(self, self.attached_datamodule)

    def configure_callbacks(self) -> list[L.Callback]:
        """The method's checkpoint policy: a :class:`~faircl.checkpoints.FairCheckpoint` with the method's monitor
        (``monitor`` / ``default_monitor``), best chosen among the epochs of the final stage.

        It replaces only the ``ModelCheckpoint`` a ``Trainer`` adds by itself, so ``L.Trainer(max_epochs=...)``
        keeps the same ``best`` as the ``faircl`` command; a checkpoint callback the user passes is kept as it is,
        and ``enable_checkpointing=False`` keeps none."""
        trainer = self.attached_trainer
        if trainer is None or trainer.fast_dev_run or trainer.state.fn != TrainerFn.FITTING:
            return []
        found = trainer.checkpoint_callbacks
        if len(found) != 1 or not is_default_checkpoint(found[0]):
            return []
        return [FairCheckpoint(*monitor_spec(self))]

    # ------------------------------------------------------------------ steps
    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        chunk = self.hparams.get("grad_cache_chunk")
        if chunk and not self.automatic_optimization:  # backward and optimiser step inside, detached terms
            terms = cached_training_step(self, batch, chunk)
        else:
            terms = self.losses(batch, self.step_outputs(batch))
        if "loss" not in terms:
            raise KeyError(f"{type(self).__name__}.losses() must return a 'loss' entry, got {sorted(terms)}")
        stacked = stack_terms(terms)  # one vector for the finite check and the epoch sums
        if self.check_finite_loss:  # stop at the first NaN / inf term, naming the step, the term and the rows
            check_finite_terms(terms, batch, lambda: f"{type(self).__name__} at global step {self.global_step} "
                               f"(epoch {self.current_epoch}, stage {self.stage!r})", stacked)
        record_train_terms(self, terms, self.batch_rows(batch), stacked)  # per step or per epoch: see steplog
        return terms["loss"]

    def on_train_epoch_end(self) -> None:
        log_epoch_terms(self)  # the epoch means of the loss terms, as train/<name>

    def teardown(self, stage: str) -> None:
        super().teardown(stage)
        close_worker_group(self._trainer)  # a spawned rank closes its process group before its process exits

    def on_fit_start(self) -> None:
        # Under ddp_spawn, ranks share metric state tensors until the first reset.
        self.reset_metrics("val")
        self.reset_metrics("test")

    def update_metrics(self, stage: str, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> None:
        """Hook: accumulate the ``stage`` (``val`` | ``test``) metrics of one batch (default: ``GroupFairness``)."""
        if "logits" in out:
            metric = self.val_fairness if stage == "val" else self.test_fairness
            metric.update(out["logits"].detach(), batch["y"], batch["a"])

    def compute_metrics(self, stage: str) -> dict[str, float]:
        """Hook: the ``stage`` metrics as a flat dict (``name/<group>`` for per-group values), then reset them."""
        metric = self.val_fairness if stage == "val" else self.test_fairness
        if metric.update_count == 0:
            return {}
        values = {k: torch.as_tensor(v) for k, v in metric.compute().items()}
        metric.reset()
        scalars = {k: float(v) for k, v in values.items() if v.numel() == 1}
        if stage == "val":
            return scalars
        names = self.group_names()
        for name, vec in values.items():
            if vec.numel() != 1:
                scalars.update(per_group_items(name, vec.detach().cpu(), names))
        return scalars

    def on_validation_metrics(self, values: dict[str, float]) -> None:
        """Hook: called with the logged validation metrics at each validation end (outside sanity checks)."""

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self.update_metrics("val", batch, self.step_outputs(batch))

    def on_validation_epoch_end(self) -> None:
        values = self.compute_metrics("val")
        if not values:
            return
        values = {**selection_scores(values), **values}  # + val/dto, val/tradeoff
        self.log_dict({f"val/{k}": v for k, v in values.items()}, sync_dist=False)
        if self.attached_trainer is not None and not self.trainer.sanity_checking:
            self.on_validation_metrics(values)

    def reset_metrics(self, stage: str) -> None:
        """Hook: clear the ``stage`` metrics (default: ``GroupFairness``)."""
        (self.val_fairness if stage == "val" else self.test_fairness).reset()

    def on_test_epoch_start(self) -> None:
        self.reset_metrics("test")
        self._test_outputs = []

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        out = self.step_outputs(batch)
        self.update_metrics("test", batch, out)
        keep = {k: v.detach().float().cpu() for k, v in out.items() if k in ("h", "z", "logits")}
        keep.update({k: batch[k].cpu() for k in ("y", "a", "idx") if isinstance(batch.get(k), torch.Tensor)})
        self._test_outputs.append(keep)

    def on_test_epoch_end(self) -> None:
        report = self.compute_metrics("test")
        outputs = gather_rows(self._test_outputs, self.world_size())
        self._test_outputs = []
        self._leakage_probes: dict[str, Any] = {}
        if self.hparams.leakage and "a" in outputs and self.num_groups > 1:
            report.update(self.leakage_metrics(outputs))
        report.update(self.extra_test_metrics(outputs))
        self.test_report = report
        self.test_rows = test_rows(self, outputs, self._leakage_probes) if self.attached_datamodule else {}
        finite = {f"test/{k}": v for k, v in report.items() if isinstance(v, float) and math.isfinite(v)}
        self.log_dict(finite, sync_dist=False)

    def predict_step(self, batch: dict[str, Any], batch_idx: int) -> dict[str, torch.Tensor]:
        out = self.step_outputs(batch)
        out.update({k: batch[k] for k in ("y", "a", "idx") if k in batch})
        return out

    # ------------------------------------------------------------------ data passes and evaluation helpers
    @property
    def attached_datamodule(self) -> FairDataModule | None:
        """The trainer's :class:`~faircl.data.base.FairDataModule`, or ``None``."""
        trainer = self.attached_trainer
        dm = getattr(trainer, "datamodule", None) if trainer is not None else None
        return dm if isinstance(dm, FairDataModule) else None

    def world_size(self) -> int:
        """Number of training processes (1 without a trainer)."""
        return self.attached_trainer.world_size if self.attached_trainer is not None else 1

    def group_names(self) -> list[str]:
        """Names of the protected groups: the attached datamodule's ``group_names``, else ``"0"``, ``"1"``, ..."""
        dm = self.attached_datamodule
        return group_names_or_default(getattr(dm, "group_names", None), self.num_groups)

    def plain_loader(self, split: str = "train", batch_size: int | None = None) -> Iterable:
        """Un-shuffled, un-augmented loader over ``split`` of the attached datamodule."""
        dm = self.attached_datamodule
        if dm is None:
            raise RuntimeError(f"{type(self).__name__} needs a pass over the {split!r} split: attach a "
                               "FairDataModule (trainer.fit(model, datamodule=...) or the CLI's --data)")
        return dm.plain_loader(split, batch_size=batch_size)

    def extra_test_metrics(self, outputs: dict[str, torch.Tensor]) -> dict[str, float]:
        """Hook: more test metrics from the gathered test outputs (``h``, ``z``, ``logits``, ``y``, ``a``, ``idx``)."""
        return {}

    def leakage_metrics(self, outputs: dict[str, torch.Tensor]) -> dict[str, float]:
        """Leakage@h and Leakage@ŷ: linear SVM (C = 0.1, balanced) fit on train representations, scored on test."""
        if self.attached_datamodule is None:
            return {}
        train = self.collect(self.plain_loader("train"), keys=("h", "logits", "a"),
                             max_rows=self.hparams.leakage_max_rows)
        report = {}
        for key, name in (("h", "leakage_h"), ("logits", "leakage_yhat")):
            if key in train and key in outputs:
                probe = fit_leakage_probe(train[key], train["a"])
                self._leakage_probes[key] = probe  # its per-row guesses go into the test rows
                report[name] = probe_accuracy(probe, outputs[key], outputs["a"])
        return report

    def collect(self, loader: Iterable, keys: tuple[str, ...] = ("h", "y", "a"),
                max_rows: int | None = None) -> dict[str, torch.Tensor]:
        """Run the model over ``loader`` in eval mode, without grad; gather from all processes, ordered by ``idx``
        (:func:`faircl.methods.passes.collect`: ``keys`` are output or batch keys, ``max_rows`` caps the rows read
        on this process)."""
        return collect_rows(self, loader, keys, max_rows, self.world_size())

    # ------------------------------------------------------------------ optimisation
    def module_lrs(self) -> dict[str, dict[str, float]]:
        """Hook: optimiser options by sub-module name, e.g. ``{"discriminators": {"lr": 1e-4}}``."""
        return {}

    def param_groups(self) -> list[dict[str, Any]]:
        """Parameter groups: one per entry of :meth:`module_lrs` / ``lr_overrides`` (longest name prefix wins),
        the rest in the default group; frozen parameters are left out."""
        options = {name: dict(opts) for name, opts in self.module_lrs().items()}
        for name, lr in (self.hparams.get("lr_overrides") or {}).items():
            options.setdefault(name, {})["lr"] = float(lr)
        return param_groups(self.named_parameters(), options)

    def configure_optimizers(self):
        hp, trainer = self.hparams, self.attached_trainer
        return build_optimizer(self.param_groups(), hp.optimizer, hp.lr, hp.weight_decay, hp.scheduler,
                               trainer.max_epochs if trainer is not None else None)
