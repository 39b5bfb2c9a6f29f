"""Representation-fairness metrics: finDML (Dullerud et al. 2022), cluster balance (Martin & Ogbuokiri) and CCED.

Functional forms (stateless, on tensors) come first, then the torchmetrics classes. The classes keep the rows as
``cat`` states, so under DDP ``compute`` sees the rows of every process. Computations that depend on the order of
the rows (K-means initialisation) first put the rows in a canonical order, so the result is the same whatever the
batching or the number of processes.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from faircl._checks import check_choice, check_embeddings, check_ids, check_positive, check_rows
from faircl.metrics import gaps as G
from faircl.metrics.clustering import kmeans
from faircl.utils import rank_tolerance

__all__ = [
    "CCEDGap",
    "ClusterBalance",
    "GroupNMI",
    "GroupRecallAtK",
    "GroupUniformityKL",
    "cced",
    "cluster_balance",
    "group_mean",
    "knn_hits",
    "nmi",
    "uniformity_kl",
]


def _check_embeddings(x: Tensor, name: str = "embeddings") -> Tensor:
    return check_embeddings(name, x, finite=True)


def _float(x: Tensor) -> Tensor:
    """float32 for half precision inputs, otherwise unchanged (float32 / float64)."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


# ----------------------------------------------------------------------------------------------------------------
# functional
# ----------------------------------------------------------------------------------------------------------------

