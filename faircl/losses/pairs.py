"""Pair and triplet structure of a labelled batch: distances, pair masks, every valid triplet.

Public building blocks shared by the ranking losses (:mod:`faircl.losses.margin`) and the miners
(:mod:`faircl.mining`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from faircl._checks import check_ids

__all__ = ["Triplets", "all_triplets", "pair_masks", "pairwise_distances"]

Triplets = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
"""``(anchors, positives, negatives)``: three long index tensors ``[T]`` into the rows of a batch."""


def pairwise_distances(z: torch.Tensor, normalize: bool = True) -> torch.Tensor:
    """Euclidean distances ``[B, B]`` of the rows of ``z`` ``[B, d]`` (after L2 normalisation if asked).

    Computed in float32 or wider with a gradient-safe square root: the squared distances are clamped at 1e-12
    before the root, so identical rows give ~1e-6 (not 0) and a finite gradient; the diagonal is exactly 0.

    Examples:
        >>> import torch
        >>> from faircl.losses import pairwise_distances
        >>> pairwise_distances(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))   # normalised rows: distance sqrt(2)
        tensor([[0.0000, 1.4142],
                [1.4142, 0.0000]])
    """
    zf = z.to(torch.promote_types(z.dtype, torch.float32))
    if normalize:
        zf = F.normalize(zf, dim=1)
    sq = (zf * zf).sum(dim=1)
    d2 = (sq[:, None] + sq[None, :] - 2.0 * zf @ zf.T).clamp(min=1e-12)
    d = d2.sqrt()
    return d * (1 - torch.eye(d.shape[0], dtype=d.dtype, device=d.device))


def pair_masks(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive (same known label, not self) and negative (both known, different labels) masks ``[B, B]``.

    ``labels`` ``[B]``: negative entries are unknown and belong to no pair.

    Examples:
        >>> import torch
        >>> from faircl.losses import pair_masks
        >>> positives, negatives = pair_masks(torch.tensor([0, 0, 1]))
        >>> positives
        tensor([[False,  True, False],
                [ True, False, False],
                [False, False, False]])
        >>> negatives
        tensor([[False, False,  True],
                [False, False,  True],
                [ True,  True, False]])
    """
    known = labels >= 0
    both = known[:, None] & known[None, :]
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(labels.shape[0], dtype=torch.bool, device=labels.device)
    return both & same & ~eye, both & ~same


def all_triplets(labels: torch.Tensor) -> Triplets:
    """Every valid triplet ``(a, p, n)``: ``y_p = y_a``, ``p ≠ a``, ``y_n ≠ y_a`` (``-1`` labels excluded).

    Builds a ``[B, B, B]`` mask: meant for batches of a few hundred rows.

    Args:
        labels: integer labels ``[B]`` (``-1`` = unknown).

    Examples:
        >>> import torch
        >>> from faircl.losses import all_triplets
        >>> anchors, positives, negatives = all_triplets(torch.tensor([0, 0, 1]))
        >>> anchors.tolist(), positives.tolist(), negatives.tolist()
        ([0, 1], [1, 0], [2, 2])
    """
    labels = check_ids("labels", labels, allow_unknown=True)
    pos, neg = pair_masks(labels)
    a, p, n = (pos[:, :, None] & neg[:, None, :]).nonzero(as_tuple=True)
    return a, p, n
