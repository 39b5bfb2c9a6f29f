"""The optimiser of :class:`~faircl.methods.base.FairModule`: parameter groups with per-module options, the
optimiser by name and an epoch scheduler."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

__all__ = ["OPTIMIZERS", "SCHEDULERS", "build_optimizer", "param_groups"]

OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}
SCHEDULERS = ("none", "cosine", "step")


def param_groups(named_parameters: Iterable[tuple[str, nn.Parameter]],
                 options: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """One parameter group per entry of ``options`` (sub-module name → optimiser options; the longest matching name
    prefix wins), the rest in the default (first) group; frozen parameters are left out."""
    prefixes = sorted(options, key=len, reverse=True)
    grouped: dict[str, list[nn.Parameter]] = {"": []}
    for pname, p in named_parameters:
        if not p.requires_grad:
            continue
        owner = next((pre for pre in prefixes if pname == pre or pname.startswith(pre + ".")), "")
        grouped.setdefault(owner, []).append(p)
    groups = [{"params": grouped.pop("")}]
    groups += [{"params": ps, **options[name]} for name, ps in grouped.items() if ps]
    return groups


def build_optimizer(groups: list[dict[str, Any]], optimizer: str, lr: float, weight_decay: float, scheduler: str,
                    max_epochs: int | None) -> Any:
    """``configure_optimizers``' return value: the optimiser ``optimizer`` over ``groups`` (SGD with momentum 0.9)
    and, unless ``scheduler="none"``, a per-epoch cosine (over ``max_epochs``) or step (γ = 0.1 every third of the
    epochs) schedule; ``max_epochs`` unknown counts as 100."""
    extra = {"momentum": 0.9} if optimizer == "sgd" else {}
    opt = OPTIMIZERS[optimizer](groups, lr=lr, weight_decay=weight_decay, **extra)
    if scheduler == "none":
        return opt
    epochs = max_epochs or 100
    if scheduler == "cosine":
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, epochs))
    else:
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=max(1, epochs // 3), gamma=0.1)
    return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}
