"""Fairness statistics from confusion counts, and the functional API on predictions (same signature everywhere)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from faircl.metrics.functional.counting import group_confusion

__all__ = [
    "RATES",
    "accuracy_from_confusion",
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
    "group_rates",
    "ppr_gap_rms",
    "rate_gap_rms_from_confusion",
    "tpr_gap_rms",
    "worst_group_accuracy",
    "worst_group_accuracy_from_confusion",
]


# ----------------------------------------------------------------------------------------------------------------
# maths on confusion counts (plain Python floats on the count lists; tensors in and out)
# ----------------------------------------------------------------------------------------------------------------
# The count tensors are tiny ([G + 1, C, C]); the formulas below run on their ``tolist()`` in Python floats (float64),
# which costs less than a chain of small numpy or torch kernels for the usual sizes (0.1-0.3 ms for C, G <= 10) and
# reads like the papers' formulas. NaN marks an undefined value (``x != x``).

RATES = ("tpr", "fpr", "ppr")
NAN = math.nan
Matrix = list[list[int]]          # C x C counts, rows true class, columns predicted


def _ratio(num: float, den: float) -> float:
    """``num / den``, NaN for an empty denominator (an undefined rate)."""
    return num / den if den > 0 else NAN


def _defined(values) -> list[float]:
    return [v for v in values if v == v]


def _rates(m: Matrix, smoothing: float = 0.0) -> list[tuple[float, float, float]]:
    """One-vs-rest ``(TPR, FPR, PPR)`` of every class y from C x C counts ``m``."""
    n = sum(map(sum, m))
    out = []
    for y, row in enumerate(m):
        tp, pos = row[y], sum(row)                     # TP, TP + FN
        pred = sum(r[y] for r in m)                    # TP + FP
        fp, neg = pred - tp, n - pos                   # FP, FP + TN
        if smoothing:
            # fairlib: TP, FP, FN get +ε and TN = N − (TP+ε + FP+ε + FN+ε) + ε, i.e. TN − 2ε. Plain division, as
            # there (a cell with no negatives gets FPR = ε / (ε − 2ε) = −1 too).
            e = smoothing
            out.append(((tp + e) / (pos + 2 * e), (fp + e) / (neg - e), (pred + 2 * e) / (n + e)))
        else:
            out.append((_ratio(tp, pos), _ratio(fp, neg), _ratio(pred, n)))
    return out


def _total(ms: list[Matrix]) -> Matrix:
    """Element-wise sum of count matrices."""
    return [[sum(col) for col in zip(*rows)] for rows in zip(*ms)]


def _rate_table(cm: list[Matrix], smoothing: float = 0.0):
    """Rates of each group (``[G][C]`` of ``(TPR, FPR, PPR)``) and of all the groups' rows together (``[C]``)."""
    return [_rates(m, smoothing) for m in cm], _rates(_total(cm), smoothing)


def _dev_sums(per_group, overall) -> list[list[float]]:
    """``Σ_a |R_{a,y} − R_y|`` for R = TPR, FPR, PPR (``[3][C]``), over the groups whose rate is defined; NaN when
    no group's rate (or the overall rate) is defined."""
    out = []
    for r in range(3):
        row = []
        for y, all_rates in enumerate(overall):
            terms = _defined(abs(g[y][r] - all_rates[r]) for g in per_group)
            row.append(sum(terms) if terms else NAN)
        out.append(row)
    return out


def _ranges(per_group) -> list[list[float]]:
    """``max_a R_{a,y} − min_a R_{a,y}`` for R = TPR, FPR, PPR (``[3][C]``); NaN with fewer than two defined rates."""
    out = []
    for r in range(3):
        row = []
        for y in range(len(per_group[0])):
            vals = _defined(g[y][r] for g in per_group)
            row.append(max(vals) - min(vals) if len(vals) >= 2 else NAN)
        out.append(row)
    return out


def _n_present(cm: list[Matrix]) -> int:
    """Number of groups with at least one row."""
    return sum(1 for m in cm if sum(map(sum, m)) > 0)


def _dev_sums_or_nan(cm: list[Matrix], smoothing: float = 0.0) -> list[list[float]]:
    """:func:`_dev_sums` of the counts; all NaN with fewer than two groups present (a gap needs two groups, even
    with smoothing, which would give an absent group made-up rates)."""
    if _n_present(cm) < 2:
        return [[NAN] * len(cm[0]) for _ in range(3)] if cm else [[NAN] for _ in range(3)]
    return _dev_sums(*_rate_table(cm, smoothing))


def _eo_gap(dev: list[list[float]]) -> float:
    """ΔEO from :func:`_dev_sums`: the TPR and FPR terms of every class (binary tasks: class 1 only)."""
    classes = slice(1, None) if len(dev[0]) == 2 else slice(None)
    terms = _defined(dev[0][classes] + dev[1][classes])
    return sum(terms) if terms else NAN


