"""Martin & Ogbuokiri's fairness-driven NT-Xent of a two-view batch whose rows carry latent cluster ids.

Negatives are weighted by the cluster representation gap ``w(c) = max(0, 1/K − p(c)) + ε`` of their cluster
(c ≠ c_i) × their distance from the anchor (:func:`faircl.mining.fair_negative_weights`), and the nearest
same-cluster row of the batch is an extra positive besides the other view
(:func:`faircl.mining.nearest_cluster_positive`). ``negatives="weighted"`` puts the weights in the NT-Xent
denominator (the in-batch expectation of the draw); ``"sampled"`` draws one negative per anchor as in Algorithm 1
(:mod:`faircl.losses.sampled_negatives`).

It composes the fair weights of :mod:`faircl.mining` with the NT-Xent of :mod:`faircl.losses`, so it lives with the
miners (``faircl.mining.fair_sampling``): the miners build on the losses, and the losses never import the miners.
"""

from __future__ import annotations

import torch

from faircl._checks import check_choice
from faircl.losses.ntxent import nt_xent_loss
from faircl.losses.sampled_negatives import sample_negatives, sampled_pair_loss
from faircl.mining import fair_negative_weights, nearest_cluster_positive

__all__ = ["NEGATIVES", "fair_nt_xent_loss"]

#: how the fair negatives enter the loss
NEGATIVES = ("weighted", "sampled")


def fair_nt_xent_loss(z1: torch.Tensor, z2: torch.Tensor, clusters: torch.Tensor, num_clusters: int,
                      cluster_freq: torch.Tensor | None = None, temperature: float = 0.5, epsilon: float = 0.1,
                      nearest_positive: bool = True, negatives: str = "weighted",
                      gather_distributed: bool = False) -> torch.Tensor:
    """Fairness-driven NT-Xent (Martin & Ogbuokiri, Algorithm 1) of the views ``z1``, ``z2`` ``[B, d]``.

    Args:
        z1: first-view embeddings ``[B, d]`` (the weights and the nearest positive are computed on them, detached).
        z2: second-view embeddings ``[B, d]``.
        clusters: cluster id of each row ``[B]`` (``-1`` = none).
        num_clusters: K.
        cluster_freq: ``p(c)`` over the whole train split ``[K]`` (default: the batch's frequencies).
        temperature: τ.
        epsilon: ε of the cluster weights.
        nearest_positive: add the nearest same-cluster row as a positive.
        negatives: ``"weighted"`` (weighted denominator) or ``"sampled"`` (one drawn negative per anchor).
        gather_distributed: under DDP, weights and NT-Xent over the global batch (``"weighted"`` only; the nearest
            positive is searched in the local batch).

    Returns:
        the scalar loss.
    """
    check_choice("negatives", negatives, NEGATIVES)
    gather = gather_distributed and negatives == "weighted"
    weights = fair_negative_weights(z1.detach(), clusters, num_clusters, epsilon, cluster_freq=cluster_freq,
                                    gather_distributed=gather)
    extra = nearest_cluster_positive(z1.detach(), clusters) if nearest_positive else None
    if negatives == "sampled":
        return sampled_pair_loss(z1, z2, sample_negatives(weights), temperature, extra_positives=extra)
    return nt_xent_loss(z1, z2, temperature, negative_weights=weights, extra_positives=extra,
                        gather_distributed=gather)
