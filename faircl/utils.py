"""Small utilities: per-group report keys, a differentiable all-gather, a gather of variable-size rows, a gradient
cache for large batches and the round-off tolerance of rank decisions."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, Callable, Iterable, Sequence

import torch
import torch.distributed as dist

__all__ = ["GradientCache", "all_gather_variable", "all_gather_with_grad", "end_distributed", "gather_rows",
           "group_names_or_default", "is_distributed", "per_group_items", "quiet_trainer_kwargs", "rank_tolerance", "split_batch"]


def group_names_or_default(group_names: Sequence[str] | None, num_groups: int) -> list[str]:
    """``group_names`` as a list when it names exactly ``num_groups`` groups, else ``group0 .. group<G-1>``."""
    if group_names is not None and len(group_names) == num_groups:
        return [str(g) for g in group_names]
    return [f"group{g}" for g in range(num_groups)]


def per_group_items(name: str, values: torch.Tensor | Iterable[float], group_names: Sequence[str]) -> dict[str, float]:
    """Flatten a per-group vector ``[G]`` into report keys ``{"<name>/<group name>": float}``.

    Raises:
        ValueError: ``values`` and ``group_names`` differ in length.
    """
    vals = values.detach().cpu().reshape(-1).tolist() if isinstance(values, torch.Tensor) else [float(v) for v in values]
    if len(vals) != len(group_names):
        raise ValueError(f"{name} has {len(vals)} per-group values for {len(group_names)} group names")
    return {f"{name}/{g}": float(v) for g, v in zip(group_names, vals)}


def quiet_trainer_kwargs(**over: Any) -> dict[str, Any]:
    """``lightning.Trainer`` keyword arguments for a fast, silent CPU run (no logger, checkpoints, progress bar or
    model summary), updated with ``over``: ``L.Trainer(**quiet_trainer_kwargs(max_epochs=3))``."""
    kw: dict[str, Any] = dict(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                              enable_progress_bar=False, enable_model_summary=False)
    kw.update(over)
    return kw


def is_distributed() -> bool:
    """True when a ``torch.distributed`` process group with more than one process is active."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