def _rms(values: list[float]) -> float:
    """Root mean square of the defined values; NaN if none is."""
    d = _defined(values)
    return math.sqrt(sum(v * v for v in d) / len(d)) if d else NAN


def _max(values) -> float:
    return max(_defined(values), default=NAN)


def _min(values) -> float:
    return min(_defined(values), default=NAN)


def _accuracy(m: Matrix) -> float:
    return _ratio(sum(row[y] for y, row in enumerate(m)), sum(map(sum, m)))


def _balanced_accuracy(m: Matrix) -> float:
    """Mean recall over the classes with rows (scikit-learn's ``balanced_accuracy_score``); NaN without rows."""
    d = _defined([_ratio(row[y], sum(row)) for y, row in enumerate(m)])
    return sum(d) / len(d) if d else NAN


def _f1(m: Matrix) -> float:
    """F1 of class 1 (binary) or macro F1 over the classes present or predicted, as scikit-learn."""
    f1 = [_ratio(2 * row[y], sum(row) + sum(r[y] for r in m)) for y, row in enumerate(m)]   # 2TP / (2TP + FP + FN)
    if len(m) == 2:
        return f1[1]
    d = _defined(f1)
    return sum(d) / len(d) if d else NAN


def _counts(cm: Tensor) -> list:
    return cm.detach().cpu().tolist()


def _groups(cm: list) -> list[Matrix]:
    """The per-group matrices of ``[G, C, C]`` counts, or a single population ``[C, C]`` as one group."""
    return cm if cm and isinstance(cm[0][0], list) else [cm]


def _out(x, like: Tensor) -> Tensor:
    """A float64 tensor on ``like``'s device."""
    return torch.tensor(x, dtype=torch.float64, device=like.device)


def fairness_summary(counts: Tensor, smoothing: float = 0.0) -> dict[str, Tensor]:
    """Every statistic of :class:`~faircl.metrics.GroupFairness` from counts ``[G + 1, C, C]`` (unknown group last,
    as returned by :func:`confusion_counts`), in one pass over the counts.

    ``smoothing`` applies to the ``*_gap_rms`` entries only (fairlib's GAP; see the module docstring). Returns float64
    scalars (``group_accuracy``: ``[G]``; ``n_unknown_group``: int64) on the device of ``counts``.
    """
    cm_all = _counts(counts)
    cm, unknown = cm_all[:-1], cm_all[-1]
    per_group, _ = _rate_table(cm)
    dev = _dev_sums_or_nan(cm)
    rms_dev = _dev_sums_or_nan(cm, smoothing) if smoothing else dev
    rng = _ranges(per_group)
    acc_g = [_accuracy(m) for m in cm]
    everything = _total(cm_all)
    out = {
        "accuracy": _accuracy(everything),
        "f1": _f1(everything),
        "balanced_accuracy": _balanced_accuracy(everything),
        "eo_gap": _eo_gap(dev),
        "tpr_gap_rms": _rms(rms_dev[0]),
        "fpr_gap_rms": _rms(rms_dev[1]),
        "ppr_gap_rms": _rms(rms_dev[2]),
        "dp_gap": _max(rng[2]),
        "worst_group_accuracy": _min(acc_g),
    }
    if len(everything) == 2:
        out["equalized_odds_difference"] = _max(rng[0] + rng[1])
    values = _out([*out.values(), *acc_g], counts)            # one tensor: scalars, then the per-group accuracies
    res = dict(zip(out, values[:len(out)].unbind()))
    res["group_accuracy"] = values[len(out):]
    res["n_unknown_group"] = torch.tensor(sum(map(sum, unknown)), device=counts.device)
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
    table = [_rates(m, smoothing) for m in _groups(_counts(cm))]
    if cm.ndim == 2:
        table = table[0]
        return {name: _out([rates[r] for rates in table], cm) for r, name in enumerate(RATES)}
    return {name: _out([[rates[r] for rates in g] for g in table], cm) for r, name in enumerate(RATES)}


def eo_gap_from_confusion(cm: Tensor) -> Tensor:
    """Chi et al. (2022) ΔEO from counts ``[G, C, C]``.

    ``ΔTPR^y = Σ_a |TPR_a^y − TPR^y|``, ``ΔFPR^y = Σ_a |FPR_a^y − FPR^y|`` (one-vs-rest for class ``y``; the overall
    rate is over the rows with a known group) and ``ΔEO = Σ_y (ΔTPR^y + ΔFPR^y)``. For a binary task only the positive
    class ``y = 1`` is summed, as in the paper (class 0 would repeat the same gaps). NaN (undefined, not 0) when fewer
    than two groups have rows.
    """
    return _out(_eo_gap(_dev_sums_or_nan(_groups(_counts(cm)))), cm)


