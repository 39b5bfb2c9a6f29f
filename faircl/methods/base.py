"""`FairModule`: the LightningModule every faircl method subclasses.

It owns the shared machinery, so that a concrete method adds only its heads (:meth:`FairModule.build_heads`) and its
loss (:meth:`FairModule.losses`):

- the encoder, the classifier head (or an online probe on detached features, :meth:`FairModule.add_online_probe`),
- heads built *after* the most derived ``__init__`` has stored its arguments (no ordering trap in subclasses),
- stages switched at epoch boundaries (:meth:`FairModule.stage_epochs`, :meth:`FairModule.on_stage_start`),
- frozen sub-modules that stay in eval mode whatever Lightning does (:meth:`FairModule.freeze_module`),
- the optimiser with per-module learning rates (``lr_overrides``, :meth:`FairModule.module_lrs`),
- plain passes over the attached datamodule (:meth:`FairModule.plain_loader`, :meth:`FairModule.collect`),
- validation / test metrics (:meth:`FairModule.update_metrics`, :meth:`FairModule.compute_metrics`) and the test
  report (leakage, :meth:`FairModule.extra_test_metrics`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import lightning as L
import torch
import torch.distributed as dist
from lightning.fabric.utilities.apply_func import move_data_to_device
from torch import nn
from torch.nn import functional as F

from faircl.checkpoints import check_finite_terms
from faircl.data.base import FairDataModule
from faircl.methods.inputs import InputCapabilities, resolve_encoder
from faircl.methods.selection import selection_scores
from faircl.metrics import GroupFairness
from faircl.metrics.leakage import linear_leakage
from faircl.methods.scale import rewrap_ddp, training_terms
from faircl.models import build_encoder, mlp
from faircl.utils import group_names_or_default, per_group_items

OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}
SCHEDULERS = ("none", "cosine", "step")


class _BuildHeadsAfterInit(type):
    """Metaclass that calls ``build_heads`` once the most derived ``__init__`` has returned.

    Every argument a subclass stores in its ``__init__`` (before or after ``super().__init__()``) is therefore
    available to ``build_heads``; ``load_from_checkpoint`` goes through the same path.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = type.__call__(cls, *args, **kwargs)
        obj._setup_after_init()
        return obj


