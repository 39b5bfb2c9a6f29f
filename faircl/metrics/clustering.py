"""Deterministic K-means (pure torch, float64): one implementation for training and for metrics.

Used by the cluster phase of fairness-driven sampling (Martin & Ogbuokiri, Algorithm 1) and by the finDML NMI and
cluster-balance metrics. All randomness comes from ``torch.Generator().manual_seed(seed)`` and the arithmetic is
float64 on CPU, so the same rows give the same partition on every process and every run; with ``canonical=True``
the rows are first put in a canonical order, so the partition does not depend on the order of the rows either.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from faircl._checks import check_embeddings, check_finite, check_positive
from faircl.metrics._order import canonical_order

__all__ = ["kmeans"]


def _dist2(x: Tensor, sq: Tensor, c: Tensor) -> Tensor:
    return (sq[:, None] - 2.0 * x @ c.T + (c * c).sum(1)[None, :]).clamp(min=0.0)


def _kmeans_once(x: Tensor, k: int, g: torch.Generator, max_iter: int, tol: float) -> tuple[Tensor, Tensor, float]:
    """k-means++ seeding then Lloyd iterations; returns ``(labels, centroids, inertia)``."""
    n = x.shape[0]
    sq = (x * x).sum(1)
    first = int(torch.randint(n, (1,), generator=g))
    centroids = x[first:first + 1].clone()
    closest = _dist2(x, sq, centroids)[:, 0]
    for _ in range(1, k):
        total = float(closest.sum())
        if total > 0:
            nxt = int(torch.multinomial(closest / total, 1, generator=g))
        else:  # every point coincides with a chosen centroid: draw uniformly
            nxt = int(torch.randint(n, (1,), generator=g))
        centroids = torch.cat([centroids, x[nxt:nxt + 1]])
        closest = torch.minimum(closest, _dist2(x, sq, x[nxt:nxt + 1])[:, 0])
    for _ in range(max_iter):
        d = _dist2(x, sq, centroids)
        labels = d.argmin(1)
        counts = torch.bincount(labels, minlength=k)
        new = torch.zeros_like(centroids).index_add_(0, labels, x) / counts.clamp(min=1)[:, None].to(x.dtype)
        for c in (counts == 0).nonzero().flatten().tolist():
            # an emptied cluster is re-seeded with the point farthest from its centroid
            far = int(d.gather(1, labels[:, None]).squeeze(1).argmax())
            new[c] = x[far]
            labels[far] = c
        shift = float(((new - centroids) ** 2).sum())
        centroids = new
        if shift <= tol:
            break
    d = _dist2(x, sq, centroids)
    labels = d.argmin(1)
    return labels, centroids, float(d.gather(1, labels[:, None]).sum())


def kmeans(x: Tensor, num_clusters: int, *, seed: int = 0, n_init: int = 1, max_iter: int = 100,
           tol: float = 1e-10, canonical: bool = False) -> tuple[Tensor, Tensor]:
    """Deterministic K-means: k-means++ seeding from a seeded generator, then Lloyd iterations, in float64 on CPU.

    Args:
        x: points ``[N, D]`` (any float dtype, any device).
        num_clusters: ``K`` (``1 <= K <= N``).
        seed: seed of the k-means++ draws.
        n_init: restarts; the partition with the lowest inertia wins (ties: the first).
        max_iter: maximum Lloyd iterations per restart.
        tol: stop when the centroids move less than this (squared Frobenius norm).
        canonical: cluster the rows in a canonical order (:func:`faircl.metrics._order.canonical_order`), so the
            result does not depend on the input row order (labels are returned in the input order).

    Returns:
        ``(labels [N] int64 on CPU, centroids [K, D] float64)``.

    Raises:
        ValueError: ``K`` outside ``1..N``, a non-finite point, or no rows.

    Examples:
        >>> import torch
        >>> from faircl.metrics import kmeans
        >>> x = torch.tensor([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]])
        >>> labels, centroids = kmeans(x, num_clusters=2, seed=0)
        >>> labels
        tensor([0, 0, 1, 1])
        >>> centroids
        tensor([[0.0500, 0.0000],
                [5.0500, 5.0000]], dtype=torch.float64)
    """
    check_embeddings("x", x)
    n = x.shape[0]
    if not 1 <= num_clusters <= n:
        raise ValueError(f"K-means with num_clusters={num_clusters} needs at least as many rows, got {n} "
                         f"(1 <= k <= N)")
    check_positive("n_init", n_init, minimum=1)
    x = x.detach().to("cpu", torch.float64)
    check_finite("x", x)
    order = None
    if canonical:
        order = torch.from_numpy(canonical_order(x.numpy()).astype(np.int64))
        x = x[order]
    g = torch.Generator().manual_seed(int(seed))
    best: tuple[Tensor, Tensor, float] | None = None
    for _ in range(int(n_init)):
        run = _kmeans_once(x, int(num_clusters), g, max_iter, tol)
        if best is None or run[2] < best[2]:
            best = run
    labels, centroids, _ = best
    if order is not None:
        labels = torch.empty_like(labels).index_copy_(0, order, labels)
    return labels, centroids