def rate_gap_rms_from_confusion(cm: Tensor, rate: str = "tpr", smoothing: float = 0.0) -> Tensor:
    """Shen et al. (2021) eq. 4 as generalised in fairlib: ``sqrt(mean_y (Σ_a |R_{a,y} − R_y|)²)``, R ∈ {TPR, FPR, PPR}.

    For two groups ``Σ_a |TPR_{a,y} − TPR_y| = |TPR_{0,y} − TPR_{1,y}|`` exactly (the overall rate is the
    size-weighted mean of the two), which is the paper's ``GAP^{TPR}_{a,y}``. Classes whose sum is undefined are left
    out of the mean. NaN (undefined, not 0) when fewer than two groups have rows.
    """
    if rate not in RATES:
        raise ValueError(f"rate must be one of {RATES}, got {rate!r}")
    return _out(_rms(_dev_sums_or_nan(_groups(_counts(cm)), smoothing)[RATES.index(rate)]), cm)


def demographic_parity_gap_from_confusion(cm: Tensor) -> Tensor:
    """``max_y (max_a P(ŷ=y|a) − min_a P(ŷ=y|a))``; for binary tasks fairlearn's ``demographic_parity_difference``."""
    return _out(_max(_ranges([_rates(m) for m in _counts(cm)])[2]), cm)


def equalized_odds_difference_from_confusion(cm: Tensor) -> Tensor:
    """``max_y max(range_a TPR_a^y, range_a FPR_a^y)``; for binary tasks fairlearn's ``equalized_odds_difference``.

    (For two classes the one-vs-rest gaps of class 0 equal those of class 1, so the max over classes is the
    positive-class value.)
    """
    rng = _ranges([_rates(m) for m in _counts(cm)])
    return _out(_max(rng[0] + rng[1]), cm)


def group_accuracy_from_confusion(cm: Tensor) -> Tensor:
    """Accuracy per group ``[G]`` (float64), NaN for a group without rows."""
    return _out([_accuracy(m) for m in _counts(cm)], cm)


def worst_group_accuracy_from_confusion(cm: Tensor) -> Tensor:
    """Lowest accuracy over the groups present; NaN if no group is present."""
    return _out(_min(_accuracy(m) for m in _counts(cm)), cm)


def accuracy_from_confusion(cm: Tensor) -> Tensor:
    """Accuracy of a ``[C, C]`` (or ``[G, C, C]``, summed) confusion matrix; NaN when empty."""
    return _out(_accuracy(_total(_groups(_counts(cm)))), cm)


def f1_from_confusion(cm: Tensor) -> Tensor:
    """F1 of a ``[C, C]`` (or ``[G, C, C]``, summed) confusion matrix: class 1 for a binary task, else the macro mean.

    Per class ``F1_y = 2TP / (2TP + FP + FN)``; as in scikit-learn (``labels=None``), a class that is neither present
    nor predicted is left out of the macro mean, and a present class that is never predicted scores 0. NaN when
    undefined (binary: no positive row and no positive prediction; or no rows at all).
    """
    return _out(_f1(_total(_groups(_counts(cm)))), cm)


# ----------------------------------------------------------------------------------------------------------------
# public functional API (same signature everywhere)
# ----------------------------------------------------------------------------------------------------------------

def eo_gap(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int) -> Tensor:
    """Equalized-odds gap ΔEO of Chi et al. (2022), §4 (see :func:`eo_gap_from_confusion`). Scalar float64.

    Examples:
        >>> import torch
        >>> preds  = torch.tensor([1, 1, 0, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 1, 0, 0, 1, 0, 1, 0])
        >>> groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
        >>> from faircl.metrics.functional import eo_gap
        >>> eo_gap(preds, target, groups, num_classes=2, num_groups=2)   # (0.25 + 0.25) + (0.25 + 0.25)
        tensor(1., dtype=torch.float64)
    """
    return eo_gap_from_confusion(group_confusion(preds, target, groups, num_classes, num_groups))


def tpr_gap_rms(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int,
                smoothing: float = 0.0) -> Tensor:
    """Shen et al. (2021) GAP (eq. 4; fairlib ``TPR_GAP``); ``smoothing=1e-5`` reproduces fairlib. Scalar float64.

    Examples:
        >>> import torch
        >>> preds  = torch.tensor([1, 1, 0, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 1, 0, 0, 1, 0, 1, 0])
        >>> groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
        >>> from faircl.metrics.functional import tpr_gap_rms
        >>> tpr_gap_rms(preds, target, groups, num_classes=2, num_groups=2)   # |1 - 0.5| for two groups
        tensor(0.5000, dtype=torch.float64)
    """
    cm = group_confusion(preds, target, groups, num_classes, num_groups)
    return rate_gap_rms_from_confusion(cm, "tpr", smoothing)


