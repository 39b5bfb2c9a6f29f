"""Per-(group, class) confusion counts and the input checks of :mod:`faircl.metrics.functional`.

See the package docstring for the conventions (``preds`` / ``target`` / ``groups``, unknown group ``-1``) and for
how :func:`confusion_counts` reads its inputs in blocks of :data:`CHUNK_ROWS` rows.
"""

from __future__ import annotations

import torch
from torch import Tensor

from faircl._checks import check_ids, check_positive, check_same_length, check_tensor

__all__ = [
    "CHUNK_ROWS",
    "as_class_ids",
    "check_inputs",
    "check_labels",
    "confusion_counts",
    "count_unknown_groups",
    "group_confusion",
]

CHUNK_ROWS = 1 << 17
"""Rows counted per block by :func:`confusion_counts`: the block's ids, codes and ones (5 MiB) stay in the CPU cache."""


# ----------------------------------------------------------------------------------------------------------------
# input checking
# ----------------------------------------------------------------------------------------------------------------

def _first_bad_row(mask: Tensor) -> int:
    return int(mask.nonzero()[0, 0])


def _check_id_tensor(t: Tensor, name: str) -> None:
    """Type, shape and dtype of a label tensor (no pass over its values)."""
    check_ids(name, t, check_values=False)


def check_labels(t: Tensor, name: str, num: int | None, allow_unknown: bool = False,
                 kind: str = "num_classes", check_values: bool = True) -> Tensor:
    """Check a 1-D integer label tensor (values in ``0..num-1``, ``-1`` too if ``allow_unknown``; ``num=None``:
    any value >= 0) and return it as int64 (:func:`faircl._checks.check_ids` with this module's argument order)."""
    return check_ids(name, t, num, allow_unknown=allow_unknown, kind=kind, check_values=check_values)


def _check_scores_shape(preds: Tensor, num_classes: int, name: str = "preds") -> bool:
    """Whether ``preds`` holds scores ``[N, C]`` (``True``) or class ids ``[N]`` (``False``); raises on anything else."""
    check_tensor(name, preds)
    if not preds.is_floating_point():
        _check_id_tensor(preds, name)
        return False
    if preds.ndim != 2 or preds.shape[1] != num_classes:
        raise ValueError(
            f"{name} holds floating-point scores, so it must have shape [N, {num_classes}] "
            f"(num_classes={num_classes}); got shape {tuple(preds.shape)}. Pass integer class ids of shape [N] "
            "for hard predictions")
    return True


def _argmax_checked(scores: Tensor, name: str, check_values: bool, row_offset: int = 0) -> Tensor:
    """Class ids ``[N]`` (int64, or bool for two classes) from scores ``[N, C]``, with ``ValueError`` on a NaN score
    if ``check_values``.

    The argmax runs in float32 (an fp16 / bf16 score casts exactly, so the ids are those of the fp32 scores); ties go
    to the lowest class, as ``torch.argmax``. Two classes take one comparison instead of a reduction (cheaper on
    CPU). A NaN makes the sum NaN, so a single sum screens for NaN before the row is looked for.
    """
    s = scores.float()
    if check_values and s.numel() and torch.isnan(s.sum()):
        bad = torch.isnan(s).any(1)
        if bad.any():                                  # (the sum is also NaN for inf − inf, which is fine)
            row = _first_bad_row(bad)
            raise ValueError(f"{name} contains NaN scores at row {row + row_offset}: {s[row].tolist()}")
    if s.shape[1] == 2:
        return s[:, 1] > s[:, 0]
    return s.max(1)[1]


def as_class_ids(preds: Tensor, num_classes: int, name: str = "preds", check_values: bool = True) -> Tensor:
    """Class ids ``[N]`` from class ids ``[N]`` or scores ``[N, C]`` (argmax in float32; NaN scores rejected)."""
    if _check_scores_shape(preds, num_classes, name):
        return _argmax_checked(preds, name, check_values).long()
    return check_labels(preds, name, num_classes, check_values=check_values)


