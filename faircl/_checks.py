"""Argument validation shared by the whole package: one function per kind of argument, one error type per mistake.

* ``TypeError``: the argument has the wrong type or dtype (not a tensor, float ids, integer embeddings).
* ``ValueError``: the type is right but a value or a shape is not (out-of-range ids, wrong number of rows, NaN,
  a non-positive temperature, an unknown option).

Every message starts with the argument's name. Functions accept torch tensors; :func:`check_finite` and
:func:`check_same_length` also accept numpy arrays. Imports only torch and numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "check_choice",
    "check_embeddings",
    "check_in_range",
    "check_finite",
    "check_ids",
    "check_positive",
    "check_rows",
    "check_same_length",
    "check_tensor",
]


def check_tensor(name: str, t: Any) -> Tensor:
    """``TypeError`` unless ``t`` is a ``torch.Tensor``; returns it."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    return t


def _first_row(mask: Tensor) -> int:
    return int(mask.reshape(mask.shape[0], -1).any(1).nonzero()[0, 0]) if mask.dim() > 1 else int(mask.nonzero()[0, 0])


def check_ids(
    name: str,
    t: Any,
    num: int | None = None,
    *,
    allow_unknown: bool = False,
    size: int | None = None,
    kind: str = "num_classes",
    check_values: bool = True,
) -> Tensor:
    """Check an integer id vector ``[N]`` (class labels, group ids, cluster ids); return it as int64.

    Args:
        name: argument name used in messages.
        t: the tensor.
        num: ids must be ``< num`` (``None``: any id ``>= 0``).
        allow_unknown: accept ``-1`` (unknown).
        size: required number of rows ``N`` (``None``: any).
        kind: how ``num`` is called in the message (``num_classes``, ``num_groups``, ...).
        check_values: check the value range (one pass over the data); shapes and dtypes are always checked.

    Raises:
        TypeError: not a tensor, or not an integer dtype.
        ValueError: not 1-D, wrong length, or an id out of range (the message names the value and its row).
    """
    check_tensor(name, t)
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer ids, got dtype {t.dtype} (convert labels to integers with .long())")
    if t.dim() != 1:
        raise ValueError(f"{name} must have shape [N], got shape {tuple(t.shape)}")
    if size is not None and t.shape[0] != size:
        raise ValueError(f"{name} must have shape [{size}] (one entry per row), got {tuple(t.shape)}")
    t = t.long()
    if not check_values or t.numel() == 0:
        return t
    low = -1 if allow_unknown else 0
    high = torch.iinfo(torch.long).max if num is None else num - 1
    lo, hi = torch.aminmax(t)
    if lo < low or hi > high:
        row = _first_row((t < low) | (t > high))
        unknown = "-1 (unknown) or " if allow_unknown else ""
        what = f"{unknown}an id >= 0" if num is None else f"{unknown}0..{num - 1} ({kind}={num})"
        raise ValueError(f"{name} contains {int(t[row])} at row {row}; expected {what}")
    return t


def check_embeddings(name: str, z: Any, *, ndim: int = 2, shape: str | None = None, finite: bool = False,
                     nonempty: bool = False) -> Tensor:
    """Check a floating tensor of ``ndim`` dimensions (``[N, D]`` by default); returns it.

    ``shape`` is how the expected shape is written in messages (default ``[N, D]`` for two dimensions).

    Raises:
        TypeError: not a tensor, or not floating point.
        ValueError: wrong number of dimensions, no rows (``nonempty``), a NaN / inf (``finite``).
    """
    shape = shape or {1: "[N]", 2: "[N, D]", 3: "[N, A, D]"}.get(ndim, f"with {ndim} dimensions")
    if not isinstance(z, Tensor):
        raise TypeError(f"{name} must be a tensor of shape {shape}, got {type(z).__name__}")
    if z.dim() != ndim:
        raise ValueError(f"{name} must be a tensor of shape {shape}, got shape {tuple(z.shape)}")
    if not z.is_floating_point():
        raise TypeError(f"{name} must be floating point, got dtype {z.dtype}")
    if nonempty and z.shape[0] == 0:
        raise ValueError(f"{name} is empty (0 rows)")
    if finite:
        check_finite(name, z)
    return z


def check_finite(name: str, x: Tensor | np.ndarray) -> None:
    """``ValueError`` naming the first row with a NaN or inf (tensor or numpy array)."""
    if isinstance(x, Tensor):
        bad = ~torch.isfinite(x)
        if bool(bad.any()):
            raise ValueError(f"{name} contains a non-finite value at row {_first_row(bad)}")
        return
    arr = np.asarray(x)
    if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
        row = int(np.argwhere(~np.isfinite(arr))[0, 0])
        raise ValueError(f"{name} contains a non-finite value at row {row}")


def _rows(x: Any) -> int:
    return int(x.shape[0]) if hasattr(x, "shape") and len(x.shape) else len(x)


def check_rows(name: str, t: Any, n: int, like: str = "embeddings") -> None:
    """``ValueError`` unless ``t`` has ``n`` rows, the number of rows of ``like``."""
    if _rows(t) != n:
        raise ValueError(f"{name} must have {n} rows like {like}, got {_rows(t)}")


def check_same_length(**named: Any) -> int:
    """``ValueError`` unless every argument (tensor, array or sequence) has the same number of rows; returns it."""
    rows = {k: _rows(v) for k, v in named.items()}
    if len(set(rows.values())) > 1:
        names = list(rows)
        joined = ", ".join(names[:-1]) + f" and {names[-1]}"
        counts = ", ".join(str(r) for r in list(rows.values())[:-1]) + f" and {list(rows.values())[-1]}"
        raise ValueError(f"{joined} must have the same number of rows, got {counts}")
    return next(iter(rows.values()), 0)


def check_positive(name: str, value: float, *, strict: bool = True, minimum: float | None = None) -> None:
    """``ValueError`` unless ``value > 0`` (``strict``), ``>= 0`` (not ``strict``) or ``>= minimum``."""
    if minimum is not None:
        if not value >= minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {value}")
    elif strict and not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    elif not strict and not value >= 0:
        raise ValueError(f"{name} must be >= 0, got {value}")


def check_in_range(name: str, value: float, low: float, high: float) -> None:
    """``ValueError`` unless ``low <= value <= high``."""
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> None:
    """``ValueError`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