def fpr_gap_rms(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int,
                smoothing: float = 0.0) -> Tensor:
    """FPR version of :func:`tpr_gap_rms` (fairlib ``FPR_GAP``). Scalar float64.

    Examples:
        >>> import torch
        >>> preds  = torch.tensor([1, 1, 0, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 1, 0, 0, 1, 0, 1, 0])
        >>> groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
        >>> from faircl.metrics.functional import fpr_gap_rms
        >>> fpr_gap_rms(preds, target, groups, num_classes=2, num_groups=2)
        tensor(0.5000, dtype=torch.float64)
    """
    cm = group_confusion(preds, target, groups, num_classes, num_groups)
    return rate_gap_rms_from_confusion(cm, "fpr", smoothing)


def ppr_gap_rms(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int,
                smoothing: float = 0.0) -> Tensor:
    """Positive-prediction-rate version of :func:`tpr_gap_rms` (fairlib ``PPR_GAP``). Scalar float64.

    Examples:
        >>> import torch
        >>> preds  = torch.tensor([1, 1, 0, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 1, 0, 0, 1, 0, 1, 0])
        >>> groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
        >>> from faircl.metrics.functional import ppr_gap_rms
        >>> ppr_gap_rms(preds, target, groups, num_classes=2, num_groups=2)   # P(ŷ=y | a): 0.75 vs 0.25 for both classes
        tensor(0.5000, dtype=torch.float64)
    """
    cm = group_confusion(preds, target, groups, num_classes, num_groups)
    return rate_gap_rms_from_confusion(cm, "ppr", smoothing)


def demographic_parity_gap(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int,
                           num_groups: int) -> Tensor:
    """Demographic-parity difference (see :func:`demographic_parity_gap_from_confusion`). Scalar float64.

    Examples:
        >>> import torch
        >>> preds  = torch.tensor([1, 1, 0, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 1, 0, 0, 1, 0, 1, 0])
        >>> groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
        >>> from faircl.metrics.functional import demographic_parity_gap
        >>> demographic_parity_gap(preds, target, groups, num_classes=2, num_groups=2)   # P(ŷ=1): 0.75 vs 0.25
        tensor(0.5000, dtype=torch.float64)
    """
    return demographic_parity_gap_from_confusion(group_confusion(preds, target, groups, num_classes, num_groups))


def equalized_odds_difference(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int,
                              num_groups: int) -> Tensor:
    """Equalized-odds difference (see :func:`equalized_odds_difference_from_confusion`). Scalar float64.

    Examples:
        >>> import torch
        >>> preds  = torch.tensor([1, 1, 0, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 1, 0, 0, 1, 0, 1, 0])
        >>> groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
        >>> from faircl.metrics.functional import equalized_odds_difference
        >>> equalized_odds_difference(preds, target, groups, num_classes=2, num_groups=2)   # max(|1 − 0.5|, |0.5 − 0|)
        tensor(0.5000, dtype=torch.float64)


        One group alone has no gap (undefined, not 0):


        >>> equalized_odds_difference(preds[:4], target[:4], groups[:4], num_classes=2, num_groups=2)
        tensor(nan, dtype=torch.float64)
    """
    cm = group_confusion(preds, target, groups, num_classes, num_groups)
    return equalized_odds_difference_from_confusion(cm)


def group_accuracy(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int, num_groups: int) -> Tensor:
    """Accuracy per group ``[G]``; NaN for a group absent from the data.

    Examples:
        >>> import torch
        >>> preds  = torch.tensor([1, 1, 0, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 1, 0, 0, 1, 0, 1, 0])
        >>> groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
        >>> from faircl.metrics.functional import group_accuracy
        >>> group_accuracy(preds, target, groups, num_classes=2, num_groups=3)   # group 2 has no rows
        tensor([0.7500, 0.7500,    nan], dtype=torch.float64)
    """
    return group_accuracy_from_confusion(group_confusion(preds, target, groups, num_classes, num_groups))


def worst_group_accuracy(preds: Tensor, target: Tensor, groups: Tensor, num_classes: int,
                         num_groups: int) -> Tensor:
    """Lowest per-group accuracy over the groups present. Scalar float64.

    Examples:
        >>> import torch
        >>> preds  = torch.tensor([1, 1, 0, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 1, 0, 0, 1, 0, 1, 0])
        >>> groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
        >>> from faircl.metrics.functional import worst_group_accuracy
        >>> worst_group_accuracy(preds[:7], target[:7], groups[:7], num_classes=2, num_groups=2)
        tensor(0.6667, dtype=torch.float64)
    """
    return worst_group_accuracy_from_confusion(group_confusion(preds, target, groups, num_classes, num_groups))