def _check_rows(preds: Tensor, target: Tensor, groups: Tensor) -> None:
    check_same_length(preds=preds, target=target, groups=groups)


def _check_sizes(num_classes: int, num_groups: int) -> None:
    check_positive("num_classes", num_classes, minimum=2)
    check_positive("num_groups", num_groups, minimum=1)


def check_inputs(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int,
                 num_groups: int, check_values: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """Validate and normalise ``(preds, target, groups)``; returns three int64 tensors ``[N]``.

    Shapes and dtypes are always checked; ``check_values=False`` skips the id-range and NaN checks.
    """
    _check_sizes(num_classes, num_groups)
    p = as_class_ids(preds, num_classes, check_values=check_values)
    t = check_labels(target, "target", num_classes, check_values=check_values)
    g = check_labels(groups, "groups", num_groups, allow_unknown=True, kind="num_groups", check_values=check_values)
    _check_rows(p, t, g)
    return p, t, g


# ----------------------------------------------------------------------------------------------------------------
# counting
# ----------------------------------------------------------------------------------------------------------------

def confusion_counts(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int,
                     out: Tensor | None = None, check_values: bool = True,
                     chunk_rows: int = CHUNK_ROWS) -> Tensor:
    """Counts ``[num_groups + 1, C, C]`` (rows true class, columns predicted); slot ``num_groups`` = unknown group.

    Args:
        preds: class ids ``[N]`` or scores ``[N, C]``; target: class ids ``[N]``; groups: ids ``[N]``, ``-1`` = unknown.
        num_classes, num_groups: C and G.
        out: optional int64 tensor ``[G + 1, C, C]`` the counts are added to (in place) and returned; its device is
            where the counting runs.
        check_values: check the ``preds`` / ``target`` id ranges and NaN scores. Shapes, dtypes and the ``groups``
            range are always checked (the group bounds decide where the counts go). Out-of-range ids raise
            ``ValueError`` naming the argument, the value and its row; with ``False``, out-of-range ``preds`` or
            ``target`` ids give wrong counts or an error.
        chunk_rows: rows per block (see the module docstring); the counts do not depend on it.

    An error leaves ``out`` as it was.
    """
    _check_sizes(num_classes, num_groups)
    scores = _check_scores_shape(preds, num_classes)
    _check_id_tensor(target, "target")
    _check_id_tensor(groups, "groups")
    _check_rows(preds, target, groups)
    check_positive("chunk_rows", chunk_rows, minimum=1)
    shape = (num_groups + 1, num_classes, num_classes)
    if out is not None and (out.shape != shape or out.dtype != torch.long):
        raise ValueError(f"out must be an int64 tensor of shape {list(shape)}, got {out.dtype} {list(out.shape)}")
    if out is not None and not out.is_contiguous():
        raise ValueError("out must be contiguous")
    counts = out if out is not None else torch.zeros(shape, dtype=torch.long, device=target.device)
    if target.shape[0] == 0:
        return counts
    start = counts.clone()         # an error anywhere leaves ``out`` as it was
    args = (preds, target, groups, num_classes, num_groups, counts, scores, check_values, chunk_rows)
    try:
        if not _count_blocks(*args, shifted=False):
            counts.copy_(start)    # a block had an unknown group: count again, every block shifted
            _count_blocks(*args, shifted=True)
    except Exception:
        counts.copy_(start)
        raise
    return counts


def _count_blocks(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int, counts: Tensor,
                  scores: bool, check_values: bool, chunk_rows: int, shifted: bool,
                  check_groups: bool | None = None) -> bool:
    """The block loop of :func:`confusion_counts` (inputs already shape-checked); adds into ``counts`` in place.

    ``shifted=False`` scatters the code ``ŷ + C·y + C²·g`` straight into the known-group counts and returns
    ``False`` (leaving partial counts) at the first block with an unknown group; ``shifted=True`` counts
    ``code + C²`` (unknown group first) in a scratch tensor folded in at the end, and returns ``True``.

    On CPU, ``scatter_add_`` checks every index and raises before a count lands out of bounds, so the scatter itself
    validates the group ids (``[0, G)`` unshifted, ``[−1, G)`` shifted). Devices that do not check indices take the
    group bounds with ``aminmax`` (``check_groups``, default: any device but the CPU).
    """
    c, cc = num_classes, num_classes * num_classes
    n, device = target.shape[0], counts.device
    if check_groups is None:
        check_groups = device.type != "cpu"
    rows = min(n, chunk_rows)
    code = torch.empty(rows, dtype=torch.long, device=device)
    ones = torch.ones(rows, dtype=torch.long, device=device)
    dest = torch.zeros((num_groups + 1) * cc, dtype=torch.long, device=device) if shifted else counts[:-1].view(-1)
    for lo in range(0, n, rows):
        m = min(rows, n - lo)
        t, g = _long_block(target, lo, m, device), _long_block(groups, lo, m, device)
        p = (_argmax_checked(preds[lo:lo + m].to(device), "preds", check_values, row_offset=lo) if scores
             else _long_block(preds, lo, m, device))
        k, one = (code, ones) if m == rows else (code[:m], ones[:m])
        # the first pass reads the three id blocks from memory; the checks then re-read them from cache
        torch.add(p, t, alpha=c, out=k).add_(g, alpha=cc)
        checked = ((g,) if check_groups else ()) + ((t,) if check_values else ()) + (
            (p,) if check_values and not scores else ())
        if checked:
            bounds = torch.stack([b for x in checked for b in torch.aminmax(x)]).tolist()
            if check_groups:
                (g_lo, g_hi), bounds = bounds[:2], bounds[2:]
                if not (-1 <= g_lo and g_hi < num_groups):
                    _raise_for_bad_ids(preds, target, groups, num_classes, num_groups)
                if g_lo < 0 and not shifted:
                    return False
            if not all(0 <= b < c for b in bounds):
                _raise_for_bad_ids(preds, target, groups, num_classes, num_groups)
        if shifted:
            k.add_(cc)
        try:
            dest.scatter_add_(0, k, one)
        except RuntimeError as err:    # an id out of the bounds of ``dest``
            if not shifted:
                return False           # (an unknown group, or a bad id that the shifted count will name)
            _raise_for_bad_ids(preds, target, groups, num_classes, num_groups, cause=err)
    if shifted:
        dest = dest.view(counts.shape)
        counts[:-1] += dest[1:]
        counts[-1] += dest[0]
    return True


def _raise_for_bad_ids(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int,
                       cause: Exception | None = None) -> None:
    """A block has an id out of range: the full check names the first offending value and row (if it finds none,
    ``cause`` was something else and is raised as it was)."""
    check_inputs(preds, target, groups, num_classes, num_groups)
    raise cause or RuntimeError("confusion_counts: a block's bounds were out of range but no offending row was found")


def _long_block(x: Tensor, lo: int, m: int, device: torch.device) -> Tensor:
    """Rows ``lo:lo+m`` of ``x`` as int64 on ``device`` (no copy when they already are)."""
    x = x[lo:lo + m]
    return x if x.dtype == torch.long and x.device == device else x.to(device=device, dtype=torch.long)


def group_confusion(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int) -> Tensor:
    """Per-group confusion counts.

    Args:
        preds: class ids ``[N]`` or scores ``[N, C]``.
        target: true class ids ``[N]``.
        groups: group ids ``[N]``, ``-1`` = unknown (such rows are not counted here).
        num_classes: C.
        num_groups: G.

    Returns:
        int64 tensor ``[G, C, C]``: ``out[a, y, k]`` = number of rows of group ``a`` with true class ``y`` predicted
        as ``k``.
    """
    return confusion_counts(preds, target, groups, num_classes, num_groups)[:num_groups]


def count_unknown_groups(groups: Tensor) -> int:
    """Number of rows with ``groups == -1``."""
    return int((groups == -1).sum())
