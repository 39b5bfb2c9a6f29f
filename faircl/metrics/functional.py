"""Stateless prediction-fairness maths on tensors.

Every public function takes the same arguments ``(preds, target, groups, num_classes, num_groups)``:

* ``preds``: class ids ``[N]`` (integer dtype) or scores ``[N, C]`` (any float dtype: fp16 / bf16 scores are cast to
  float32 before the argmax, so they give the same counts as the same scores in fp32).
* ``target``: true class ids ``[N]``.
* ``groups``: protected-attribute ids ``[N]``; ``-1`` marks an unknown attribute. Such rows count for accuracy and
  F1 but are left out of every group term (and :func:`count_unknown_groups` reports how many there were).

All statistics derive from per-(group, class) confusion counts (:func:`group_confusion`), so they can be
accumulated batch by batch and summed across processes. Rates are computed in float64.

Undefined quantities. A rate with an empty denominator (``TPR`` of a group with no positives of a class, any rate
of a group absent from the data) is NaN, never 0. Gap statistics leave undefined terms out of their sums and maxima;
a gap is NaN only when none of its terms is defined (for example, fewer than two groups present for a range).

Smoothing. ``smoothing=0`` (the default) gives exact rates. ``smoothing=1e-5`` reproduces the Shen et al. / fairlib
GAP code exactly: fairlib adds ``ε`` to TP, FP and FN and computes ``TN = N − (TP+ε) − (FP+ε) − (FN+ε) + ε``, i.e.
``TN − 2ε``. With smoothing every rate is defined (an empty cell gets TPR = 0.5; a cell without negatives gets
FPR = ε / (ε − 2ε) = −1, as in fairlib) and the rates differ from the exact ones by ``O(ε / n_cell)``; on data where
every (group, class) cell is populated the two GAPs agree to ~1e-5. fairlib also takes the overall rates over all
rows and the groups as ``0..len(set(a))−1``; here the overall rates are over the rows with a known group and the
groups are the fixed ``0..num_groups−1`` slots (identical when no group is unknown or absent).

Speed. :func:`confusion_counts` reads the three id tensors once, in blocks of :data:`CHUNK_ROWS` rows: the first
pass over a block builds the code ``ŷ + C·y + C²·g`` (reading the ids from memory), the range checks (one
``aminmax`` per id tensor) then re-read the block from cache, and one ``scatter_add_`` counts it. A block without
unknown groups is counted straight into place; one with ``g = −1`` is shifted by ``C²`` and counted in a scratch
tensor folded in at the end. Two-class scores take one comparison instead of an argmax reduction. The maths on the
(tiny) count tensors runs in numpy float64, with no chain of small torch kernels. ``benchmarks/metrics.py`` measures
all of it against a bare ``torch.bincount``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "CHUNK_ROWS",
    "RATES",
    "accuracy_from_confusion",
    "as_class_ids",
    "check_inputs",
    "check_labels",
    "confusion_counts",
    "count_unknown_groups",
    "demographic_parity_gap",
    "demographic_parity_gap_from_confusion",
    "eo_gap",
    "eo_gap_from_confusion",
    "equalized_odds_difference",
    "equalized_odds_difference_from_confusion",
    "f1_from_confusion",
    "fairness_summary",
    "fpr_gap_rms",
    "group_accuracy",
    "group_accuracy_from_confusion",
    "group_confusion",
    "group_rates",
    "ppr_gap_rms",
    "rate_gap_rms_from_confusion",
    "tpr_gap_rms",
    "worst_group_accuracy",
    "worst_group_accuracy_from_confusion",
]

CHUNK_ROWS = 1 << 17
"""Rows counted per block by :func:`confusion_counts`: the block's ids, codes and ones (5 MiB) stay in the CPU cache."""


# ----------------------------------------------------------------------------------------------------------------
# input checking
# ----------------------------------------------------------------------------------------------------------------

def _first_bad_row(mask: Tensor) -> int:
    return int(mask.nonzero()[0, 0])


