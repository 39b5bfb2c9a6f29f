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
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "accuracy_from_confusion",
    "as_class_ids",
    "check_inputs",
    "check_labels",
    "confusion_counts",
    "count_unknown_groups",
    "demographic_parity_gap",
    "demographic_parity_gap_from_confusion",
    "demographic_parity_gap_from_rates",
    "eo_gap",
    "eo_gap_from_confusion",
    "eo_gap_from_rates",
    "equalized_odds_difference",
    "equalized_odds_difference_from_confusion",
    "equalized_odds_difference_from_rates",
    "f1_from_confusion",
    "fpr_gap_rms",
    "group_accuracy",
    "group_accuracy_from_confusion",
    "group_confusion",
    "group_rates",
    "ppr_gap_rms",
    "rate_gap_rms_from_confusion",
    "rate_gap_rms_from_rates",
    "tpr_gap_rms",
    "worst_group_accuracy",
    "worst_group_accuracy_from_confusion",
]


# ----------------------------------------------------------------------------------------------------------------
# input checking and counting
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


def check_labels(t: Tensor, name: str, num: int | None, allow_unknown: bool = False,
                 kind: str = "num_classes", check_values: bool = True) -> Tensor:
    """Check a 1-D integer label tensor (values in ``0..num-1``, ``-1`` too if ``allow_unknown``; ``num=None``:
    any value >= 0) and return it as int64."""
    if not isinstance(t, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.ndim != 1:
        raise ValueError(f"{name} must have shape [N], got shape {tuple(t.shape)}")
    if t.is_floating_point() or t.is_complex():
        raise ValueError(f"{name} must hold integer ids, got dtype {t.dtype}")
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


def as_class_ids(preds: Tensor, num_classes: int, name: str = "preds", check_values: bool = True) -> Tensor:
    """Class ids ``[N]`` from class ids ``[N]`` or scores ``[N, C]`` (argmax in float32; NaN scores rejected)."""
    if not isinstance(preds, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(preds).__name__}")
    if preds.is_floating_point():
        if preds.ndim != 2 or preds.shape[1] != num_classes:
            raise ValueError(
                f"{name} holds floating-point scores, so it must have shape [N, {num_classes}] "
                f"(num_classes={num_classes}); got shape {tuple(preds.shape)}. Pass integer class ids of shape [N] "
                "for hard predictions")
        scores = preds.float()
        nan = torch.isnan(scores) if check_values else None
        if nan is not None and nan.any():
            row = _first_bad_row(nan.any(1))
            raise ValueError(f"{name} contains NaN scores at row {row}: {scores[row].tolist()}")
        return scores.argmax(1)
    return check_labels(preds, name, num_classes, check_values=check_values)


def check_inputs(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int,
                 num_groups: int, check_values: bool = True,
                 check_groups: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """Validate and normalise ``(preds, target, groups)``; returns three int64 tensors ``[N]``.

    Shapes and dtypes are always checked; ``check_values=False`` skips the id-range and NaN checks;
    ``check_groups=False`` skips only the range check of ``groups`` (:func:`confusion_counts` can do it for free).
    """
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}")
    if num_groups < 1:
        raise ValueError(f"num_groups must be >= 1, got {num_groups}")
    p = as_class_ids(preds, num_classes, check_values=check_values)
    t = check_labels(target, "target", num_classes, check_values=check_values)
    g = check_labels(groups, "groups", num_groups, allow_unknown=True, kind="num_groups",
                     check_values=check_values and check_groups)
    if not (p.shape[0] == t.shape[0] == g.shape[0]):
        raise ValueError(
            f"preds, target and groups must have the same number of rows, got {p.shape[0]}, {t.shape[0]} and "
            f"{g.shape[0]}")
    return p, t, g


def confusion_counts(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int,
                     num_groups: int, out: Tensor | None = None, check_groups: bool = False) -> Tensor:
    """Counts ``[num_groups + 1, C, C]`` (rows true class, columns predicted); slot ``num_groups`` = unknown group.

    One ``bincount`` of the code ``ŷ + C·y + C²·(g + 1)``. ``preds`` and ``target`` must already be checked
    (:func:`check_inputs`); ``groups`` too unless ``check_groups``: with valid ``ŷ`` and ``y``, a group id below -1
    makes a negative code and one above ``num_groups − 1`` a code past the last slot, so the ``bincount`` itself
    detects them and the full check then names the offending row.
    ``out``: optional int64 buffer ``[N]`` for the codes (reusing one saves the page faults of a fresh allocation).
    """
    c = num_classes
    size = (num_groups + 1) * c * c
    code = torch.add(preds, target, alpha=c, out=out) if out is not None else torch.add(preds, target, alpha=c)
    code.add_(groups, alpha=c * c).add_(c * c)          # g = -1 (unknown) lands in slot 0
    try:
        counts = torch.bincount(code, minlength=size)
    except RuntimeError:
        if not check_groups:
            raise
        counts = None
    if check_groups and (counts is None or counts.numel() > size):
        check_labels(groups, "groups", num_groups, allow_unknown=True, kind="num_groups")
    return torch.roll(counts.view(num_groups + 1, c, c), -1, 0)   # known groups first, unknown last


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
    p, t, g = check_inputs(preds, target, groups, num_classes, num_groups, check_groups=False)
    return confusion_counts(p, t, g, num_classes, num_groups, check_groups=True)[:num_groups]


def count_unknown_groups(groups: Tensor) -> int:
    """Number of rows with ``groups == -1``."""
    return int((groups == -1).sum())


# ----------------------------------------------------------------------------------------------------------------
# maths on confusion counts
# ----------------------------------------------------------------------------------------------------------------

def _div(num: Tensor, den: Tensor) -> Tensor:
    """``num / den`` with NaN where ``den == 0`` (an undefined rate)."""
    return torch.where(den > 0, num / den.clamp_min(torch.finfo(num.dtype).tiny), torch.full_like(num, float("nan")))


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
    cm = cm.double()
    tp = cm.diagonal(dim1=-2, dim2=-1)
    pos = cm.sum(-1)                       # rows whose true class is y
    pred = cm.sum(-2)                      # rows predicted as y
    n = cm.sum((-2, -1)).unsqueeze(-1)
    fn, fp = pos - tp, pred - tp
    tn = n - tp - fn - fp
    if smoothing:
        e = smoothing
        tp, fn, fp = tp + e, fn + e, fp + e
        tn = tn - 2 * e                    # fairlib: N − (TP+ε + FP+ε + FN+ε) + ε
        # plain division, as fairlib (a cell with no negatives gets FPR = ε / (ε − 2ε) = −1 there too)
        return {"tpr": tp / (tp + fn), "fpr": fp / (fp + tn), "ppr": (tp + fp) / (tp + fp + fn + tn)}
    return {"tpr": _div(tp, tp + fn), "fpr": _div(fp, fp + tn), "ppr": _div(tp + fp, tp + fp + fn + tn)}


def _sum_abs_dev(per_group: Tensor, overall: Tensor) -> Tensor:
    """``Σ_a |r_{a,y} − r_y|`` per class ``[C]``, over the groups whose rate is defined; NaN if none (or ``r_y``) is."""
    dev = (per_group - overall.unsqueeze(0)).abs()
    defined = ~torch.isnan(dev)
    total = torch.where(defined, dev, torch.zeros_like(dev)).sum(0)
    return torch.where(defined.any(0), total, torch.full_like(total, float("nan")))


def _range(per_group: Tensor) -> Tensor:
    """``max_a r_{a,y} − min_a r_{a,y}`` per class over defined rates; NaN with fewer than two defined rates."""
    defined = ~torch.isnan(per_group)
    inf = torch.full_like(per_group, float("inf"))
    hi = torch.where(defined, per_group, -inf).amax(0)
    lo = torch.where(defined, per_group, inf).amin(0)
    out = hi - lo
    return torch.where(defined.sum(0) >= 2, out, torch.full_like(out, float("nan")))


def _nansum_or_nan(x: Tensor) -> Tensor:
    defined = ~torch.isnan(x)
    return x.nansum() if bool(defined.any()) else x.new_tensor(float("nan"))


def _nanmax_or_nan(x: Tensor) -> Tensor:
    defined = ~torch.isnan(x)
    return x[defined].max() if bool(defined.any()) else x.new_tensor(float("nan"))


def _rms_over_classes(x: Tensor) -> Tensor:
    defined = ~torch.isnan(x)
    return x[defined].square().mean().sqrt() if bool(defined.any()) else x.new_tensor(float("nan"))


def eo_gap_from_rates(r_g: dict[str, Tensor], r_all: dict[str, Tensor]) -> Tensor:
    """:func:`eo_gap_from_confusion` from precomputed :func:`group_rates` (per group and overall)."""
    d_tpr = _sum_abs_dev(r_g["tpr"], r_all["tpr"])
    d_fpr = _sum_abs_dev(r_g["fpr"], r_all["fpr"])
    if d_tpr.shape[-1] == 2:
        d_tpr, d_fpr = d_tpr[1:], d_fpr[1:]
    return _nansum_or_nan(torch.cat([d_tpr, d_fpr]))


def eo_gap_from_confusion(cm: Tensor) -> Tensor:
    """Chi et al. (2022) ΔEO from counts ``[G, C, C]``.

    ``ΔTPR^y = Σ_a |TPR_a^y − TPR^y|``, ``ΔFPR^y = Σ_a |FPR_a^y − FPR^y|`` (one-vs-rest for class ``y``; the overall
    rate is over the rows with a known group) and ``ΔEO = Σ_y (ΔTPR^y + ΔFPR^y)``. For a binary task only the positive
    class ``y = 1`` is summed, as in the paper (class 0 would repeat the same gaps).
    """
    return eo_gap_from_rates(group_rates(cm), group_rates(cm.sum(0)))


def rate_gap_rms_from_rates(r_g: dict[str, Tensor], r_all: dict[str, Tensor], rate: str = "tpr") -> Tensor:
    """:func:`rate_gap_rms_from_confusion` from precomputed :func:`group_rates`."""
    return _rms_over_classes(_sum_abs_dev(r_g[rate], r_all[rate]))


def rate_gap_rms_from_confusion(cm: Tensor, rate: str = "tpr", smoothing: float = 0.0) -> Tensor:
    """Shen et al. (2021) eq. 4 as generalised in fairlib: ``sqrt(mean_y (Σ_a |R_{a,y} − R_y|)²)``, R ∈ {TPR, FPR, PPR}.

    For two groups ``Σ_a |TPR_{a,y} − TPR_y| = |TPR_{0,y} − TPR_{1,y}|`` exactly (the overall rate is the
    size-weighted mean of the two), which is the paper's ``GAP^{TPR}_{a,y}``. Classes whose sum is undefined are left
    out of the mean.
    """
    return rate_gap_rms_from_rates(group_rates(cm, smoothing), group_rates(cm.sum(0), smoothing), rate)


def demographic_parity_gap_from_rates(r_g: dict[str, Tensor]) -> Tensor:
    """:func:`demographic_parity_gap_from_confusion` from precomputed per-group :func:`group_rates`."""
    return _nanmax_or_nan(_range(r_g["ppr"]))


def demographic_parity_gap_from_confusion(cm: Tensor) -> Tensor:
    """``max_y (max_a P(ŷ=y|a) − min_a P(ŷ=y|a))``; for binary tasks fairlearn's ``demographic_parity_difference``."""
    return demographic_parity_gap_from_rates(group_rates(cm))


def equalized_odds_difference_from_rates(r_g: dict[str, Tensor]) -> Tensor:
    """:func:`equalized_odds_difference_from_confusion` from precomputed per-group :func:`group_rates`."""
    return _nanmax_or_nan(torch.cat([_range(r_g["tpr"]), _range(r_g["fpr"])]))


def equalized_odds_difference_from_confusion(cm: Tensor) -> Tensor:
    """``max_y max(range_a TPR_a^y, range_a FPR_a^y)``; for binary tasks fairlearn's ``equalized_odds_difference``.

    (For two classes the one-vs-rest gaps of class 0 equal those of class 1, so the max over classes is the
    positive-class value.)
    """
    return equalized_odds_difference_from_rates(group_rates(cm))


def group_accuracy_from_confusion(cm: Tensor) -> Tensor:
    """Accuracy per group ``[G]`` (float64), NaN for a group without rows."""
    cm = cm.double()
    return _div(cm.diagonal(dim1=-2, dim2=-1).sum(-1), cm.sum((-2, -1)))


def worst_group_accuracy_from_confusion(cm: Tensor) -> Tensor:
    """Lowest accuracy over the groups present; NaN if no group is present."""
    acc = group_accuracy_from_confusion(cm)
    defined = ~torch.isnan(acc)
    return acc[defined].min() if bool(defined.any()) else acc.new_tensor(float("nan"))


def accuracy_from_confusion(cm: Tensor) -> Tensor:
    """Accuracy of a ``[C, C]`` (or ``[G, C, C]``, summed) confusion matrix; NaN when empty."""
    cm = cm.double()
    if cm.ndim == 3:
        cm = cm.sum(0)
    return _div(cm.trace(), cm.sum())


def f1_from_confusion(cm: Tensor) -> Tensor:
    """F1 of a ``[C, C]`` confusion matrix: class 1 for a binary task, else the macro mean over classes.

    Per class ``F1_y = 2TP / (2TP + FP + FN)``; as in scikit-learn (``labels=None``), a class that is neither present
    nor predicted is left out of the macro mean, and a present class that is never predicted scores 0. NaN when
    undefined (binary: no positive row and no positive prediction; or no rows at all).
    """
    cm = cm.double()
    if cm.ndim == 3:
        cm = cm.sum(0)
    tp = cm.diagonal()
    den = 2 * tp + (cm.sum(0) - tp) + (cm.sum(1) - tp)
    f1 = _div(2 * tp, den)
    if cm.shape[0] == 2:
        return f1[1]
    defined = ~torch.isnan(f1)
    return f1[defined].mean() if bool(defined.any()) else f1.new_tensor(float("nan"))


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
