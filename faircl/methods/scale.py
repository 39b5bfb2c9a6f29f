"""Scale-out steps of :class:`~faircl.methods.base.FairModule`: the gradient-cache training step and the DDP re-wrap
that keeps staged methods free of ``find_unused_parameters``. Both work through the module's public API.

Gradient cache (``grad_cache_chunk = c``): the step embeds the batch (both views when the batch has ``x2``) in
chunks of ``c`` rows without a graph, computes the method's :meth:`~faircl.methods.base.FairModule.losses` on the
concatenated outputs (``h``, ``z``, ``logits``; the second view reaches the method through
:meth:`~faircl.methods.base.FairModule.second_view`, fed by :meth:`~faircl.methods.base.FairModule.provide_second_view`),
then re-embeds chunk by chunk with a graph (random state replayed, so dropout masks match) and back-propagates the
cached output gradients through ``manual_backward`` (mixed-precision loss scaling, DDP gradient sync on the last
chunk only). The optimiser step runs inside the training step, so the module switches to manual optimisation;
epoch schedulers are stepped at the end of each train epoch.

Staged methods under DDP: a method freezes the parameters its current stage does not train
(:meth:`~faircl.methods.base.FairModule.freeze_module`); :func:`rewrap_ddp` then rebuilds the
``DistributedDataParallel`` wrapper over the trainable parameters at every stage start, so DDP neither waits for
unused parameters nor misses the gradients of parameters unfrozen later. The optimiser is built once over every
parameter (frozen ones simply receive no gradient).

Spawned ranks (``ddp_spawn``, ``ddp_fork``, ``ddp_notebook``): each rank is a child process that exits when its
``fit`` / ``test`` returns. :func:`close_worker_group` closes its process group at the end of a successful run
(the ``teardown`` hook), so the child does not exit with its gloo connections open. This does not remove every abort
at a spawned child's exit: one was seen (``terminate called without an active exception``, SIGABRT, busy machine) in
a process that had already closed its group, in the interpreter's teardown after its work was done.
"""

from __future__ import annotations

import multiprocessing
from typing import Any, Hashable

import lightning as L
import torch
from torch.nn.parallel import DistributedDataParallel

from faircl.utils import GradientCache, end_distributed

__all__ = ["cached_training_step", "close_worker_group", "rewrap_ddp", "step_epoch_schedulers"]


def _listify(obj: Any) -> list[Any]:
    if obj is None:
        return []
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def cached_training_step(module: Any, batch: dict[str, Any], chunk: int) -> dict[str, torch.Tensor]:
    """One optimisation step of ``module`` (a ``FairModule`` in manual optimisation) on ``batch`` with a gradient
    cache of ``chunk`` rows.

    Returns the detached loss terms of the whole batch (``loss`` the total).
    """
    optimizers = _listify(module.optimizers())
    for opt in optimizers:
        opt.zero_grad()
    wrapper = module.trainer.strategy.model
    ddp = wrapper if isinstance(wrapper, DistributedDataParallel) else None
    inputs = [batch["x"]] + ([batch["x2"]] if "x2" in batch else [])

    def loss_fn(out: dict[str, torch.Tensor], out2: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
        with module.provide_second_view(out2):
            return module.losses(batch, out)

    # Every trainable parameter joins the last (synchronised) backward: DDP reduces them all there.
    sync = list(module.parameters()) if ddp is not None else None
    terms = GradientCache(module, loss_fn, chunk, ddp_module=ddp, backward=module.manual_backward,
                          sync_params=sync)(*inputs)
    for opt in optimizers:
        opt.step()
    if module.trainer.is_last_batch:
        step_epoch_schedulers(module)
    return terms


def step_epoch_schedulers(module: L.LightningModule) -> None:
    """Step the learning-rate schedulers once (manual optimisation leaves them to the module)."""
    for sched in _listify(module.lr_schedulers()):
        sched.step()


def rewrap_ddp(trainer: L.Trainer, module: torch.nn.Module, wrapped: Hashable = None) -> Hashable:
    """Rebuild the trainer's ``DistributedDataParallel`` wrapper when the set of trainable parameters of ``module``
    changed since it was built (a stage froze or unfroze sub-modules).

    Args:
        trainer: the running trainer.
        module: its LightningModule.
        wrapped: what the previous call returned (``None`` at first).

    Returns:
        a key of the current wrapper and trainable set, to pass as ``wrapped`` next time (``None`` without DDP).
    """
    strategy = getattr(trainer, "strategy", None)
    wrapper = getattr(strategy, "model", None)
    if not isinstance(wrapper, DistributedDataParallel) or not hasattr(strategy, "configure_ddp"):
        return None
    trainable = frozenset(id(p) for p in module.parameters() if p.requires_grad)
    if wrapped == (id(wrapper), trainable):
        return wrapped
    strategy.model = module
    strategy.configure_ddp()
    return id(strategy.model), trainable


def close_worker_group(trainer: Any) -> bool:
    """In a rank started by Lightning's multiprocessing launcher (a child process that ends with this run), wait for
    every rank and close the process group; elsewhere (one process, the ``ddp`` launcher whose ranks run further
    commands in the same process) do nothing. Returns whether it closed the group. Call it only after a run that
    succeeded on this rank (Lightning calls the ``teardown`` hook only then)."""
    launcher = getattr(getattr(trainer, "strategy", None), "launcher", None)
    if type(launcher).__name__ != "_MultiProcessingLauncher" or multiprocessing.parent_process() is None:
        return False
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return False
    end_distributed(barrier=True)
    return True