class FairModule(InputCapabilities, L.LightningModule, metaclass=_BuildHeadsAfterInit):
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
        monitor: validation metric that selects the best checkpoint (default ``default_monitor``), e.g. ``val/dto``.
        monitor_mode: ``min`` | ``max`` for ``monitor`` (default: ``min`` for losses, gaps, leakage and DTO).
        input_kind: the datamodule's ``input_kind`` (``None``: read at set-up; see :mod:`faircl.methods.inputs`).
    """

    #: (metric, "min" | "max") selecting the best checkpoint unless ``monitor`` is given; methods may override.
    default_monitor: tuple[str, str] = ("val/accuracy", "max")
    #: stop at the first NaN / inf loss term (one device sync per step); set False to skip the check.
    check_finite_loss: bool = True

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
        optimizer: str = "adam",
        scheduler: str = "none",
        lr_overrides: dict[str, float] | None = None,
        leakage: bool = True,
        leakage_max_rows: int = 5000,
        monitor: str | None = None,
        monitor_mode: str | None = None,
        input_kind: str | None = None,
    ) -> None:
        super().__init__()
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer={optimizer!r} is not one of {sorted(OPTIMIZERS)}")
        if scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler={scheduler!r} is not one of {SCHEDULERS}")
        if num_classes < 2 or num_groups < 1:
            raise ValueError(f"need num_classes >= 2 and num_groups >= 1, got {num_classes} and {num_groups}")
        self.save_hyperparameters()  # the arguments of every __init__ up to the concrete class
        self.num_classes, self.num_groups = num_classes, num_groups
        encoder = resolve_encoder(self, encoder, input_kind, input_dim)  # hparams keep the resolved name
        self.encoder = build_encoder(encoder, input_dim, **(encoder_kwargs or {}))
        self.classifier: nn.Module | None = None
        self.val_fairness = GroupFairness(num_classes, num_groups)
        self.test_fairness = GroupFairness(num_classes, num_groups)
        self.test_report: dict[str, float] = {}
        self._active_stage: str | None = None
        self._test_outputs: list[dict[str, torch.Tensor]] = []
        self._frozen: list[nn.Module] = []
        self._probe_on: str | None = None
        self._probe_trained = False

    def _setup_after_init(self) -> None:
        self.build_heads()
        self._apply_frozen_modes()

    # ------------------------------------------------------------------ model
    def build_heads(self) -> None:
        """Create the heads on top of ``self.encoder``; runs after ``__init__`` (default: the classifier
        ``out_dim → num_classes``). Every constructor argument is available here, as attribute or in ``hparams``."""
        hidden = self.hparams.classifier_hidden
        self.classifier = mlp(self.encoder.out_dim, hidden, self.num_classes, num_layers=2 if hidden else 1)

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
        """Named loss terms with ``loss`` the total. Default objective: cross-entropy on the task labels.

        Methods that need a second view call ``self(self.require_views(batch))`` here.
        """
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
            rewrap_ddp(self)  # DDP over this stage's trainable parameters (no find_unused_parameters needed)
        self._apply_frozen_modes()
        self.log("stage", float([s for s, _ in self.stage_epochs()].index(stage)), on_epoch=True, on_step=False)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self._active_stage = None

    # ------------------------------------------------------------------ steps
    def _batch_size(self, batch: dict[str, Any]) -> int:
        key = "idx" if "idx" in batch else "y"
        return int(len(batch[key]))

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        self._apply_frozen_modes()
        terms = training_terms(self, batch)  # losses(batch, step_outputs(batch)), or a gradient-cache step
        if "loss" not in terms:
            raise KeyError(f"{type(self).__name__}.losses() must return a 'loss' entry, got {sorted(terms)}")
        if self.check_finite_loss:  # stop at the first NaN / inf term, naming the step, the term and the rows
            check_finite_terms(terms, batch, f"{type(self).__name__} at global step {self.global_step} (epoch "
                               f"{self.current_epoch}, stage {self.stage!r})")
        bs = self._batch_size(batch)
        for name, value in terms.items():
            self.log(f"train/{name}", value.detach().float(), on_step=True, on_epoch=True, prog_bar=name == "loss",
                     batch_size=bs)
        return terms["loss"]

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
        scalars, vectors = _split_metrics(metric.compute())
        metric.reset()
        if stage == "val":
            return scalars
        names = self._group_names()
        for name, vec in vectors.items():
            scalars.update(per_group_items(name, vec, names))
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
        if self._trainer is not None and not self.trainer.sanity_checking:
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
        outputs = self._gather_outputs(self._test_outputs)
        self._test_outputs = []
        if self.hparams.leakage and "a" in outputs and self.num_groups > 1:
            report.update(self.leakage_metrics(outputs))
        report.update(self.extra_test_metrics(outputs))
        self.test_report = report
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
        dm = getattr(self._trainer, "datamodule", None) if self._trainer is not None else None
        return dm if isinstance(dm, FairDataModule) else None

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
                report[name] = float(linear_leakage(train[key], train["a"], outputs[key], outputs["a"]))
        return report

    @torch.no_grad()
    def collect(self, loader: Iterable, keys: tuple[str, ...] = ("h", "y", "a"),
                max_rows: int | None = None) -> dict[str, torch.Tensor]:
        """Run the model over ``loader`` in eval mode, without grad; gather from all processes, ordered by ``idx``.

        Args:
            loader: yields batch dicts (e.g. ``self.plain_loader("train")``).
            keys: output or batch keys to keep.
            max_rows: stop after about this many rows on this process (seeded loaders give a fixed subset).
        """
        was_training = self.training
        self.eval()
        parts: list[dict[str, torch.Tensor]] = []
        seen = 0
        try:
            for batch in loader:
                batch = move_data_to_device(batch, self.device)
                out = self(batch["x"])
                row = {k: (out[k] if k in out else batch[k]).detach().float().cpu() for k in keys
                       if k in out or k in batch}
                row["idx"] = batch["idx"].cpu()
                for k in ("y", "a"):
                    if k in row:
                        row[k] = row[k].long()
                parts.append(row)
                seen += len(row["idx"])
                if max_rows is not None and seen >= max_rows:
                    break
        finally:
            self.train(was_training)
        return self._gather_outputs(parts)

    def _gather_outputs(self, parts: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """Concatenate per-batch dicts and gather them from every process (variable sizes), sorted by ``idx``."""
        local = {k: torch.cat([p[k] for p in parts]) for k in parts[0]} if parts else {}
        world = self.trainer.world_size if self._trainer is not None else 1
        if world > 1:
            local = _all_gather_variable(local)
        if local and "idx" in local:
            order = torch.argsort(local["idx"])
            local = {k: v[order] for k, v in local.items()}
        return local

    def _group_names(self) -> list[str]:
        dm = getattr(self._trainer, "datamodule", None) if self._trainer is not None else None
        return group_names_or_default(getattr(dm, "group_names", None), self.num_groups)

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
        prefixes = sorted(options, key=len, reverse=True)
        grouped: dict[str, list[nn.Parameter]] = {"": []}
        for pname, p in self.named_parameters():
            if not p.requires_grad:
                continue
            owner = next((pre for pre in prefixes if pname == pre or pname.startswith(pre + ".")), "")
            grouped.setdefault(owner, []).append(p)
        groups = [{"params": grouped.pop("")}]
        groups += [{"params": ps, **options[name]} for name, ps in grouped.items() if ps]
        return groups

    def configure_optimizers(self):
        hp = self.hparams
        opt_cls = OPTIMIZERS[hp.optimizer]
        extra = {"momentum": 0.9} if hp.optimizer == "sgd" else {}
        opt = opt_cls(self.param_groups(), lr=hp.lr, weight_decay=hp.weight_decay, **extra)
        if hp.scheduler == "none":
            return opt
        epochs = self.trainer.max_epochs if self._trainer is not None and self.trainer.max_epochs else 100
        if hp.scheduler == "cosine":
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, epochs))
        else:
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=max(1, epochs // 3), gamma=0.1)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}


def _split_metrics(values: dict[str, torch.Tensor]) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    scalars, vectors = {}, {}
    for k, v in values.items():
        v = torch.as_tensor(v)
        if v.numel() == 1:
            scalars[k] = float(v)
        else:
            vectors[k] = v.detach().cpu()
    return scalars, vectors


def _all_gather_variable(local: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """all_gather of per-rank tensors whose first dimension differs between ranks (padded, then trimmed)."""
    world = dist.get_world_size()
    n = torch.tensor([len(next(iter(local.values()))) if local else 0])
    sizes = [torch.zeros_like(n) for _ in range(world)]
    dist.all_gather(sizes, n)
    sizes = [int(s) for s in sizes]
    # Every rank must know the keys, shapes and dtypes: take them from a rank that has rows.
    meta = [None] * world
    dist.all_gather_object(meta, {k: (tuple(v.shape[1:]), v.dtype) for k, v in local.items()} if local else None)
    spec = next((m for m in meta if m), None)
    if spec is None:
        return {}
    top = max(sizes)
    out = {}
    for k, (shape, dtype) in spec.items():
        mine = local[k] if k in local else torch.zeros((0, *shape), dtype=dtype)
        padded = torch.zeros((top, *shape), dtype=dtype)
        padded[: len(mine)] = mine
        bufs = [torch.zeros_like(padded) for _ in range(world)]
        dist.all_gather(bufs, padded)
        out[k] = torch.cat([b[:s] for b, s in zip(bufs, sizes)])
    return out