def _check_range(x: Tensor, name: str, low: int, high: int, what: str) -> None:
    """Raise ``ValueError`` naming ``name`` and the first offending value unless ``low <= x <= high``."""
    if x.numel() == 0:
        return
    lo, hi = torch.aminmax(x)
    if lo < low or hi > high:
        row = _first_bad_row((x < low) | (x > high))
        raise ValueError(f"{name} contains {int(x[row])} at row {row}; expected {what}")


def _check_id_tensor(t: Tensor, name: str) -> None:
    """Type, shape and dtype of a label tensor (no pass over its values)."""
    if not isinstance(t, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.ndim != 1:
        raise ValueError(f"{name} must have shape [N], got shape {tuple(t.shape)}")
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer ids, got dtype {t.dtype}")


def check_labels(t: Tensor, name: str, num: int | None, allow_unknown: bool = False,
                 kind: str = "num_classes", check_values: bool = True) -> Tensor:
    """Check a 1-D integer label tensor (values in ``0..num-1``, ``-1`` too if ``allow_unknown``; ``num=None``:
    any value >= 0) and return it as int64."""
    _check_id_tensor(t, name)
    t = t.long()
    if not check_values:
        return t
    low = -1 if allow_unknown else 0
    unknown = "-1 (unknown) or " if allow_unknown else ""
    if num is None:
        _check_range(t, name, low, torch.iinfo(torch.long).max, f"{unknown}an id >= 0")
    else:
        _check_range(t, name, low, num - 1, f"{unknown}0..{num - 1} ({kind}={num})")
    return t


def _check_scores_shape(preds: Tensor, num_classes: int, name: str = "preds") -> bool:
    """Whether ``preds`` holds scores ``[N, C]`` (``True``) or class ids ``[N]`` (``False``); raises on anything else."""
    if not isinstance(preds, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(preds).__name__}")
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
    to the lowest class, as ``torch.argmax``. Two classes take one comparison instead of a reduction (5x faster on
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
    if not (preds.shape[0] == target.shape[0] == groups.shape[0]):
        raise ValueError(
            f"preds, target and groups must have the same number of rows, got {preds.shape[0]}, {target.shape[0]} "
            f"and {groups.shape[0]}")


def _check_sizes(num_classes: int, num_groups: int) -> None:
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}")
    if num_groups < 1:
        raise ValueError(f"num_groups must be >= 1, got {num_groups}")


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
    """
    _check_sizes(num_classes, num_groups)
    scores = _check_scores_shape(preds, num_classes)
    _check_id_tensor(target, "target")
    _check_id_tensor(groups, "groups")
    _check_rows(preds, target, groups)
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    c, cc = num_classes, num_classes * num_classes
    shape = (num_groups + 1, c, c)
    if out is not None and (out.shape != shape or out.dtype != torch.long):
        raise ValueError(f"out must be an int64 tensor of shape {list(shape)}, got {out.dtype} {list(out.shape)}")
    if out is not None and not out.is_contiguous():
        raise ValueError("out must be contiguous")
    counts = out if out is not None else torch.zeros(shape, dtype=torch.long, device=target.device)
    device = counts.device
    n = target.shape[0]
    if n == 0:
        return counts
    rows = min(n, chunk_rows)
    code = torch.empty(rows, dtype=torch.long, device=device)
    ones = torch.ones(rows, dtype=torch.long, device=device)
    flat = counts.view(-1)         # code ŷ + C·y + C²·g of a known group lands in place; unknown slot last
    shifted = None                 # blocks with an unknown group: code + C², unknown slot first, folded at the end
    for lo in range(0, n, rows):
        m = min(rows, n - lo)
        t, g = _long_block(target, lo, m, device), _long_block(groups, lo, m, device)
        p = (_argmax_checked(preds[lo:lo + m].to(device), "preds", check_values, row_offset=lo) if scores
             else _long_block(preds, lo, m, device))
        k, one = (code, ones) if m == rows else (code[:m], ones[:m])
        # the first pass reads the three id blocks from memory; the checks then re-read them from cache
        torch.add(p, t, alpha=c, out=k).add_(g, alpha=cc)
        checked = (g,) if not check_values else (g, t) if scores else (g, t, p)
        bounds = torch.stack([b for x in checked for b in torch.aminmax(x)]).tolist()
        if not (-1 <= bounds[0] and bounds[1] < num_groups and all(0 <= b < c for b in bounds[2:])):
            _raise_for_bad_ids(preds, target, groups, num_classes, num_groups)
        if bounds[0] >= 0:
            flat.scatter_add_(0, k, one)
        else:
            if shifted is None:
                shifted = torch.zeros((num_groups + 1) * cc, dtype=torch.long, device=device)
            shifted.scatter_add_(0, k.add_(cc), one)
    if shifted is not None:
        shifted = shifted.view(shape)
        counts[:-1] += shifted[1:]
        counts[-1] += shifted[0]
    return counts


def _raise_for_bad_ids(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int) -> None:
    """A block has an id out of range: the full check names the first offending value and row."""
    check_inputs(preds, target, groups, num_classes, num_groups)
    raise RuntimeError("confusion_counts: a block's bounds were out of range but no offending row was found")


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


# ----------------------------------------------------------------------------------------------------------------
# maths on confusion counts (numpy float64 inside; tensors in and out)
# ----------------------------------------------------------------------------------------------------------------

RATES = ("tpr", "fpr", "ppr")


def _np(cm: Tensor) -> np.ndarray:
    return cm.detach().to("cpu", torch.float64).numpy()


def _out(x, like: Tensor) -> Tensor:
    """A float64 tensor on ``like``'s device from a numpy value."""
    return torch.as_tensor(np.asarray(x, dtype=np.float64), device=like.device)


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` with NaN where ``den == 0`` (an undefined rate)."""
    ok = den > 0
    return np.where(ok, num / np.where(ok, den, 1.0), np.nan)


def _rates(cm: np.ndarray, smoothing: float = 0.0) -> np.ndarray:
    """One-vs-rest TPR, FPR, PPR stacked as ``[3, ..., C]`` from counts ``[..., C, C]`` (see :func:`group_rates`)."""
    tp = np.diagonal(cm, axis1=-2, axis2=-1)
    num, den = np.empty((2, 3) + tp.shape)
    num[0] = tp                                        # TP      / (TP + FN)
    den[0] = cm.sum(-1)
    num[2] = cm.sum(-2)                                # TP + FP / N
    den[2] = cm.sum((-2, -1))[..., None]
    np.subtract(num[2], tp, out=num[1])                # FP      / (FP + TN)
    np.subtract(den[2], den[0], out=den[1])
    if smoothing:
        # fairlib: TP, FP, FN get +ε and TN = N − (TP+ε + FP+ε + FN+ε) + ε, i.e. TN − 2ε. Plain division, as there
        # (a cell with no negatives gets FPR = ε / (ε − 2ε) = −1 too).
        shape = (3,) + (1,) * tp.ndim
        e = smoothing
        return (num + np.reshape([e, e, 2 * e], shape)) / (den + np.reshape([2 * e, -e, e], shape))
    return _div(num, den)


def _rate_table(cm: np.ndarray, smoothing: float = 0.0) -> np.ndarray:
    """Rates ``[3, G + 1, C]`` of each group of ``cm`` ``[G, C, C]`` and, last, of all its rows together."""
    return _rates(np.concatenate([cm, cm.sum(0, keepdims=True)]), smoothing)


def _dev_sums(table: np.ndarray) -> np.ndarray:
    """``Σ_a |R_{a,y} − R_y|`` for R = TPR, FPR, PPR: ``[3, C]`` from a :func:`_rate_table`.

    Groups whose rate is undefined are left out of the sum, which is NaN when no group's (or the overall) rate is
    defined.
    """
    dev = np.abs(table[:, :-1] - table[:, -1:])
    undefined = np.isnan(dev)
    return np.where(undefined.all(1), np.nan, np.where(undefined, 0.0, dev).sum(1))


def _ranges(table: np.ndarray) -> np.ndarray:
    """``max_a R_{a,y} − min_a R_{a,y}`` for R = TPR, FPR, PPR: ``[3, C]`` from a :func:`_rate_table`; NaN with
    fewer than two defined group rates."""
    r = table[:, :-1]
    spread = np.fmax.reduce(r, axis=1) - np.fmin.reduce(r, axis=1)        # fmax / fmin skip NaN
    return np.where((~np.isnan(r)).sum(1) >= 2, spread, np.nan)


def _max_or_nan(x: np.ndarray) -> float:
    """Largest defined value; NaN if none is."""
    return float(np.fmax.reduce(x, axis=None))


def _min_or_nan(x: np.ndarray) -> float:
    """Smallest defined value; NaN if none is."""
    return float(np.fmin.reduce(x, axis=None))


def _sum_or_nan(x: np.ndarray) -> float:
    """Sum of the defined values; NaN if none is."""
    undefined = np.isnan(x)
    return math.nan if undefined.all() else float(np.where(undefined, 0.0, x).sum())


def _eo_gap(dev: np.ndarray) -> float:
    """ΔEO from :func:`_dev_sums`: TPR and FPR terms of every class (binary: class 1 only)."""
    return _sum_or_nan(dev[:2, 1:] if dev.shape[-1] == 2 else dev[:2])


def _gap_rms(dev: np.ndarray) -> np.ndarray:
    """``sqrt(mean_y dev_y²)`` over the defined classes, per rate: ``[3]`` from :func:`_dev_sums`."""
    defined = ~np.isnan(dev)
    count = defined.sum(-1)
    mean_sq = np.where(defined, dev * dev, 0.0).sum(-1) / np.maximum(count, 1)
    return np.where(count > 0, np.sqrt(mean_sq), np.nan)


def _group_accuracy(cm: np.ndarray) -> np.ndarray:
    return _div(np.trace(cm, axis1=-2, axis2=-1), cm.sum((-2, -1)))


def _accuracy(cm: np.ndarray) -> float:
    cm = cm.sum(0) if cm.ndim == 3 else cm
    return float(_div(np.trace(cm), cm.sum()))


def _f1(cm: np.ndarray) -> float:
    cm = cm.sum(0) if cm.ndim == 3 else cm
    f1 = _div(2 * np.diagonal(cm), cm.sum(0) + cm.sum(1))     # 2TP / (2TP + FP + FN)
    if cm.shape[0] == 2:
        return float(f1[1])
    defined = ~np.isnan(f1)
    return float(f1[defined].mean()) if defined.any() else math.nan


def fairness_summary(counts: Tensor, smoothing: float = 0.0) -> dict[str, Tensor]:
    """Every statistic of :class:`~faircl.metrics.GroupFairness` from counts ``[G + 1, C, C]`` (unknown group last,
    as returned by :func:`confusion_counts`), in one pass over the counts.

    ``smoothing`` applies to the ``*_gap_rms`` entries only (fairlib's GAP; see the module docstring). Returns float64
    scalars (``group_accuracy``: ``[G]``; ``n_unknown_group``: int64) on the device of ``counts``.
    """
    cm_all = _np(counts)
    cm = cm_all[:-1]
    table = _rate_table(cm)
    dev = _dev_sums(table)
    rms = _gap_rms(_dev_sums(_rate_table(cm, smoothing)) if smoothing else dev)
    rng = _ranges(table)
    acc_g = _group_accuracy(cm)
    out = {
        "accuracy": _accuracy(cm_all),
        "f1": _f1(cm_all),
        "eo_gap": _eo_gap(dev),
        "tpr_gap_rms": rms[0],
        "fpr_gap_rms": rms[1],
        "ppr_gap_rms": rms[2],
        "dp_gap": _max_or_nan(rng[2]),
        "worst_group_accuracy": _min_or_nan(acc_g),
    }
    if cm.shape[-1] == 2:
        out["equalized_odds_difference"] = _max_or_nan(rng[:2])
    res = dict(zip(out, torch.tensor(list(out.values()), dtype=torch.float64, device=counts.device).unbind()))
    res["group_accuracy"] = _out(acc_g, counts)
    res["n_unknown_group"] = counts[-1].sum()
    return res


def group_rates(cm: Tensor, smoothing: float = 0.0) -> dict[str, Tensor]:
    """One-vs-rest TPR, FPR and PPR per group and class from confusion counts.

    Args:
        cm: counts ``[G, C, C]`` (rows true class, columns predicted), or ``[C, C]`` for a single population.
        smoothing: ``ε`` added to the counts as in fairlib (see the module docstring); 0 = exact rates.

    Returns:
        dict with float64 ``tpr``, ``fpr``, ``ppr`` of shape ``cm.shape[:-1]`` (``[G, C]``):
        ``TPR_{a,y} = P(ŷ=y | y, a)``, ``FPR_{a,y} = P(ŷ=y | y'≠y, a)``, ``PPR_{a,y} = P(ŷ=y | a)``;
        NaN where the denominator is empty (only possible without smoothing).
    """
    return {k: _out(v, cm) for k, v in zip(RATES, _rates(_np(cm), smoothing))}


def eo_gap_from_confusion(cm: Tensor) -> Tensor:
    """Chi et al. (2022) ΔEO from counts ``[G, C, C]``.

    ``ΔTPR^y = Σ_a |TPR_a^y − TPR^y|``, ``ΔFPR^y = Σ_a |FPR_a^y − FPR^y|`` (one-vs-rest for class ``y``; the overall
    rate is over the rows with a known group) and ``ΔEO = Σ_y (ΔTPR^y + ΔFPR^y)``. For a binary task only the positive
    class ``y = 1`` is summed, as in the paper (class 0 would repeat the same gaps).
    """
    return _out(_eo_gap(_dev_sums(_rate_table(_np(cm)))), cm)


def rate_gap_rms_from_confusion(cm: Tensor, rate: str = "tpr", smoothing: float = 0.0) -> Tensor:
    """Shen et al. (2021) eq. 4 as generalised in fairlib: ``sqrt(mean_y (Σ_a |R_{a,y} − R_y|)²)``, R ∈ {TPR, FPR, PPR}.

    For two groups ``Σ_a |TPR_{a,y} − TPR_y| = |TPR_{0,y} − TPR_{1,y}|`` exactly (the overall rate is the
    size-weighted mean of the two), which is the paper's ``GAP^{TPR}_{a,y}``. Classes whose sum is undefined are left
    out of the mean.
    """
    if rate not in RATES:
        raise ValueError(f"rate must be one of {RATES}, got {rate!r}")
    return _out(_gap_rms(_dev_sums(_rate_table(_np(cm), smoothing)))[RATES.index(rate)], cm)


def demographic_parity_gap_from_confusion(cm: Tensor) -> Tensor:
    """``max_y (max_a P(ŷ=y|a) − min_a P(ŷ=y|a))``; for binary tasks fairlearn's ``demographic_parity_difference``."""
    return _out(_max_or_nan(_ranges(_rate_table(_np(cm)))[2]), cm)


def equalized_odds_difference_from_confusion(cm: Tensor) -> Tensor:
    """``max_y max(range_a TPR_a^y, range_a FPR_a^y)``; for binary tasks fairlearn's ``equalized_odds_difference``.

    (For two classes the one-vs-rest gaps of class 0 equal those of class 1, so the max over classes is the
    positive-class value.)
    """
    return _out(_max_or_nan(_ranges(_rate_table(_np(cm)))[:2]), cm)


def group_accuracy_from_confusion(cm: Tensor) -> Tensor:
    """Accuracy per group ``[G]`` (float64), NaN for a group without rows."""
    return _out(_group_accuracy(_np(cm)), cm)


def worst_group_accuracy_from_confusion(cm: Tensor) -> Tensor:
    """Lowest accuracy over the groups present; NaN if no group is present."""
    return _out(_min_or_nan(_group_accuracy(_np(cm))), cm)


def accuracy_from_confusion(cm: Tensor) -> Tensor:
    """Accuracy of a ``[C, C]`` (or ``[G, C, C]``, summed) confusion matrix; NaN when empty."""
    return _out(_accuracy(_np(cm)), cm)


def f1_from_confusion(cm: Tensor) -> Tensor:
    """F1 of a ``[C, C]`` (or ``[G, C, C]``, summed) confusion matrix: class 1 for a binary task, else the macro mean.

    Per class ``F1_y = 2TP / (2TP + FP + FN)``; as in scikit-learn (``labels=None``), a class that is neither present
    nor predicted is left out of the macro mean, and a present class that is never predicted scores 0. NaN when
    undefined (binary: no positive row and no positive prediction; or no rows at all).
    """
    return _out(_f1(_np(cm)), cm)


# ----------------------------------------------------------------------------------------------------------------
# public functional API (same signature everywhere)
# ----------------------------------------------------------------------------------------------------------------

def eo_gap(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int) -> Tensor:
    """Equalized-odds gap ΔEO of Chi et al. (2022), §4 (see :func:`eo_gap_from_confusion`). Scalar float64."""
    return eo_gap_from_confusion(group_confusion(preds, target, groups, num_classes, num_groups))


def tpr_gap_rms(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int,
                smoothing: float = 0.0) -> Tensor:
    """Shen et al. (2021) GAP (eq. 4; fairlib ``TPR_GAP``); ``smoothing=1e-5`` reproduces fairlib. Scalar float64."""
    cm = group_confusion(preds, target, groups, num_classes, num_groups)
    return rate_gap_rms_from_confusion(cm, "tpr", smoothing)


def fpr_gap_rms(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int,
                smoothing: float = 0.0) -> Tensor:
    """FPR version of :func:`tpr_gap_rms` (fairlib ``FPR_GAP``). Scalar float64."""
    cm = group_confusion(preds, target, groups, num_classes, num_groups)
    return rate_gap_rms_from_confusion(cm, "fpr", smoothing)


def ppr_gap_rms(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int,
                smoothing: float = 0.0) -> Tensor:
    """Positive-prediction-rate version of :func:`tpr_gap_rms` (fairlib ``PPR_GAP``). Scalar float64."""
    cm = group_confusion(preds, target, groups, num_classes, num_groups)
    return rate_gap_rms_from_confusion(cm, "ppr", smoothing)


def demographic_parity_gap(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int,
                           num_groups: int) -> Tensor:
    """Demographic-parity difference (see :func:`demographic_parity_gap_from_confusion`). Scalar float64."""
    return demographic_parity_gap_from_confusion(group_confusion(preds, target, groups, num_classes, num_groups))


def equalized_odds_difference(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int,
                              num_groups: int) -> Tensor:
    """Equalized-odds difference (see :func:`equalized_odds_difference_from_confusion`). Scalar float64."""
    cm = group_confusion(preds, target, groups, num_classes, num_groups)
    return equalized_odds_difference_from_confusion(cm)


def group_accuracy(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int) -> Tensor:
    """Accuracy per group ``[G]``; NaN for a group absent from the data."""
    return group_accuracy_from_confusion(group_confusion(preds, target, groups, num_classes, num_groups))


def worst_group_accuracy(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int,
                         num_groups: int) -> Tensor:
    """Lowest per-group accuracy over the groups present. Scalar float64."""
    return worst_group_accuracy_from_confusion(group_confusion(preds, target, groups, num_classes, num_groups))