def knn_hits(embeddings: Tensor, labels: Tensor, k: int = 1, distance: str = "euclidean",
             chunk_size: int | None = None) -> Tensor:
    """Per-query Recall@k hit: 1 if one of the ``k`` nearest other rows has the query's label (finDML Def. 14).

    Every row is a query; its neighbours are all the other rows (the row itself is excluded by position).

    Args:
        embeddings: ``[N, D]`` (half precision is computed in float32).
        labels: class ids ``[N]``.
        k: neighbours (clamped to ``N − 1``).
        distance: ``"euclidean"`` or ``"cosine"``.
        chunk_size: query rows per similarity block; default keeps a block at about 2^24 entries, so memory is
            ``O(chunk_size · N)`` whatever ``N``.

    Returns:
        float tensor ``[N]`` of 0/1; NaN everywhere when ``N < 2`` (no neighbour exists).
    """
    x = _float(_check_embeddings(embeddings))
    labels = labels.to(x.device)
    n = x.shape[0]
    check_rows("labels", labels, n)
    check_positive("k", k, minimum=1)
    if n < 2:
        return torch.full((n,), float("nan"), device=x.device)
    k = min(k, n - 1)
    if distance == "cosine":
        x = torch.nn.functional.normalize(x, dim=1)
        bias = None
    elif distance == "euclidean":
        # argmin ‖q − x‖² = argmax 2 q·x − ‖x‖²
        bias = -(x * x).sum(1)
    else:
        check_choice("distance", distance, ("euclidean", "cosine"))
    step = chunk_size or max(1, (1 << 24) // n)
    xt = x.t()
    hits = torch.empty(n, dtype=torch.bool, device=x.device)
    for start in range(0, n, step):
        q = x[start:start + step]
        m = q.shape[0]
        if bias is None:
            score = q @ xt
        else:
            score = torch.addmm(bias.unsqueeze(0), q, xt, alpha=2.0)
        rows = torch.arange(m, device=x.device)
        score[rows, rows + start] = -float("inf")
        ql = labels[start:start + m]
        if k == 1:
            hits[start:start + m] = labels[score.argmax(1)] == ql
        else:
            idx = score.topk(k, dim=1).indices
            hits[start:start + m] = (labels[idx] == ql.unsqueeze(1)).any(1)
    return hits.to(x.dtype)


def group_mean(values: Tensor, groups: Tensor, num_groups: int) -> tuple[Tensor, Tensor]:
    """Per-group mean of ``values`` ``[N]`` and group sizes; rows with group ``-1`` are skipped.

    Returns:
        ``(means [G] float64 (NaN for an empty group), sizes [G] int64)``.
    """
    known = groups >= 0
    g = groups[known]
    v = values[known].double()
    sizes = torch.bincount(g, minlength=num_groups)
    sums = torch.zeros(num_groups, dtype=torch.float64, device=v.device).index_add_(0, g, v)
    means = torch.where(sizes > 0, sums / sizes.clamp_min(1), torch.full_like(sums, float("nan")))
    return means, sizes


def _entropy(counts: Tensor) -> Tensor:
    p = counts[counts > 0].double() / counts.sum()
    return -(p * p.log()).sum()


def nmi(labels: Tensor, clusters: Tensor) -> Tensor:
    """Normalised mutual information ``2 I(Y; C) / (H(Y) + H(C))`` (finDML Def. 15; scikit-learn's arithmetic NMI).

    As in scikit-learn, two labelings that are both constant give 1.0 and ``I = 0`` gives 0.0. Empty input: NaN.
    """
    labels, clusters = labels.long().flatten(), clusters.long().flatten()
    if labels.shape != clusters.shape:
        raise ValueError(f"labels and clusters must have the same shape, got {tuple(labels.shape)} and "
                         f"{tuple(clusters.shape)}")
    n = labels.numel()
    if n == 0:
        return torch.tensor(float("nan"), dtype=torch.float64, device=labels.device)
    _, y = torch.unique(labels, return_inverse=True)
    _, c = torch.unique(clusters, return_inverse=True)
    ny, nc = int(y.max()) + 1, int(c.max()) + 1
    if ny == nc == 1:
        return torch.tensor(1.0, dtype=torch.float64, device=labels.device)
    joint = torch.bincount(y * nc + c, minlength=ny * nc).view(ny, nc).double()
    py, pc = joint.sum(1) / n, joint.sum(0) / n
    pj = joint / n
    nz = pj > 0
    mi = (pj[nz] * (pj[nz].log() - (py.unsqueeze(1) * pc.unsqueeze(0))[nz].log())).sum().clamp_min(0)
    if float(mi) == 0.0:
        return torch.tensor(0.0, dtype=torch.float64, device=labels.device)
    return mi / ((_entropy(joint.sum(1)) + _entropy(joint.sum(0))) / 2)


def uniformity_kl(embeddings: Tensor) -> Tensor:
    """``U_KL(X) = D_KL(U ‖ S(X))`` (finDML eq. 1): uniform vs the normalised singular values of ``X`` ``[N, D]``.

    ``S`` holds the ``min(N, D)`` singular values of the (uncentred) matrix divided by their sum, ``U`` is uniform
    over as many entries, and ``D_KL(U ‖ S) = Σ_i (1/m) log((1/m) / s_i)`` (as in Roth et al.'s ``rho_spectrum``).
    Lower = more uniform spectrum. ``+inf`` when the matrix is rank deficient; NaN for an empty or all-zero matrix.

    Rank deficiency is decided with a tolerance, as ``torch.linalg.matrix_rank`` does by default: a singular value
    ``<= max(N, D)·eps·σ_max`` (``eps`` of the input's dtype, :func:`faircl.utils.rank_tolerance`) is zero. The
    singular values of a rank-deficient matrix are exact zeros on some CPUs and round-off (``1e-17``) on others,
    so an exact comparison would make the answer depend on the machine's kernels.
    """
    x = _check_embeddings(embeddings)
    eps = torch.finfo(x.dtype).eps
    x = x.double()
    if x.shape[0] == 0:
        return torch.tensor(float("nan"), dtype=torch.float64, device=x.device)
    s = torch.linalg.svdvals(x)
    if float(s.max()) == 0.0:  # all-zero input: the singular values of exact zeros are exact zeros on every kernel
        return torch.tensor(float("nan"), dtype=torch.float64, device=x.device)
    if float(s.min()) <= rank_tolerance(float(s.max()), x.shape, eps):
        return torch.tensor(float("inf"), dtype=torch.float64, device=x.device)
    p = s / s.sum()
    m = p.numel()
    return (math.log(1.0 / m) - p.log()).mean()


def cluster_balance(embeddings: Tensor, num_clusters: int = 4, seed: int = 0, n_init: int = 10) -> dict[str, Tensor]:
    """Cluster-balance statistics of Martin & Ogbuokiri over a K-means clustering of the rows.

    Returns:
        dict of float64 scalars: ``dominance_ratio`` = largest cluster share ``max_c N_c / N`` (lower = more
        balanced, ``1/K`` at best); ``entropy`` = ``−Σ_c p_c log2 p_c`` of the cluster sizes in bits (``log2 K`` at
        most); ``separation`` = mean Euclidean distance between the ``K(K−1)/2`` pairs of centroids.
    """
    assign, centroids = kmeans(_check_embeddings(embeddings), num_clusters, seed=seed, n_init=n_init, canonical=True)
    sizes = torch.bincount(assign, minlength=num_clusters)
    p = sizes.double() / sizes.sum()
    nz = p[p > 0]
    i, j = torch.triu_indices(num_clusters, num_clusters, offset=1)
    dist = (centroids[i] - centroids[j]).norm(dim=1)
    nan = torch.tensor(float("nan"), dtype=torch.float64, device=centroids.device)
    return {
        "dominance_ratio": p.max(),
        "entropy": -(nz * nz.log2()).sum(),
        "separation": dist.mean() if dist.numel() else nan,
    }


def cced(attribute_embeddings: Tensor, neutral_embeddings: Tensor) -> Tensor:
    """Per-tuple CCED gap (CCD paper, §5): ``|‖f(S^{a_i}) − f(S^n)‖ − ‖f(S^{a_j}) − f(S^n)‖|``.

    With more than two attribute versions the value is the mean over the pairs ``i < j``.

    Args:
        attribute_embeddings: ``[N, A, D]``, the same content in each of the ``A >= 2`` attribute versions.
        neutral_embeddings: ``[N, D]``, the neutral version.

    Returns:
        float64 ``[N]``; the CCED metric is its mean.
    """
    if not isinstance(attribute_embeddings, Tensor) or attribute_embeddings.ndim != 3:
        raise ValueError("attribute_embeddings must be a tensor of shape [N, A, D]")
    if attribute_embeddings.shape[1] < 2:
        raise ValueError(f"attribute_embeddings needs A >= 2 attribute versions, got shape "
                         f"{tuple(attribute_embeddings.shape)}")
    if not isinstance(neutral_embeddings, Tensor) or neutral_embeddings.shape != (
            attribute_embeddings.shape[0], attribute_embeddings.shape[2]):
        shape = tuple(neutral_embeddings.shape) if isinstance(neutral_embeddings, Tensor) else None
        raise ValueError(f"neutral_embeddings must have shape [N, D] = "
                         f"{[attribute_embeddings.shape[0], attribute_embeddings.shape[2]]}, got {shape}")
    d = (attribute_embeddings.double() - neutral_embeddings.double().unsqueeze(1)).norm(dim=2)   # [N, A]
    i, j = torch.triu_indices(d.shape[1], d.shape[1], offset=1)
    return (d[:, i] - d[:, j]).abs().mean(1)


# ----------------------------------------------------------------------------------------------------------------
# metric classes
# ----------------------------------------------------------------------------------------------------------------

class _EmbeddingMetric(Metric):
    """Base: accumulates ``embeddings [N, D]`` (stored as float32), optional ``labels [N]`` and ``groups [N]`` as
    ``cat`` states."""

    is_differentiable = False
    higher_is_better = None
    full_state_update = False

    def __init__(self, num_groups: int | None, num_classes: int | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        if num_groups is not None:
            check_positive("num_groups", num_groups, minimum=1)
        self.num_groups = num_groups
        self.num_classes = num_classes
        self.add_state("embeddings", default=[], dist_reduce_fx="cat")
        self.add_state("labels", default=[], dist_reduce_fx="cat")
        self.add_state("groups", default=[], dist_reduce_fx="cat")

    def _append(self, embeddings: Tensor, labels: Tensor | None, groups: Tensor | None) -> None:
        x = _check_embeddings(embeddings)
        n = x.shape[0]
        self.embeddings.append(x.detach().float())
        if labels is not None:
            labels = check_ids("labels", labels, self.num_classes)
            check_rows("labels", labels, n)
            self.labels.append(labels)
        if groups is not None:
            groups = check_ids("groups", groups, self.num_groups, allow_unknown=True, kind="num_groups")
            check_rows("groups", groups, n)
            self.groups.append(groups)

    def _cat(self, name: str) -> Tensor | None:
        value = getattr(self, name)
        if isinstance(value, list):
            return dim_zero_cat(value) if value else None
        return value

    def _gathered(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        x = self._cat("embeddings")
        if x is None:
            raise RuntimeError(f"{type(self).__name__}.compute() called before any update()")
        return x, self._cat("labels"), self._cat("groups")


class GroupRecallAtK(_EmbeddingMetric):
    """Per-group Recall@k (finDML Def. 1 and 14): queries from group ``a``, neighbours over all rows, self excluded.

    ``compute()`` returns a dict: ``recall`` (over all queries, unknown group included), ``group_recall`` ``[G]``
    (NaN for an absent group), ``group_size`` ``[G]`` and the gaps ``gap_majority_minority``,
    ``gap_worst_vs_rest``, ``gap_top_vs_bottom_half`` (:mod:`faircl.metrics.gaps`).

    Args:
        k: neighbours.
        num_groups: G.
        distance: ``"euclidean"`` (default) or ``"cosine"``.
        chunk_size: query rows per similarity block (memory ``O(chunk_size · N)``).
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Examples:
        Two classes in two tight clusters; the one row of group 1 in class 1 sits near class 0:


        >>> import torch
        >>> from faircl.metrics import GroupRecallAtK
        >>> z = torch.tensor([[0.0, 0.0], [0.1, 0.0], [0.9, 0.0], [5.0, 5.0], [5.1, 5.0], [1.0, 0.0]])
        >>> labels = torch.tensor([0, 0, 0, 1, 1, 1])
        >>> groups = torch.tensor([0, 0, 1, 0, 0, 1])
        >>> metric = GroupRecallAtK(k=1, num_groups=2)
        >>> metric.update(z, labels, groups)
        >>> out = metric.compute()
        >>> out["group_recall"]
        tensor([1., 0.], dtype=torch.float64)
        >>> out["gap_majority_minority"]
        tensor(1., dtype=torch.float64)
    """

    higher_is_better = True

    def __init__(self, k: int, num_groups: int, distance: str = "euclidean", chunk_size: int | None = None,
                 **kwargs) -> None:
        super().__init__(num_groups, **kwargs)
        check_positive("k", k, minimum=1)
        check_choice("distance", distance, ("euclidean", "cosine"))
        self.k, self.distance, self.chunk_size = k, distance, chunk_size

    def update(self, embeddings: Tensor, labels: Tensor, groups: Tensor) -> None:
        """Accumulate ``embeddings [N, D]``, class ``labels [N]`` and ``groups [N]`` (``-1`` = unknown)."""
        self._append(embeddings, labels, groups)

    def compute(self) -> dict[str, Tensor]:
        x, y, g = self._gathered()
        hits = knn_hits(x, y, self.k, self.distance, self.chunk_size)
        means, sizes = group_mean(hits, g, self.num_groups)
        return {"recall": hits.double().mean(), "group_recall": means, "group_size": sizes,
                **G.all_gaps(means, sizes, higher_is_better=True)}


class GroupNMI(_EmbeddingMetric):
    """Per-group NMI (finDML Def. 15): K-means over all rows (K = ``num_clusters``, default ``num_classes``), NMI
    between classes and clusters restricted to each group.

    ``compute()`` returns ``nmi`` (all rows), ``group_nmi`` ``[G]`` (NaN for an absent group), ``group_size`` and the
    three gaps. K-means runs on the rows in a canonical order with a fixed seed, so the result does not depend on
    batching or on the number of processes.

    Args:
        num_classes: number of classes (default number of clusters).
        num_groups: G.
        num_clusters: K; default ``num_classes``.
        seed: K-means seed.
        n_init: K-means restarts.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Examples:
        >>> import torch
        >>> from faircl.metrics import GroupNMI
        >>> z = torch.tensor([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0], [0.2, 0.1], [5.2, 5.1]])
        >>> metric = GroupNMI(num_classes=2, num_groups=2)
        >>> metric.update(z, labels=torch.tensor([0, 0, 1, 1, 0, 1]), groups=torch.tensor([0, 0, 0, 0, 1, 1]))
        >>> out = metric.compute()
        >>> out["nmi"], out["group_nmi"]
        (tensor(1., dtype=torch.float64), tensor([1., 1.], dtype=torch.float64))
    """

    higher_is_better = True

    def __init__(self, num_classes: int, num_groups: int, num_clusters: int | None = None, seed: int = 0,
                 n_init: int = 10, **kwargs) -> None:
        super().__init__(num_groups, num_classes=num_classes, **kwargs)
        self.num_clusters = num_clusters or num_classes
        check_positive("num_clusters", self.num_clusters, minimum=1)
        self.seed, self.n_init = seed, n_init

    def update(self, embeddings: Tensor, labels: Tensor, groups: Tensor) -> None:
        """Accumulate ``embeddings [N, D]``, class ``labels [N]`` and ``groups [N]`` (``-1`` = unknown)."""
        self._append(embeddings, labels, groups)

    def compute(self) -> dict[str, Tensor]:
        x, y, g = self._gathered()
        clusters, _ = kmeans(x, self.num_clusters, seed=self.seed, n_init=self.n_init, canonical=True)
        y, g = y.cpu(), g.cpu()
        per_group = torch.stack([nmi(y[g == a], clusters[g == a]) for a in range(self.num_groups)])
        sizes = torch.bincount(g[g >= 0], minlength=self.num_groups)
        return {"nmi": nmi(y, clusters), "group_nmi": per_group, "group_size": sizes,
                **G.all_gaps(per_group, sizes, higher_is_better=True)}


class GroupUniformityKL(_EmbeddingMetric):
    """Per-group ``U_KL`` (finDML eq. 1 and Def. 3): :func:`uniformity_kl` of each group's embeddings.

    ``compute()`` returns ``uniformity_kl`` (all rows), ``group_uniformity_kl`` ``[G]`` (NaN for an absent group),
    ``group_size`` and the three gaps (lower U_KL is better, so ``gap_worst_vs_rest`` is worst − rest).

    Examples:
        >>> import torch
        >>> from faircl.metrics import GroupUniformityKL
        >>> metric = GroupUniformityKL(num_groups=2)
        >>> spread = torch.eye(4)                                 # equal singular values: uniform, KL 0
        >>> squeezed = torch.diag(torch.tensor([1.0, 1.0, 1.0, 0.1]))  # one direction nearly collapsed
        >>> metric.update(torch.cat([spread, squeezed]), torch.tensor([0] * 4 + [1] * 4))
        >>> metric.compute()["group_uniformity_kl"]
        tensor([0.0000, 0.3208], dtype=torch.float64)
    """

    higher_is_better = False

    def __init__(self, num_groups: int, **kwargs) -> None:
        super().__init__(num_groups, **kwargs)

    def update(self, embeddings: Tensor, groups: Tensor) -> None:
        """Accumulate ``embeddings [N, D]`` and ``groups [N]`` (``-1`` = unknown)."""
        self._append(embeddings, None, groups)

    def compute(self) -> dict[str, Tensor]:
        x, _, g = self._gathered()
        per_group = torch.stack([uniformity_kl(x[g == a]) for a in range(self.num_groups)]).cpu()
        sizes = torch.bincount(g[g >= 0], minlength=self.num_groups).cpu()
        return {"uniformity_kl": uniformity_kl(x).cpu(), "group_uniformity_kl": per_group, "group_size": sizes,
                **G.all_gaps(per_group, sizes, higher_is_better=False)}


class ClusterBalance(_EmbeddingMetric):
    """Cluster dominance ratio, representation entropy and separation distance (Martin & Ogbuokiri, §4).

    ``compute()`` returns the dict of :func:`cluster_balance` over all accumulated rows.

    Args:
        num_clusters: K (4 in the paper).
        seed: K-means seed.
        n_init: K-means restarts.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Examples:
        >>> import torch
        >>> from faircl.metrics import ClusterBalance
        >>> metric = ClusterBalance(num_clusters=2)
        >>> metric.update(torch.tensor([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [5.0, 5.0]]))   # 3 rows in one cluster
        >>> out = metric.compute()
        >>> out["dominance_ratio"], out["entropy"]   # largest cluster share; entropy of (3/4, 1/4) in bits
        (tensor(0.7500, dtype=torch.float64), tensor(0.8113, dtype=torch.float64))
    """

    def __init__(self, num_clusters: int = 4, seed: int = 0, n_init: int = 10, **kwargs) -> None:
        super().__init__(None, **kwargs)
        check_positive("num_clusters", num_clusters, minimum=2)
        self.num_clusters, self.seed, self.n_init = num_clusters, seed, n_init

    def update(self, embeddings: Tensor) -> None:
        """Accumulate ``embeddings [N, D]``."""
        self._append(embeddings, None, None)

    def compute(self) -> dict[str, Tensor]:
        x, _, _ = self._gathered()
        return cluster_balance(x, self.num_clusters, self.seed, self.n_init)


class CCEDGap(Metric):
    """Content-conditional equal-distance gap (CCD paper, §5): the mean of :func:`cced` over all tuples.

    ``update(attribute_embeddings [N, A, D], neutral_embeddings [N, D])``; ``compute()`` returns a float64 scalar
    (lower is fairer; NaN before any tuple). Per-tuple values are ``cat`` states, so the DDP result equals the
    single-process one.

    Examples:
        >>> import torch
        >>> from faircl.metrics import CCEDGap
        >>> metric = CCEDGap()
        >>> attr = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])   # [N=1, A=2, D=2]: distances 1 and 2 to the neutral
        >>> metric.update(attr, torch.zeros(1, 2))
        >>> metric.compute()
        tensor(1., dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("values", default=[], dist_reduce_fx="cat")

    def update(self, attribute_embeddings: Tensor, neutral_embeddings: Tensor) -> None:
        self.values.append(cced(attribute_embeddings.detach(), neutral_embeddings.detach()))

    def compute(self) -> Tensor:
        if isinstance(self.values, list) and not self.values:
            return torch.tensor(float("nan"), dtype=torch.float64)
        return dim_zero_cat(self.values).double().mean()
