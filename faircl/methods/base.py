"""`FairModule`: the LightningModule every faircl method subclasses.

It owns the shared machinery (encoder, classifier head, optimiser, stages, metrics, the test report); a concrete
method adds its heads and its loss (:meth:`FairModule.losses`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import lightning as L
import torch
from lightning.fabric.utilities.apply_func import move_data_to_device
from torch import nn
from torch.nn import functional as F

from faircl.models import build_encoder, mlp

OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}
SCHEDULERS = ("none", "cosine", "step")


class FairModule(L.LightningModule):
    """Base method: encoder → classifier, trained with cross-entropy unless a subclass overrides :meth:`losses`.

    Args:
        num_classes: task classes (linked from the datamodule by the CLI).
        num_groups: protected-attribute groups (linked from the datamodule).
        input_dim: feature dimension / vocabulary size / image channels (linked from the datamodule).
        encoder: name of a registered encoder (``mlp``, ``bow``, ``tokens``, ``hf``, ``conv``, ``timm``, ...).
        encoder_kwargs: keyword arguments of that encoder.
        classifier_hidden: hidden width of a 2-layer MLP classifier; ``0`` gives a linear classifier.
        lr: learning rate.
        weight_decay: weight decay.
        optimizer: ``adam`` | ``adamw`` | ``sgd`` (or pass ``--optimizer`` to the CLI to inject any optimiser).
        scheduler: ``none`` | ``cosine`` | ``step`` (per epoch).
        leakage: at test end, measure Leakage@h and Leakage@ŷ (linear SVM trained on the train split).
        leakage_max_train: at most this many train rows to fit the leakage probes (seeded subset).
    """

    def __init__(
        self,
        num_classes: int = 2,
        num_groups: int = 2,
        input_dim: int = 0,
        encoder: str = "mlp",
        encoder_kwargs: dict[str, Any] | None = None,
        classifier_hidden: int = 0,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        optimizer: str = "adam",
        scheduler: str = "none",
        leakage: bool = True,
        leakage_max_train: int = 5000,
    ) -> None:
        super().__init__()
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer={optimizer!r} is not one of {sorted(OPTIMIZERS)}")
        if scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler={scheduler!r} is not one of {SCHEDULERS}")
        if num_classes < 2 or num_groups < 1:
            raise ValueError(f"need num_classes >= 2 and num_groups >= 1, got {num_classes} and {num_groups}")
        self.save_hyperparameters()
        self.num_classes, self.num_groups = num_classes, num_groups
        self.encoder = build_encoder(encoder, input_dim, **(encoder_kwargs or {}))
        self.build_heads()
        from faircl.metrics import GroupFairness

        self.val_fairness = GroupFairness(num_classes, num_groups)
        self.test_fairness = GroupFairness(num_classes, num_groups)
        self.test_report: dict[str, float] = {}
        self._active_stage: str | None = None
        self._test_outputs: list[dict[str, torch.Tensor]] = []

    # ------------------------------------------------------------------ model
    def build_heads(self) -> None:
        """Create the heads on top of ``self.encoder`` (default: the classifier ``out_dim → num_classes``)."""
        hidden = self.hparams.classifier_hidden
        self.classifier = mlp(self.encoder.out_dim, hidden, self.num_classes, num_layers=2 if hidden else 1)

    def forward(self, x: Any) -> dict[str, torch.Tensor]:
        """``x → {"h": encoder output, "logits": classifier scores}`` (subclasses add ``z``)."""
        h = self.encoder(x)
        return {"h": h, "logits": self.classifier(h)}

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Named loss terms with ``loss`` the total. Default objective: cross-entropy on the task labels.

        Methods that need a second view call ``self(batch["x2"])`` here.
        """
        ce = F.cross_entropy(out["logits"].float(), batch["y"])
        return {"ce": ce, "loss": ce}

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
        self.log("stage", float([s for s, _ in self.stage_epochs()].index(stage)), on_epoch=True, on_step=False)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self._active_stage = None

    # ------------------------------------------------------------------ steps
    def _batch_size(self, batch: dict[str, Any]) -> int:
        return int(batch["y"].shape[0])

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        out = self(batch["x"])
        terms = self.losses(batch, out)
        if "loss" not in terms:
            raise KeyError(f"{type(self).__name__}.losses() must return a 'loss' entry, got {sorted(terms)}")
        bs = self._batch_size(batch)
        for name, value in terms.items():
            self.log(f"train/{name}", value.detach().float(), on_step=True, on_epoch=True, prog_bar=name == "loss",
                     batch_size=bs)
        return terms["loss"]

    def on_fit_start(self) -> None:
        # Under ddp_spawn, ranks share metric state tensors until the first reset.
        self.val_fairness.reset()
        self.test_fairness.reset()

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        out = self(batch["x"])
        if "logits" in out:
            self.val_fairness.update(out["logits"].detach(), batch["y"], batch["a"])

    def on_validation_epoch_end(self) -> None:
        if self.val_fairness.update_count == 0:
            return
        scalars, _ = _split_metrics(self.val_fairness.compute())
        self.log_dict({f"val/{k}": v for k, v in scalars.items()}, sync_dist=False)
        self.val_fairness.reset()

    def on_test_epoch_start(self) -> None:
        self.test_fairness.reset()
        self._test_outputs = []

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        out = self(batch["x"])
        if "logits" in out:
            self.test_fairness.update(out["logits"].detach(), batch["y"], batch["a"])
        keep = {k: v.detach().float().cpu() for k, v in out.items() if k in ("h", "z", "logits")}
        keep.update(y=batch["y"].cpu(), a=batch["a"].cpu(), idx=batch["idx"].cpu())
        self._test_outputs.append(keep)

    def on_test_epoch_end(self) -> None:
        report: dict[str, float] = {}
        group_names = self._group_names()
        if self.test_fairness.update_count > 0:
            scalars, vectors = _split_metrics(self.test_fairness.compute())
            report.update(scalars)
            for name, vec in vectors.items():
                for g, v in enumerate(vec.tolist()):
                    report[f"{name}/{group_names[g]}"] = v
        outputs = self._gather_outputs(self._test_outputs)
        self._test_outputs = []
        if self.hparams.leakage and outputs and self.num_groups > 1:
            report.update(self.leakage_metrics(outputs))
        report.update(self.extra_test_metrics(outputs))
        self.test_report = report
        finite = {f"test/{k}": v for k, v in report.items() if isinstance(v, float) and math.isfinite(v)}
        self.log_dict(finite, sync_dist=False)

    def predict_step(self, batch: dict[str, Any], batch_idx: int) -> dict[str, torch.Tensor]:
        out = self(batch["x"])
        out.update(y=batch["y"], a=batch["a"], idx=batch["idx"])
        return out

    # ------------------------------------------------------------------ evaluation helpers
    def extra_test_metrics(self, outputs: dict[str, torch.Tensor]) -> dict[str, float]:
        """Hook: more test metrics from the gathered test outputs (``h``, ``z``, ``logits``, ``y``, ``a``, ``idx``)."""
        return {}

    def leakage_metrics(self, outputs: dict[str, torch.Tensor]) -> dict[str, float]:
        """Leakage@h and Leakage@ŷ: linear SVM (C = 0.1, balanced) fit on train representations, scored on test."""
        from faircl.metrics.leakage import linear_leakage

        dm = getattr(self.trainer, "datamodule", None)
        if dm is None or not hasattr(dm, "plain_loader"):
            return {}
        train = self.collect(dm.plain_loader("train"), keys=("h", "logits", "a"),
                             max_rows=self.hparams.leakage_max_train)
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
            loader: yields batch dicts (e.g. ``datamodule.plain_loader("train")``).
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
        names = list(getattr(dm, "group_names", []) or [])
        return names if len(names) == self.num_groups else [f"group{g}" for g in range(self.num_groups)]

    # ------------------------------------------------------------------ optimisation
    def param_groups(self) -> list[dict[str, Any]]:
        """Parameter groups for the optimiser (override to give some parameters their own learning rate)."""
        return [{"params": [p for p in self.parameters() if p.requires_grad]}]

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

    def freeze_module(self, module: nn.Module, frozen: bool = True) -> None:
        """Freeze (or unfreeze) a sub-module: no gradients, and eval mode for dropout / batch norm."""
        for p in module.parameters():
            p.requires_grad_(not frozen)
        module.train(not frozen)


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
    import torch.distributed as dist

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
