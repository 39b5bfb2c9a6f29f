"""Contrastive, metric-learning and debiasing losses (pure torch, no Lightning).

Similarity logits and log-sum-exp are computed in float32 (float64 for float64 input) even under autocast.
A loss with nothing defined (no anchor with a positive, no triplet) returns 0 connected to the graph.
"""

from .adversarial import Decorrelation, GradientReversal, GradientReversalLayer, diversity_loss, grad_reverse
from .conditional import CS_REDUCTIONS, chi_contrastive_terms, reduce_cs_terms
from .ccd import ccd_bandwidth, ccd_bias_loss, ccd_kernel, ccd_rep_loss
from .margin import MarginLoss, contrastive_pair_loss, multi_similarity_loss, triplet_margin_loss
from .ntxent import nt_xent_loss
from .pairs import Triplets, all_triplets, pair_masks, pairwise_distances
from .supcon import cs_infonce_loss, fcl_loss, supcon_loss

__all__ = [
    "CS_REDUCTIONS",
    "Decorrelation",
    "GradientReversal",
    "GradientReversalLayer",
    "MarginLoss",
    "Triplets",
    "all_triplets",
    "ccd_bandwidth",
    "ccd_bias_loss",
    "ccd_kernel",
    "ccd_rep_loss",
    "chi_contrastive_terms",
    "contrastive_pair_loss",
    "cs_infonce_loss",
    "diversity_loss",
    "fcl_loss",
    "grad_reverse",
    "multi_similarity_loss",
    "nt_xent_loss",
    "pair_masks",
    "pairwise_distances",
    "reduce_cs_terms",
    "supcon_loss",
    "triplet_margin_loss",
]
