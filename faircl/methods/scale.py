"""Scale-out machinery of :class:`~faircl.methods.base.FairModule`: the gradient-cache training step and the DDP
re-wrap that keeps staged methods free of ``find_unused_parameters``.

Gradient cache (``grad_cache_chunk = c``): the step embeds the batch (both views when the batch has ``x2``) in
chunks of ``c`` rows without a graph, computes the method's :meth:`~faircl.methods.base.FairModule.losses` on the
concatenated outputs (``h``, ``z``, ``logits``; the second view through
:func:`view_outputs`), then re-embeds chunk by chunk with a graph (random state
replayed, so dropout masks match) and back-propagates the cached output gradients through
``manual_backward`` (mixed-precision loss scaling, DDP gradient sync on the last chunk only). The optimiser step
runs inside the training step, so the module switches to manual optimisation; epoch schedulers are stepped at the
end of each train epoch.

Staged methods under DDP: a method freezes the parameters its current stage does not train
(:meth:`~faircl.methods.base.FairModule.freeze_module`); :func:`rewrap_ddp` then rebuilds the
``DistributedDataParallel`` wrapper over the trainable parameters at every stage start, so DDP neither waits for
unused parameters nor misses the gradients of parameters unfrozen later. The optimiser is built once over every
parameter (frozen ones simply receive no gradient).
"""

from __future__ import annotations

from typing import Any

import lightning as L
import torch
from torch.nn.parallel import DistributedDataParallel

from faircl.utils import GradientCache

__all__ = ["cached_training_step", "training_terms", "rewrap_ddp", "step_epoch_schedulers", "view_outputs"]


def _listify(obj: Any) -> list[Any]:
    if obj is None:
        return []
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def training_terms(module: L.LightningModule, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The loss terms of a training step: ``module.losses(batch, module.step_outputs(batch))``, or, when the module
    has a ``grad_cache_chunk`` and manual optimisation, :func:`cached_training_step` (backward and optimiser step
    included, detached terms)."""
    chunk = getattr(module, "grad_cache_chunk", None)
    if chunk and not module.automatic_optimization:
        return cached_training_step(module, batch, chunk)
    return module.losses(batch, module.step_outputs(batch))


def cached_training_step(module: L.LightningModule, batch: dict[str, Any], chunk: int) -> dict[str, torch.Tensor]:
    """One optimisation step of ``module`` on ``batch`` with a gradient cache of ``chunk`` rows.

    Returns the detached loss terms of the whole batch (``loss`` the total).
    """
    optimizers = _listify(module.optimizers())
    for opt in optimizers:
        opt.zero_grad()
    wrapper = module.trainer.strategy.model
    ddp = wrapper if isinstance(wrapper, DistributedDataParallel) else None
    inputs = [batch["x"]] + ([batch["x2"]] if "x2" in batch else [])

    def loss_fn(out: dict[str, torch.Tensor], out2: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
        module._cached_view = out2
        try:
            return module.losses(batch, out)
        finally:
            module._cached_view = None

    # Every trainable parameter joins the last (synchronised) backward: DDP reduces them all there.
    sync = list(module.parameters()) if ddp is not None else None
    terms = GradientCache(module, loss_fn, chunk, ddp_module=ddp, backward=module.manual_backward,
                          sync_params=sync)(*inputs)
    for opt in optimizers:
        opt.step()
    if module.trainer.is_last_batch:
        step_epoch_schedulers(module)
    return terms


def view_outputs(module: L.LightningModule, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Outputs of the second view ``batch["x2"]``: the cached ones inside a gradient-cache step, else
    ``module(module.require_views(batch))``. Methods call this instead of running the second view themselves."""
    cached = getattr(module, "_cached_view", None)
    if cached is not None:
        return cached
    return module(module.require_views(batch))


def step_epoch_schedulers(module: L.LightningModule) -> None:
    """Step the learning-rate schedulers once (manual optimisation leaves them to the module)."""
    for sched in _listify(module.lr_schedulers()):
        sched.step()


def rewrap_ddp(module: L.LightningModule) -> bool:
    """Rebuild the trainer's ``DistributedDataParallel`` wrapper when the set of trainable parameters changed since
    it was built (a stage froze or unfroze sub-modules). Returns whether it re-wrapped."""
    trainer = module._trainer
    strategy = getattr(trainer, "strategy", None) if trainer is not None else None
    wrapper = getattr(strategy, "model", None)
    if not isinstance(wrapper, DistributedDataParallel) or not hasattr(strategy, "configure_ddp"):
        return False
    trainable = frozenset(id(p) for p in module.parameters() if p.requires_grad)
    if getattr(module, "_ddp_wrapped", None) == (id(wrapper), trainable):
        return False
    strategy.model = module
    strategy.configure_ddp()
    module._ddp_wrapped = (id(strategy.model), trainable)
    return True
