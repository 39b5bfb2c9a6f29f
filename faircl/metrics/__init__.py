"""Fairness metrics: stateless maths in :mod:`faircl.metrics.functional` and torchmetrics classes.

Prediction fairness: :class:`GroupFairness`; attribute leakage: :class:`LinearLeakage`; representation fairness:
:class:`GroupRecallAtK`, :class:`GroupNMI`, :class:`GroupUniformityKL`, :class:`ClusterBalance`, :class:`CCEDGap`;
gap reducers in :mod:`faircl.metrics.gaps`; run-level summaries in :mod:`faircl.metrics.tradeoff`.
"""

from faircl.metrics import functional, gaps, tradeoff
from faircl.metrics.embedding import CCEDGap, ClusterBalance, GroupNMI, GroupRecallAtK, GroupUniformityKL
from faircl.metrics.group_fairness import GroupFairness
from faircl.metrics.leakage import LinearLeakage, linear_leakage

__all__ = [
    "CCEDGap",
    "ClusterBalance",
    "GroupFairness",
    "GroupNMI",
    "GroupRecallAtK",
    "GroupUniformityKL",
    "LinearLeakage",
    "functional",
    "gaps",
    "linear_leakage",
    "tradeoff",
]
