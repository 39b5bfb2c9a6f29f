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
a gap is NaN when none of its terms is defined, and every gap is NaN when fewer than two groups have rows (a gap
compares groups: one group alone is undefined, never a "perfectly fair" 0).

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
on the (tiny) count tensors runs in plain Python floats. ``benchmarks/performance/metrics.py`` measures it all
against a bare ``torch.bincount``.
"""

from faircl.metrics.functional.counting import (
    CHUNK_ROWS,
    _count_blocks as _count_blocks,  # not public: tests/metrics/test_functional.py checks it here
    as_class_ids,
    check_inputs,
    check_labels,
    confusion_counts,
    count_unknown_groups,
    group_confusion,
)
from faircl.metrics.functional.rates import (
    RATES,
    accuracy_from_confusion,
    demographic_parity_gap,
    demographic_parity_gap_from_confusion,
    eo_gap,
    eo_gap_from_confusion,
    equalized_odds_difference,
    equalized_odds_difference_from_confusion,
    f1_from_confusion,
    fairness_summary,
    fpr_gap_rms,
    group_accuracy,
    group_accuracy_from_confusion,
    group_rates,
    ppr_gap_rms,
    rate_gap_rms_from_confusion,
    tpr_gap_rms,
    worst_group_accuracy,
    worst_group_accuracy_from_confusion,
)

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
