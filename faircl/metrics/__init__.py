"""Fairness metrics: stateless maths in :mod:`faircl.metrics.functional` and torchmetrics classes.

Prediction fairness: :class:`GroupFairness`; attribute leakage: :class:`LinearLeakage`; representation fairness:
:class:`GroupRecallAtK`, :class:`GroupNMI`, :class:`GroupUniformityKL`, :class:`ClusterBalance`, :class:`CCEDGap`
and the finDML report :func:`representation_report`; linear probes in :mod:`faircl.metrics.probes`; K-means in
:mod:`faircl.metrics.clustering`; gap reducers in :mod:`faircl.metrics.gaps`; run-level summaries in
:mod:`faircl.metrics.tradeoff`.
"""

from faircl.metrics import functional, gaps, probes, tradeoff
from faircl.metrics.clustering import kmeans
from faircl.metrics.embedding import CCEDGap, ClusterBalance, GroupNMI, GroupRecallAtK, GroupUniformityKL
from faircl.metrics.group_fairness import GroupFairness
from faircl.metrics.leakage import LinearLeakage, linear_leakage
from faircl.metrics.probes import fit_probe, linear_probe
from faircl.metrics.representation import representation_report

__all__ = [
    "CCEDGap",
    "ClusterBalance",
    "GroupFairness",
    "GroupNMI",
    "GroupRecallAtK",
    "GroupUniformityKL",
    "LinearLeakage",
    "fit_probe",
    "functional",
    "gaps",
    "kmeans",
    "linear_leakage",
    "linear_probe",
    "probes",
    "representation_report",
    "tradeoff",
]
