"""Prediction-fairness metric over per-(group, class) confusion counts."""

from __future__ import annotations

import torch
from torch import Tensor
from torchmetrics import Metric

from faircl.metrics import functional as F

__all__ = ["GroupFairness"]


class GroupFairness(Metric):
    """Accuracy, F1 and group-fairness gaps of a classifier, exact under DDP and mixed precision.

    The only state is an int64 count tensor ``confmat`` of shape ``[num_groups + 1, C, C]`` (slot ``num_groups``
    holds the rows with an unknown group, ``-1``), summed across processes. Group slots are fixed, so a group missing
    from a batch or from one process is never relabelled.

    ``compute()`` returns a dict of float64 tensors:

    * ``accuracy``, ``f1`` (binary: F1 of class 1; else macro F1) and ``balanced_accuracy`` (mean recall over the
      classes present) over all rows, unknown groups included;
    * ``eo_gap``: Chi et al. (2022) ΔEO (binary: positive class only);
    * ``tpr_gap_rms``, ``fpr_gap_rms``, ``ppr_gap_rms``: Shen et al. (2021) GAP (eq. 4) and its FPR / PPR versions;
    * ``dp_gap``: demographic-parity difference; ``equalized_odds_difference`` (binary tasks only): both equal to
      fairlearn's functions of the same names;
    * ``worst_group_accuracy`` and ``group_accuracy`` ``[num_groups]`` (NaN for a group without rows);
    * ``n_unknown_group``: number of rows with group ``-1`` (left out of every group term).

    Undefined rates are NaN and left out of the gaps (see :mod:`faircl.metrics.functional`).

    Args:
        num_classes: number of task classes C (>= 2).
        num_groups: number of protected groups G (>= 1).
        smoothing: fairlib's additive count smoothing for the ``*_gap_rms`` entries (0 = exact; 1e-5 = fairlib).
        validate_args: check id ranges and NaN scores in ``update`` (default; shapes and dtypes are always checked).
            ``False`` skips the ``preds`` / ``target`` range checks and the NaN check for trusted inputs;
            out-of-range ``preds`` / ``target`` ids then give wrong counts or an error (``groups`` is always checked).
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Cost: ``update`` reads the three id tensors once, in cache-sized blocks (see
    :func:`faircl.metrics.functional.confusion_counts`); ``compute`` works on the ``[G + 1, C, C]`` counts only
    (:func:`faircl.metrics.functional.fairness_summary`). ``benchmarks/performance/metrics.py`` measures both against
    a bare ``torch.bincount`` of precomputed codes.

    Examples:
        Group 0 has TPR 1 and FPR 0.5, group 1 TPR 0.5 and FPR 0; both groups have accuracy 0.75:


        >>> import torch
        >>> preds  = torch.tensor([1, 1, 0, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 1, 0, 0, 1, 0, 1, 0])
        >>> groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
        >>> from faircl.metrics import GroupFairness
        >>> metric = GroupFairness(num_classes=2, num_groups=2)
        >>> metric.update(preds[:4], target[:4], groups[:4])
        >>> metric.update(preds[4:], target[4:], groups[4:])
        >>> out = metric.compute()
        >>> {k: round(out[k].item(), 4) for k in ("accuracy", "eo_gap", "tpr_gap_rms", "dp_gap", "worst_group_accuracy")}
        {'accuracy': 0.75, 'eo_gap': 1.0, 'tpr_gap_rms': 0.5, 'dp_gap': 0.5, 'worst_group_accuracy': 0.75}


        A group without rows leaves its accuracy undefined (NaN), never 0:


        >>> metric = GroupFairness(num_classes=2, num_groups=3)
        >>> metric.update(preds, target, groups)
        >>> metric.compute()["group_accuracy"]
        tensor([0.7500, 0.7500,    nan], dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False

    confmat: Tensor

    def __init__(self, num_classes: int, num_groups: int, smoothing: float = 0.0, validate_args: bool = True,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        if num_classes < 2:
            raise ValueError(f"num_classes must be >= 2, got {num_classes}")
        if num_groups < 1:
            raise ValueError(f"num_groups must be >= 1, got {num_groups}")
        if smoothing < 0:
            raise ValueError(f"smoothing must be >= 0, got {smoothing}")
        self.num_classes = num_classes
        self.num_groups = num_groups
        self.smoothing = smoothing
        self.validate_args = validate_args
        self.add_state("confmat", default=torch.zeros(num_groups + 1, num_classes, num_classes, dtype=torch.long),
                       dist_reduce_fx="sum")

    def update(self, preds: Tensor, target: Tensor, groups: Tensor) -> None:
        """Accumulate a batch.

        Args:
            preds: class ids ``[N]`` or scores ``[N, C]`` (any float dtype; argmaxed in float32).
            target: true class ids ``[N]``.
            groups: group ids ``[N]``; ``-1`` = unknown.
        """
        F.confusion_counts(preds, target, groups, self.num_classes, self.num_groups, out=self.confmat,
                           check_values=self.validate_args)

    def compute(self) -> dict[str, Tensor]:
        """The metrics of all rows seen (see the class docstring)."""
        return F.fairness_summary(self.confmat, self.smoothing)
