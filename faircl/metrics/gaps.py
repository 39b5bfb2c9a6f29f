"""Reducers from a per-group value to one subgroup gap (Dullerud et al. 2022, finDML §5 and App. D.2).

Each reducer takes ``values`` ``[G]`` (one score per group, NaN for a group without data) and ``sizes`` ``[G]``
(rows per group) and returns a float64 scalar tensor. Groups with ``size == 0`` or a NaN value are not present and
take no part. A gap is NaN when it cannot be formed (fewer than two groups present).

* :func:`majority_minority`: value of the largest group minus value of the smallest (signed, as in the paper's
  tables, where e.g. NMI gaps can be negative).
* :func:`worst_vs_rest`: the rest minus the worst group (positive = the worst group is behind).
* :func:`top_vs_bottom_half`: first half of the groups minus the second half, in id order (the paper's 3 lightest vs
  3 darkest Fitzpatrick skin tones) or in value order.
* :func:`minority_gap`: the other groups minus the named minoritised groups (the paper's "minoritized vs
  majoritized", e.g. the groups shrunk by an induced imbalance).

Means over several groups are size-weighted by default, which for a per-query average such as Recall@k equals the
score of the pooled rows.

Three of the gaps are signed (:data:`SIGNED`, :func:`is_signed`): 0 is no gap and a negative value is a gap the other
way round, not a smaller one, so no direction of them is better; :func:`worst_vs_rest` is never negative.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["SIGNED", "all_gaps", "is_signed", "majority_minority", "minority_gap", "top_vs_bottom_half",
           "worst_vs_rest"]

#: the signed gaps, by the key :func:`all_gaps` gives them (``<prefix>_<key>``): largest − smallest group
#: (:func:`majority_minority`), first half − second half in id order (:func:`top_vs_bottom_half`), the rest − the
#: minoritised groups (:func:`minority_gap`)
SIGNED = ("majority_minority", "top_vs_bottom_half", "minority")


def is_signed(name: str) -> bool:
    """Whether the metric ``name`` is a signed gap of :func:`all_gaps` (its name ends in ``gap_<key>`` for a key of
    :data:`SIGNED`, e.g. ``recall@1_gap_top_vs_bottom_half``, ``probe/accuracy_gap_minority``).

    Examples:
        >>> from faircl.metrics.gaps import is_signed
        >>> is_signed("nmi_gap_top_vs_bottom_half"), is_signed("nmi_gap_worst_vs_rest"), is_signed("tpr_gap_rms")
        (True, False, False)
    """
    return any(name.endswith(f"gap_{key}") for key in SIGNED)


def _prepare(values: Tensor, sizes: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    values = torch.as_tensor(values).double().flatten()
    sizes = torch.as_tensor(sizes).double().flatten()
    if values.shape != sizes.shape:
        raise ValueError(f"values and sizes must have the same shape [G], got {tuple(values.shape)} and "
                         f"{tuple(sizes.shape)}")
    if bool((sizes < 0).any()):
        raise ValueError(f"sizes must be >= 0, got {sizes.tolist()}")
    present = (sizes > 0) & ~torch.isnan(values)
    return values, sizes, present


def _nan(values: Tensor) -> Tensor:
    return values.new_tensor(float("nan"))


def _mean(values: Tensor, sizes: Tensor, weighted: bool) -> Tensor:
    if weighted:
        return (values * sizes).sum() / sizes.sum()
    return values.mean()


def majority_minority(values: Tensor, sizes: Tensor) -> Tensor:
    """``value[largest group] − value[smallest group]`` among the present groups (ties: lowest id).

    Args:
        values: per-group score ``[G]``.
        sizes: rows per group ``[G]``.

    Examples:
        >>> import torch
        >>> from faircl.metrics.gaps import majority_minority
        >>> majority_minority(torch.tensor([0.9, 0.6]), sizes=torch.tensor([80, 20]))   # largest group minus smallest
        tensor(0.3000, dtype=torch.float64)
    """
    values, sizes, present = _prepare(values, sizes)
    if int(present.sum()) < 2:
        return _nan(values)
    idx = present.nonzero().flatten()
    s = sizes[idx]
    major = idx[int(torch.argmax(s))]
    minor = idx[int(torch.argmin(s))]
    return values[major] - values[minor]


def worst_vs_rest(values: Tensor, sizes: Tensor, higher_is_better: bool = True, weighted: bool = True) -> Tensor:
    """Gap between the worst present group and the mean of the other present groups.

    Args:
        values: per-group score ``[G]``.
        sizes: rows per group ``[G]``.
        higher_is_better: the worst group is the lowest value if True, else the highest (e.g. for U_KL).
        weighted: size-weighted mean of the rest (default) or plain mean.

    Returns:
        ``mean(rest) − worst`` if ``higher_is_better`` else ``worst − mean(rest)``; positive when the worst group is
        behind the rest.

    Examples:
        >>> import torch
        >>> from faircl.metrics.gaps import worst_vs_rest
        >>> worst_vs_rest(torch.tensor([0.9, 0.8, 0.5]), sizes=torch.tensor([10, 10, 10]))   # 0.5 vs 0.85
        tensor(0.3500, dtype=torch.float64)
    """
    values, sizes, present = _prepare(values, sizes)
    if int(present.sum()) < 2:
        return _nan(values)
    idx = present.nonzero().flatten()
    v = values[idx]
    w = int(torch.argmin(v)) if higher_is_better else int(torch.argmax(v))
    rest = torch.ones_like(v, dtype=torch.bool)
    rest[w] = False
    rest_mean = _mean(v[rest], sizes[idx][rest], weighted)
    return rest_mean - v[w] if higher_is_better else v[w] - rest_mean


def top_vs_bottom_half(values: Tensor, sizes: Tensor, by: str | Sequence[int] = "id", weighted: bool = True) -> Tensor:
    """Mean over the first half of the present groups minus the mean over the second half.

    Args:
        values: per-group score ``[G]``.
        sizes: rows per group ``[G]``.
        by: ``"id"`` orders groups by id (an ordered attribute such as skin tone, lightest first); ``"value"`` by
            decreasing value (top-scoring half vs bottom half, always >= 0); or an explicit order of group ids.
        weighted: size-weighted means (default) or plain means.

    Returns:
        The gap; with an odd number of present groups the middle one is left out.

    Examples:
        >>> import torch
        >>> from faircl.metrics.gaps import top_vs_bottom_half
        >>> values, sizes = torch.tensor([0.9, 0.8, 0.6, 0.5]), torch.tensor([10, 10, 10, 10])
        >>> top_vs_bottom_half(values, sizes)   # mean of groups 0, 1 minus mean of groups 2, 3
        tensor(0.3000, dtype=torch.float64)
    """
    values, sizes, present = _prepare(values, sizes)
    if isinstance(by, str):
        if by == "id":
            order = torch.arange(values.numel(), device=values.device)
        elif by == "value":
            order = torch.argsort(torch.nan_to_num(values, nan=-float("inf")), descending=True, stable=True)
        else:
            raise ValueError(f"by must be 'id', 'value' or a sequence of group ids, got {by!r}")
    else:
        order = torch.as_tensor(list(by), dtype=torch.long, device=values.device)
        if sorted(order.tolist()) != list(range(values.numel())):
            raise ValueError(f"by must be a permutation of 0..{values.numel() - 1}, got {order.tolist()}")
    order = order[present[order]]
    half = order.numel() // 2
    if half < 1:
        return _nan(values)
    top, bottom = order[:half], order[-half:]
    return _mean(values[top], sizes[top], weighted) - _mean(values[bottom], sizes[bottom], weighted)


def minority_gap(values: Tensor, sizes: Tensor, minority: Sequence[int], higher_is_better: bool = True,
                 weighted: bool = True) -> Tensor:
    """``mean(rest) − mean(minority)`` over the present groups (size-weighted by default).

    For a lower-is-better score (``higher_is_better=False``, e.g. U_KL) the sign flips, so a positive gap always
    means the minoritised groups are behind. NaN when either side has no present group.

    Examples:
        >>> import torch
        >>> from faircl.metrics.gaps import minority_gap
        >>> minority_gap(torch.tensor([0.9, 0.8, 0.5]), torch.tensor([50, 30, 20]), minority=[2])   # 0.8625 − 0.5
        tensor(0.3625, dtype=torch.float64)
    """
    values, sizes, present = _prepare(values, sizes)
    is_min = torch.zeros(values.shape[0], dtype=torch.bool, device=values.device)
    ids = [int(g) for g in minority if 0 <= int(g) < values.shape[0]]
    is_min[ids] = True
    lo, hi = present & is_min, present & ~is_min
    if not bool(lo.any()) or not bool(hi.any()):
        return _nan(values)
    gap = _mean(values[hi], sizes[hi], weighted) - _mean(values[lo], sizes[lo], weighted)
    return gap if higher_is_better else -gap


def all_gaps(values: Tensor, sizes: Tensor, higher_is_better: bool = True, prefix: str = "gap",
             minority: Sequence[int] | None = None) -> dict[str, Tensor]:
    """The reducers in a dict: ``{prefix}_majority_minority``, ``{prefix}_worst_vs_rest``,
    ``{prefix}_top_vs_bottom_half`` (id order), and ``{prefix}_minority`` when ``minority`` names groups."""
    out = {
        f"{prefix}_majority_minority": majority_minority(values, sizes),  # signed (SIGNED)
        f"{prefix}_worst_vs_rest": worst_vs_rest(values, sizes, higher_is_better=higher_is_better),
        f"{prefix}_top_vs_bottom_half": top_vs_bottom_half(values, sizes),  # signed
    }
    if minority:
        out[f"{prefix}_minority"] = minority_gap(values, sizes, minority, higher_is_better)  # signed
    return out
