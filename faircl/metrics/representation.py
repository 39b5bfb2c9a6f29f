"""The finDML representation report (Dullerud et al., ICLR 2022, Definitions 1–3): per-group Recall@k, NMI and U_KL.

One function, :func:`representation_report`, used at test time by the DML / PARADE methods and by the finDML
benchmark command (:mod:`faircl.eval.findml`). It runs the metric classes of :mod:`faircl.metrics.embedding` on the
whole set of embeddings and flattens their results with every gap of :mod:`faircl.metrics.gaps`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from faircl._checks import check_positive
from faircl.metrics import gaps as G
from faircl.metrics.embedding import GroupNMI, GroupRecallAtK, GroupUniformityKL
from faircl.utils import group_names_or_default, per_group_items

__all__ = ["representation_report"]


def _tensor(x: Any, dtype: torch.dtype) -> Tensor:
    if isinstance(x, Tensor):
        return x.detach().cpu().to(dtype)
    return torch.as_tensor(np.asarray(x), dtype=dtype)


def representation_report(
    embeddings: Any,
    labels: Any,
    groups: Any,
    *,
    num_classes: int,
    num_groups: int,
    group_names: Sequence[str] | None = None,
    ks: Sequence[int] = (1,),
    minority_groups: Sequence[int] | None = None,
    seed: int = 0,
    n_init: int = 10,
) -> dict[str, float]:
    """Overall and per-group Recall@k, NMI and U_KL of embeddings, with their gaps, as one flat dict.

    * ``recall@k``: queries from each group, neighbours over the whole set, self excluded (Definition 1);
      Recall@1 is always reported, besides every ``k`` in ``ks``.
    * ``nmi``: a seeded K-means over the whole set (K = ``num_classes``), NMI restricted to each group.
    * ``ukl``: ``KL(uniform ‖ normalised singular values)`` of each group's embeddings (Definition 3; lower is better).

    Each score ``s`` gives ``s`` (all rows), ``s/<group name>`` and the gaps ``s_gap_majority_minority``,
    ``s_gap_worst_vs_rest``, ``s_gap_top_vs_bottom_half`` and, with ``minority_groups``, ``s_gap_minority``
    (:mod:`faircl.metrics.gaps`; positive = the smaller / worse / minoritised groups are behind, also for U_KL).

    Args:
        embeddings: ``[N, d]`` tensor or array (computed in float32).
        labels: classes ``[N]``.
        groups: attribute ids ``[N]`` (``-1`` = unknown: such rows are neighbours, never a group).
        num_classes / num_groups: label ranges.
        group_names: display names of the groups (default, or when their number is wrong: ``group<g>``).
        ks: the ``k`` of Recall@k.
        minority_groups: the minoritised group ids (adds ``*_gap_minority``).
        seed / n_init: K-means seed and restarts of the NMI clustering.

    Returns:
        ``{name: float}``; a group absent from ``groups`` has NaN values, a gap that cannot be formed is NaN.
    """
    for k in ks:
        check_positive("ks", int(k), minimum=1)
    names = group_names_or_default(group_names, num_groups)
    z = _tensor(embeddings, torch.float32)
    y = _tensor(labels, torch.long).reshape(-1)
    a = _tensor(groups, torch.long).reshape(-1)
    # name -> (metric, update arguments, overall key, per-group key, higher is better)
    specs: dict[str, tuple[Any, tuple, str, str, bool]] = {
        f"recall@{k}": (GroupRecallAtK(k, num_groups), (z, y, a), "recall", "group_recall", True)
        for k in sorted({1, *(int(k) for k in ks)})}
    specs["nmi"] = (GroupNMI(num_classes, num_groups, seed=seed, n_init=n_init), (z, y, a), "nmi", "group_nmi", True)
    specs["ukl"] = (GroupUniformityKL(num_groups), (z, a), "uniformity_kl", "group_uniformity_kl", False)
    report: dict[str, float] = {}
    for name, (metric, args, overall, per_group, higher) in specs.items():
        metric.update(*args)
        result = metric.compute()
        report[name] = float(result[overall])
        report.update(per_group_items(name, result[per_group], names))
        gaps = G.all_gaps(result[per_group], result["group_size"], higher_is_better=higher, prefix=f"{name}_gap",
                          minority=minority_groups)
        report.update({key: float(v) for key, v in gaps.items()})
    return report