class _AllGatherWithGrad(torch.autograd.Function):
    """Concatenate ``[B_r, ...]`` tensors of every rank; backward sums the incoming gradients over ranks."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, group: Any) -> torch.Tensor:
        world = dist.get_world_size(group)
        sizes = [torch.zeros(1, dtype=torch.long, device=x.device) for _ in range(world)]
        dist.all_gather(sizes, torch.tensor([x.shape[0]], dtype=torch.long, device=x.device), group=group)
        sizes_list = [int(s) for s in sizes]
        biggest = max(sizes_list)
        padded = x.new_zeros((biggest, *x.shape[1:]))
        padded[: x.shape[0]] = x
        parts = [torch.empty_like(padded) for _ in range(world)]
        dist.all_gather(parts, padded.contiguous(), group=group)
        ctx.group = group
        ctx.sizes = sizes_list
        ctx.rank = dist.get_rank(group)
        return torch.cat([p[:s] for p, s in zip(parts, sizes_list)], dim=0)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        grad = grad.contiguous().clone()
        # Every rank computed its own loss on the gathered batch: the gradient of the local rows is the sum
        # of all ranks' gradients for them.
        dist.all_reduce(grad, op=dist.ReduceOp.SUM, group=ctx.group)
        start = sum(ctx.sizes[: ctx.rank])
        return grad[start : start + ctx.sizes[ctx.rank]], None


def all_gather_with_grad(x: torch.Tensor, group: Any = None) -> torch.Tensor:
    """All-gather along dim 0 with gradients flowing back to every rank's rows.

    Returns ``[Σ_r B_r, ...]`` in rank order (ranks may hold different ``B_r``). Backward all-reduces (sums) the
    gradient and hands each rank the slice of its own rows — the same convention as
    ``torch.distributed.nn.all_gather`` and Lightning's ``all_gather(sync_grads=True)``: when every rank computes
    the same global loss ``L``, a local row receives ``world_size · ∂L/∂x``, and DDP's gradient averaging turns
    parameter gradients back into exactly ``∂L/∂θ`` of the single-process loss on the concatenated batch.

    Without an initialised process group (or with one process) ``x`` is returned unchanged.

    Args:
        x: local tensor ``[B_r, ...]``.
        group: optional process group.
    """
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size(group) == 1:
        return x
    return _AllGatherWithGrad.apply(x, group)


def split_batch(x: Any, chunk_size: int) -> list[Any]:
    """Split a batch along its first dimension into chunks of ``chunk_size`` rows.

    Supports tensors, lists/tuples of per-example items (e.g. strings), and dicts of those (token dicts).
    """
    if chunk_size < 1:
        raise ValueError(f"`chunk_size` must be >= 1, got {chunk_size}")
    if isinstance(x, torch.Tensor):
        return list(x.split(chunk_size, dim=0))
    if isinstance(x, dict):
        keys = list(x)
        if not keys:
            raise ValueError("cannot split an empty dict batch")
        parts = {k: split_batch(x[k], chunk_size) for k in keys}
        counts = {k: len(v) for k, v in parts.items()}
        if len(set(counts.values())) != 1:
            raise ValueError(f"dict batch entries have different lengths (chunks per key: {counts})")
        return [{k: parts[k][i] for k in keys} for i in range(counts[keys[0]])]
    if isinstance(x, (list, tuple)):
        return [x[i : i + chunk_size] for i in range(0, len(x), chunk_size)]
    raise TypeError(f"cannot split a batch of type {type(x).__name__}: expected a tensor, list, tuple or dict")


class _RngState:
    """Snapshot of the CPU (and initialised CUDA) random generators, to replay dropout identically."""

    def __init__(self) -> None:
        self.cpu = torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None

    def restore(self) -> None:
        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)


class GradientCache:
    """Large-batch contrastive training on limited memory (gradient cache, Gao et al. 2021; used by Chi et al. 2022).

    One call performs the backward pass of ``loss_fn(*[encoder(x) for x in inputs], **loss_kwargs)`` over the whole
    batch while only ever holding the activations of ``chunk_size`` rows:

    1. embed every chunk without a graph and concatenate the embeddings;
    2. compute the loss on these cached embeddings and back-propagate to them (the loss's own parameters, e.g. a
       learnable temperature or margin, receive their gradients here);
    3. re-embed each chunk with a graph (replaying the random state, so dropout masks match step 1) and
       back-propagate the cached embedding gradient of that chunk into the encoder.

    Parameter gradients equal those of the full-batch backward (up to float rounding) for encoders that treat
    examples independently (transformers, MLPs, LayerNorm); BatchNorm sees chunk statistics instead, and its
    running statistics are updated twice per chunk. Gradients are *accumulated* into ``.grad`` like
    ``loss.backward()``. In Lightning, use manual optimisation (``automatic_optimization = False``)
    and call ``optimizer.step()`` after this. Under DDP pass the DDP-wrapped module as ``encoder``: gradient
    synchronisation is skipped for all but the last chunk. For a loss over the global batch, gather inside
    ``loss_fn`` with :func:`all_gather_with_grad`.

    Args:
        encoder: a callable mapping a chunk of inputs to embeddings ``[b, d]``, or a sequence with one callable per
            input (e.g. a query and a document tower).
        loss_fn: ``loss_fn(*embeddings, **loss_kwargs) -> scalar``, e.g. ``faircl.losses.cs_infonce_loss``.
        chunk_size: rows per chunk.
        ddp_module: the ``DistributedDataParallel`` wrapper whose ``no_sync()`` should suppress gradient
            synchronisation on all but the last chunk, when ``encoder`` is not itself that wrapper (e.g. a
            lambda calling it). Under Lightning: ``self.trainer.strategy.model``.
        backward: runs the backward pass of the per-chunk surrogate ``Σ ⟨rep, ∂L/∂rep⟩`` (e.g. Lightning's
            ``manual_backward``, which applies the mixed-precision loss scaling and DDP's bookkeeping). With it,
            the loss gradient of the cached embeddings is taken with ``torch.autograd.grad`` (unscaled) and the loss
            may have no trainable parameters of its own. Default: ``Tensor.backward``.
        sync_params: parameters that must all take part in the last (synchronised) backward, e.g. every trainable
            parameter of a DDP-wrapped module: a zero-valued term over them is added to the last chunk's surrogate,
            so DDP without ``find_unused_parameters`` reduces parameters that only earlier chunks (or the other
            view) reached.

    ``encoder`` may also return a dict of tensors (e.g. a model's ``{"h", "z", "logits"}``): each entry is cached
    and concatenated, ``loss_fn`` receives one dict per input, and entries without a loss gradient are skipped.
    ``loss_fn`` may return a dict of terms with the total under ``"loss"``; the call then returns the detached dict.

    Example:
        >>> cache = GradientCache(lambda x: model(x)["z"], cs_infonce_loss, chunk_size=32)
        >>> loss = cache(x1, x2, labels=y, groups=a)  # gradients are now in model's .grad
        >>> optimizer.step(); optimizer.zero_grad()
    """

    def __init__(
        self,
        encoder: Callable[[Any], torch.Tensor] | Sequence[Callable[[Any], torch.Tensor]],
        loss_fn: Callable[..., torch.Tensor],
        chunk_size: int,
        ddp_module: torch.nn.Module | None = None,
        backward: Callable[[torch.Tensor], Any] | None = None,
        sync_params: Iterable[torch.nn.Parameter] | None = None,
    ) -> None:
        if chunk_size < 1:
            raise ValueError(f"`chunk_size` must be >= 1, got {chunk_size}")
        if ddp_module is not None and not hasattr(ddp_module, "no_sync"):
            raise TypeError(f"`ddp_module` must provide no_sync() (a DistributedDataParallel), got {type(ddp_module).__name__}")
        self.ddp_module = ddp_module
        self.encoder = encoder
        self.loss_fn = loss_fn
        self.chunk_size = int(chunk_size)
        self.backward = backward
        self.sync_params = sync_params

    def _encoders(self, n: int) -> list[Callable[[Any], torch.Tensor]]:
        if callable(self.encoder):
            return [self.encoder] * n
        encoders = list(self.encoder)
        if len(encoders) != n:
            raise ValueError(f"got {len(encoders)} encoders for {n} inputs: pass one encoder, or one per input")
        return encoders

    def __call__(self, *inputs: Any, **loss_kwargs: Any) -> Any:
        """Run forward and backward over ``inputs`` (each a full batch); return the detached loss (or terms)."""
        if not inputs:
            raise ValueError("GradientCache needs at least one input batch")
        if self.sync_params is not None:
            self.sync_params = list(self.sync_params)
        encoders = self._encoders(len(inputs))
        chunks = [split_batch(x, self.chunk_size) for x in inputs]

        states: list[list[_RngState]] = []
        cached: list[Any] = []
        with torch.no_grad():
            for enc, parts in zip(encoders, chunks):
                states.append([])
                reps = []
                for part in parts:
                    states[-1].append(_RngState())
                    reps.append(enc(part))
                cached.append(_cache_leaves(reps))
        after = _RngState()

        result = self.loss_fn(*cached, **loss_kwargs)
        loss = result["loss"] if isinstance(result, dict) else result
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            raise ValueError("`loss_fn` must return a scalar tensor (or a dict with a scalar 'loss')")
        leaves = [_leaf_items(c) for c in cached]
        flat = [t for items in leaves for _, t in items]
        if self.backward is None:
            loss.backward()
            flat_grads = [t.grad for t in flat]
        else:
            flat_grads = list(torch.autograd.grad(loss, flat, allow_unused=True)) if flat else []
        it = iter(flat_grads)
        grads = [{k: next(it) for k, _ in items} for items in leaves]

        jobs = []
        for enc, parts, st, cache, grad in zip(encoders, chunks, states, cached, grads):
            split = {k: (g.split(self.chunk_size, dim=0) if g is not None else None) for k, g in grad.items()}
            for i, (part, state) in enumerate(zip(parts, st)):
                g_i = {k: g[i] for k, g in split.items() if g is not None}
                if g_i:
                    jobs.append((enc, part, state, g_i, isinstance(cache, dict)))
        for j, (enc, part, state, g, is_dict) in enumerate(jobs):
            state.restore()
            last = j == len(jobs) - 1
            no_sync = getattr(self.ddp_module if self.ddp_module is not None else enc, "no_sync", None)
            with no_sync() if (no_sync is not None and not last) else nullcontext():
                rep = enc(part)
                reps = rep if is_dict else {"": rep}
                if self.backward is None and not is_dict and self.sync_params is None:
                    rep.backward(g[""].to(rep.dtype))
                else:
                    surrogate = sum((_wide(reps[k]) * _wide(gk)).sum() for k, gk in g.items())
                    if last and self.sync_params is not None:
                        surrogate = surrogate + sum((p * 0).sum() for p in self.sync_params if p.requires_grad)
                    (self.backward or torch.Tensor.backward)(surrogate)
        after.restore()
        if isinstance(result, dict):
            return {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in result.items()}
        return loss.detach()


def _wide(t: torch.Tensor) -> torch.Tensor:
    """``t`` in at least float32 (half-precision outputs are summed in float32; float64 stays float64)."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def _cache_leaves(reps: list[Any]) -> Any:
    """Concatenate per-chunk outputs (tensors or dicts of tensors) into detached leaves that record gradients."""
    def leaf(parts: list[torch.Tensor]) -> torch.Tensor:
        t = torch.cat(parts, dim=0).detach()
        return t.requires_grad_(True) if t.is_floating_point() else t

    if isinstance(reps[0], dict):
        return {k: leaf([r[k] for r in reps]) for k, v in reps[0].items() if isinstance(v, torch.Tensor)}
    return leaf(reps)


def _leaf_items(cache: Any) -> list[tuple[str, torch.Tensor]]:
    if isinstance(cache, dict):
        return [(k, t) for k, t in cache.items() if t.requires_grad]
    return [("", cache)]


def rank_tolerance(sigma_max: float, shape: Sequence[int], eps: float) -> float:
    """The largest singular value that counts as zero: ``max(m, n) · eps · σ_max`` for an ``[m, n]`` matrix.

    The default tolerance of ``torch.linalg.matrix_rank`` and ``numpy.linalg.matrix_rank``. A rank, zero or
    infinity decision taken from a factorisation must use it (never ``σ == 0``): the singular values of a
    rank-deficient matrix come out as exact zeros on one CPU and as ``1e-17`` on another, depending on the kernels
    (SIMD width, MKL code path). ``eps`` is the machine epsilon of the data's precision (``torch.finfo(dtype).eps``
    of the input, also when the factorisation runs in float64: round-off of the input is at the input's precision).
    """
    return float(max(shape)) * float(eps) * float(sigma_max)


def end_distributed(barrier: bool = True) -> None:
    """Close the ``torch.distributed`` process group of this process, if one is open.

    Call it once at the end of a multi-process program (the ``faircl`` command does): ``barrier`` first waits for
    every process, so none closes its connections while another still talks to it, then the group is destroyed,
    which joins its communication threads. A process that exits with the group open tears those threads down
    unjoined, which aborts it (``terminate called without an active exception``, exit 134) on a busy machine.
    Pass ``barrier=False`` on an error path, where another process may never arrive.
    """
    if not (dist.is_available() and dist.is_initialized()):
        return
    try:
        if barrier and dist.get_world_size() > 1:
            dist.barrier()
    finally:
        dist.destroy_process_group()


def all_gather_variable(local: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``all_gather`` of per-process tensors whose first dimension differs between processes (padded, then trimmed).

    Every process returns the concatenation over processes, in rank order. A process without rows passes ``{}``.
    """
    world = dist.get_world_size()
    n = torch.tensor([len(next(iter(local.values()))) if local else 0])
    sizes = [torch.zeros_like(n) for _ in range(world)]
    dist.all_gather(sizes, n)
    counts = [int(s) for s in sizes]
    # Every rank must know the keys, shapes and dtypes: take them from a rank that has rows.
    meta: list[Any] = [None] * world
    dist.all_gather_object(meta, {k: (tuple(v.shape[1:]), v.dtype) for k, v in local.items()} if local else None)
    spec = next((m for m in meta if m), None)
    if spec is None:
        return {}
    top = max(counts)
    out = {}
    for k, (shape, dtype) in spec.items():
        mine = local[k] if k in local else torch.zeros((0, *shape), dtype=dtype)
        padded = torch.zeros((top, *shape), dtype=dtype)
        padded[: len(mine)] = mine
        bufs = [torch.zeros_like(padded) for _ in range(world)]
        dist.all_gather(bufs, padded)
        out[k] = torch.cat([b[:s] for b, s in zip(bufs, counts)])
    return out


def gather_rows(parts: list[dict[str, torch.Tensor]], world_size: int = 1) -> dict[str, torch.Tensor]:
    """Concatenate per-batch dicts of tensors, gather them from every process (``world_size > 1``; variable sizes)
    and sort the rows by ``idx`` when present, so every process holds the same rows in the same order.

    With ``idx``, each row is kept once: a distributed sampler pads the last shard with repeats of the first rows,
    and a predictor or probe fitted on the gathered rows would otherwise count those rows twice."""
    local = {k: torch.cat([p[k] for p in parts]) for k in parts[0]} if parts else {}
    if world_size > 1:
        local = all_gather_variable(local)
    if local and "idx" in local:
        order = torch.argsort(local["idx"], stable=True)
        local = {k: v[order] for k, v in local.items()}
        idx = local["idx"]
        first = torch.ones_like(idx, dtype=torch.bool)
        first[1:] = idx[1:] != idx[:-1]
        if not bool(first.all()):
            local = {k: v[first] for k, v in local.items()}
    return local
