"""Triplet miners and fairness-driven negative weights (pure torch, no autograd through the mining).

Every miner takes embeddings ``z`` ``[B, d]`` and integer labels ``[B]`` (class or sensitive attribute; ``-1``
= unknown, such rows are never used) and returns a tuple of three long index tensors
``(anchors, positives, negatives)`` of equal length ``T``, ready for :func:`faircl.losses.triplet_margin_loss`
or :class:`faircl.losses.MarginLoss`. No triplet at all gives three empty tensors.

The objectives that compose a miner with a loss live beside the miners, since they import both:
:mod:`faircl.mining.mined` (DML's loss × miner) and :mod:`faircl.mining.fair_sampling` (the fairness-driven
NT-Xent). :mod:`faircl.losses` never imports :mod:`faircl.mining`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from faircl._checks import check_choice, check_embeddings, check_ids, check_positive
from faircl.losses import Triplets, all_triplets, pair_masks, pairwise_distances
from faircl.losses.distributed import gather_ids, gather_rows

__all__ = [
    "MINERS",
    "Triplets",
    "all_triplets",
    "distance_weighted_triplets",
    "fair_negative_weights",
    "mine_triplets",
    "nearest_cluster_positive",
    "pairwise_distances",
    "semihard_triplets",
]

MINERS = ("distance", "semihard", "all")
"""Names accepted by :func:`mine_triplets`."""


def _check(z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    check_embeddings("z", z, shape="[B, d]")
    return check_ids("labels", labels, size=z.shape[0], allow_unknown=True)


def _empty(device: torch.device) -> Triplets:
    e = torch.empty(0, dtype=torch.long, device=device)
    return e, e.clone(), e.clone()


def _anchor_positive_pairs(pos: torch.Tensor, positives: str, generator: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
    if positives == "all":
        a, p = pos.nonzero(as_tuple=True)
        return a, p
    check_choice("positives", positives, ("all", "one"))
    has = pos.any(dim=1)
    scores = torch.rand(pos.shape, generator=generator, device=pos.device)
    choice = scores.masked_fill(~pos, -1.0).argmax(dim=1)
    a = has.nonzero(as_tuple=True)[0]
    return a, choice[a]


def distance_weighted_log_density(d: torch.Tensor, dim: int) -> torch.Tensor:
    """``log q⁻¹(d) = (2 − n) log d − ((n − 3)/2) log(1 − d²/4)`` for unit vectors in ``R^n`` (Wu et al. 2018)."""
    d = d.clamp(max=2.0 - 1e-6)
    return (2.0 - dim) * torch.log(d) - ((dim - 3.0) / 2.0) * torch.log(1.0 - 0.25 * d * d)


@torch.no_grad()
def distance_weighted_triplets(
    z: torch.Tensor,
    labels: torch.Tensor,
    cutoff: float = 0.5,
    nonzero_loss_cutoff: float = 1.4,
    positives: str = "all",
    normalize: bool = True,
    generator: torch.Generator | None = None,
) -> Triplets:
    """Distance-weighted sampling (Wu et al. 2018; Dullerud et al. 2022, Definition 6).

    For each anchor-positive pair, one negative ``n`` (different known label) is drawn with probability

        ``P(n | a) ∝ q⁻¹(max(d_an, cutoff)) · 1[d_an < nonzero_loss_cutoff]``,

    ``q(d) ∝ d^{n−2} (1 − d²/4)^{(n−3)/2}`` the density of pairwise distances of uniform points on the unit
    sphere of ``R^n`` (``n = d`` the embedding dimension). An anchor whose negatives are all beyond
    ``nonzero_loss_cutoff`` draws uniformly among its negatives (as Wu et al.'s code does).

    Args:
        z: embeddings ``[B, d]`` (L2-normalised inside when ``normalize``; the density assumes unit vectors).
        labels: ``[B]`` integer labels; ``-1`` rows are ignored.
        cutoff: lower clamp of the distance (0.5 in the paper) to avoid the density's pole at 0.
        nonzero_loss_cutoff: negatives at distance ``>=`` this get weight 0 (1.4).
        positives: ``"all"`` — one triplet per anchor-positive pair (Wu et al.'s code; with SPC-2 batches one per
            anchor); ``"one"`` — one random positive per anchor (Dullerud et al.'s description).
        normalize: L2-normalise ``z`` first.
        generator: optional ``torch.Generator`` for reproducible sampling.

    Returns:
        ``(anchors, positives, negatives)``, long ``[T]`` each.
    """
    labels = _check(z, labels)
    pos, neg = pair_masks(labels)
    a, p = _anchor_positive_pairs(pos, positives, generator)
    if a.numel() == 0:
        return _empty(z.device)
    d = pairwise_distances(z.detach(), normalize)
    log_w = distance_weighted_log_density(d.clamp(min=cutoff), z.shape[1])
    log_w = log_w.masked_fill(~neg | (d >= nonzero_loss_cutoff), float("-inf"))
    row_max = log_w.max(dim=1, keepdim=True).values
    w = torch.exp(log_w - torch.where(row_max.isfinite(), row_max, 0.0))
    uniform = neg.to(w.dtype)
    w = torch.where(w.sum(dim=1, keepdim=True) > 0, w, uniform)
    has_neg = neg.any(dim=1)
    keep = has_neg[a]
    a, p = a[keep], p[keep]
    if a.numel() == 0:
        return _empty(z.device)
    n = torch.multinomial(w[a], 1, generator=generator).squeeze(1)
    return a, p, n


@torch.no_grad()
def semihard_triplets(
    z: torch.Tensor,
    labels: torch.Tensor,
    margin: float | None = None,
    normalize: bool = True,
) -> Triplets:
    """Semi-hard mining (Schroff et al. 2015): for each anchor-positive pair, the closest negative farther than the positive.

    For the pair ``(a, p)`` the negative is ``argmin_n {d_an : y_n ≠ y_a, d_an > d_ap}``; with ``margin`` also
    ``d_an < d_ap + margin`` (FaceNet's band). Pairs without such a negative give no triplet.

    Args:
        z: embeddings ``[B, d]``.
        labels: ``[B]`` integer labels; ``-1`` rows are ignored.
        margin: optional upper band of the semi-hard region.
        normalize: L2-normalise ``z`` first.

    Returns:
        ``(anchors, positives, negatives)``, long ``[T]`` each.
    """
    labels = _check(z, labels)
    pos, neg = pair_masks(labels)
    a, p = pos.nonzero(as_tuple=True)
    if a.numel() == 0:
        return _empty(z.device)
    d = pairwise_distances(z.detach(), normalize)
    d_ap = d[a, p][:, None]
    d_an = d[a]
    cand = neg[a] & (d_an > d_ap)
    if margin is not None:
        cand &= d_an < d_ap + margin
    n = d_an.masked_fill(~cand, float("inf")).argmin(dim=1)
    keep = cand.any(dim=1)
    return a[keep], p[keep], n[keep]


@torch.no_grad()
def fair_negative_weights(
    z: torch.Tensor,
    clusters: torch.Tensor,
    num_clusters: int | None = None,
    epsilon: float = 0.1,
    cluster_freq: torch.Tensor | None = None,
    normalize: bool = True,
    gather_distributed: bool = False,
) -> torch.Tensor:
    """Fairness-driven negative sampling probabilities (Martin & Ogbuokiri, Algorithm 1, lines 8–13).

    Cluster weights ``w(c) = max(0, q(c) − p(c)) + ε`` with ``q(c) = 1/K`` and ``p(c) = N_c/N`` are normalised
    over the clusters ``c ≠ c_i`` present in the batch; inside the chosen cluster a negative is drawn
    proportionally to its Euclidean distance from the anchor (farther = more likely):

        ``W_ik = w̃_i(c_k) · d_ik / Σ_{k′: c_k′ = c_k} d_ik′``   for ``c_k ≠ c_i``, else 0,

    so each row is a probability distribution over the anchor's negatives (all zeros when every row of the batch
    shares the anchor's cluster). Feed it to :func:`faircl.losses.nt_xent_loss` as ``negative_weights``.

    Args:
        z: embeddings ``[B, d]``.
        clusters: cluster ids ``[B]`` in ``0..K-1``.
        num_clusters: ``K`` (default ``max(clusters) + 1``).
        epsilon: baseline weight ε (0.1).
        cluster_freq: ``p(c)`` ``[K]`` over the whole training set (the paper's definition); default: the
            batch's own cluster frequencies.
        normalize: L2-normalise ``z`` before the distances.
        gather_distributed: under an initialised process group, weigh this process's anchors against the rows
            of every process (``z`` and ``clusters`` gathered, batch frequencies and the default ``K`` global):
            the rows of the weights of the concatenated batch that belong to this process, ``[B_local, B_global]``,
            ready for ``nt_xent_loss(..., gather_distributed=True)``. Without a process group it changes nothing.

    Returns:
        ``[B, B]`` float weights (``[B_local, B_global]`` when gathering), rows summing to 1 (or 0).
    """
    check_embeddings("z", z, shape="[B, d]")
    clusters = check_ids("clusters", clusters, size=z.shape[0])
    rows = gather_rows(z.detach(), gather_distributed)
    clusters_all = gather_ids(clusters, rows)
    k = int(num_clusters) if num_clusters is not None else int(clusters_all.max()) + 1
    check_ids("clusters", clusters, k, kind="num_clusters")
    check_positive("epsilon", epsilon, strict=False)
    if rows.same:
        d = pairwise_distances(z.detach(), normalize)
    else:
        d = _cross_distances(rows.zq, rows.zk, rows.index, normalize)
    own = clusters
    clusters = clusters_all
    count = torch.bincount(clusters, minlength=k).to(d.dtype)
    if cluster_freq is None:
        p = count / count.sum()
    else:
        p = torch.as_tensor(cluster_freq, dtype=d.dtype, device=d.device)
        if p.shape != (k,):
            raise ValueError(f"`cluster_freq` must have shape [{k}] (one frequency per cluster), got {tuple(p.shape)}")
    w = (1.0 / k - p).clamp(min=0) + epsilon
    onehot = F.one_hot(clusters, k).to(d.dtype)  # [B, K]
    # [B_local, K]: clusters present in the batch, other than c_i
    allowed = (count > 0)[None, :] & (F.one_hot(own, k) == 0)
    wc = torch.where(allowed, w[None, :], 0.0)
    wc = wc / wc.sum(dim=1, keepdim=True).clamp(min=torch.finfo(d.dtype).tiny)
    dist_sum = d @ onehot  # [B_local, K]
    # Within a cluster: proportional to distance, uniform if all distances are 0 (duplicated embeddings).
    within = torch.where(dist_sum[:, clusters] > 0, d / dist_sum[:, clusters].clamp(min=torch.finfo(d.dtype).tiny), 1.0 / count[clusters][None, :])
    return wc[:, clusters] * within * (own[:, None] != clusters[None, :])


def _cross_distances(zq: torch.Tensor, zk: torch.Tensor, self_index: torch.Tensor, normalize: bool) -> torch.Tensor:
    """The rows ``self_index`` of :func:`pairwise_distances` of ``zk``, computed from ``zq = zk[self_index]`` only."""
    dtype = torch.promote_types(zq.dtype, torch.float32)
    zq, zk = zq.to(dtype), zk.to(dtype)
    if normalize:
        zq, zk = F.normalize(zq, dim=1), F.normalize(zk, dim=1)
    d2 = ((zq * zq).sum(dim=1)[:, None] + (zk * zk).sum(dim=1)[None, :] - 2.0 * zq @ zk.T).clamp(min=1e-12)
    d = d2.sqrt()
    d[torch.arange(zq.shape[0], device=d.device), self_index] = 0.0
    return d


@torch.no_grad()
def nearest_cluster_positive(z: torch.Tensor, clusters: torch.Tensor, normalize: bool = True) -> torch.Tensor:
    """Martin & Ogbuokiri's positive: for each row, the nearest other row of the same cluster (Algorithm 1, line 6).

    Args:
        z: embeddings ``[B, d]``.
        clusters: cluster ids ``[B]`` (``-1`` rows get no positive and are no one's positive).
        normalize: L2-normalise ``z`` before the distances.

    Returns:
        long ``[B]``: the index of the positive, ``-1`` when the row is alone in its cluster. Suitable for
        ``nt_xent_loss(..., extra_positives=...)``.
    """
    check_embeddings("z", z, shape="[B, d]")
    clusters = check_ids("clusters", clusters, size=z.shape[0], allow_unknown=True)
    pos, _ = pair_masks(clusters)
    d = pairwise_distances(z.detach(), normalize).masked_fill(~pos, float("inf"))
    nearest = d.argmin(dim=1)
    return torch.where(pos.any(dim=1), nearest, -1)


def mine_triplets(z: torch.Tensor, labels: torch.Tensor, miner: str) -> Triplets:
    """Triplets ``(anchors, positives, negatives)`` of one batch with the named miner.

    Args:
        z: embeddings ``[B, d]``.
        labels: class or attribute ids ``[B]`` (``-1`` rows are never used).
        miner: ``distance`` (:func:`distance_weighted_triplets`), ``semihard`` (:func:`semihard_triplets`) or
            ``all`` (:func:`all_triplets`).

    Returns:
        ``(anchors, positives, negatives)``, long ``[T]`` each.
    """
    if miner == "distance":
        return distance_weighted_triplets(z, labels)
    if miner == "semihard":
        return semihard_triplets(z, labels)
    if miner == "all":
        return all_triplets(labels)
    raise ValueError(f"miner={miner!r} cannot form triplets; use one of {MINERS}")
