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
pass over a block builds the code ``ŷ + C·y + C²·g`` (reading the ids from memory), the range checks (``aminmax``)
then re-read the block from cache, and one ``scatter_add_`` counts it. On CPU that scatter checks its indices, which
validates the group ids for free; a block with an unknown group (``g = −1``) is shifted by ``C²`` and counted in a
scratch tensor folded in at the end. Two-class scores take one comparison instead of an argmax reduction. The maths
on the (tiny) count tensors runs in plain Python floats. ``benchmarks/metrics.py`` measures it all against a bare
``torch.bincount``.
"""

from __future__ import annotations

import math

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

    An error leaves ``out`` as it was.
    """
    _check_sizes(num_classes, num_groups)
    scores = _check_scores_shape(preds, num_classes)
    _check_id_tensor(target, "target")
    _check_id_tensor(groups, "groups")
    _check_rows(preds, target, groups)
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
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
    per_group, overall = _rate_table(cm)
    dev = _dev_sums(per_group, overall)
    rms_dev = _dev_sums(*_rate_table(cm, smoothing)) if smoothing else dev
    rng = _ranges(per_group)
    acc_g = [_accuracy(m) for m in cm]
    everything = _total(cm_all)
    out = {
        "accuracy": _accuracy(everything),
        "f1": _f1(everything),
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
    class ``y = 1`` is summed, as in the paper (class 0 would repeat the same gaps).
    """
    return _out(_eo_gap(_dev_sums(*_rate_table(_counts(cm)))), cm)


def rate_gap_rms_from_confusion(cm: Tensor, rate: str = "tpr", smoothing: float = 0.0) -> Tensor:
    """Shen et al. (2021) eq. 4 as generalised in fairlib: ``sqrt(mean_y (Σ_a |R_{a,y} − R_y|)²)``, R ∈ {TPR, FPR, PPR}.

    For two groups ``Σ_a |TPR_{a,y} − TPR_y| = |TPR_{0,y} − TPR_{1,y}|`` exactly (the overall rate is the
    size-weighted mean of the two), which is the paper's ``GAP^{TPR}_{a,y}``. Classes whose sum is undefined are left
    out of the mean.
    """
    if rate not in RATES:
        raise ValueError(f"rate must be one of {RATES}, got {rate!r}")
    return _out(_rms(_dev_sums(*_rate_table(_counts(cm), smoothing))[RATES.index(rate)]), cm)


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
