"""SimCLR with fairness-driven sampling (Martin & Ogbuokiri), and plain SimCLR (Chen et al. 2020) as its baseline.

All phases run in one ``fit``:

1. ``simclr`` (``stage1_epochs``): NT-Xent over two augmented views, τ = 0.5, 2-layer projection to 128.
2. cluster phase, at the first epoch of stage ``fair``: K-means (K = 4) over the embeddings of the *whole* train
   split, gathered from every process with :meth:`~faircl.methods.base.FairModule.collect` (identical, ``idx``-sorted
   data on every rank) and clustered by a seeded float64 K-means, so every rank computes the same partition as a
   single process would. The cluster id of each train row is kept in the buffer ``cluster_ids`` (indexed by the
   row id ``idx``, checkpointed), with ``p(c) = N_c/N`` in ``cluster_freq``.
3. ``fair``: weighted NT-Xent. For anchor i the negatives are weighted by the cluster representation gap
   ``w(c) = max(0, 1/K − p(c)) + ε`` of their cluster (c ≠ c_i) × their distance from the anchor
   (:func:`faircl.mining.fair_negative_weights`), and the nearest same-cluster row of the batch is an extra positive
   besides the other view (:func:`faircl.mining.nearest_cluster_positive`). Sampling one negative ∝ weight (the
   paper's Algorithm 1) is replaced by its expectation inside the batch (weighted denominator), and the nearest
   neighbour is searched within the batch rather than the whole split. With ``recluster_every = R > 0`` the
   clustering is redone every R epochs of the ``fair`` stage.
   ``negatives="sampled"`` runs Algorithm 1 literally instead: for each anchor **one** negative is drawn from the
   other clusters ∝ ``w(c)`` × distance (:func:`faircl.losses.sampled_negatives.sample_negatives` on the same
   weights), and the loss contrasts each positive (other view, nearest same-cluster row) with that single negative
   (:func:`faircl.losses.sampled_negatives.sampled_pair_loss`). The weighted denominator stays the default because
   it is the in-batch expectation of the draw with far lower gradient variance; the sampled form is the paper's.

Logged at every clustering, from :class:`faircl.metrics.ClusterBalance` on the same train embeddings (its own
seeded K-means, K = ``num_clusters``): ``cluster/dominance`` (largest cluster share), ``cluster/entropy`` (of the
cluster sizes, bits) and ``cluster/separation`` (mean distance between centroids). At test: the same three on the
test embeddings (``cluster_dominance``, ...) and a logistic-regression linear probe on frozen ``h``
(``probe_accuracy``, ``probe_f1``, ``probe_auc``).

The training partition uses :func:`faircl.metrics.clustering.kmeans` (pure torch, float64, seeded k-means++), whose result
depends only on the gathered data and the seed, not on thread counts or the number of processes. An online linear classifier on the
detached ``h`` provides ``logits`` so the prediction-fairness metrics are reported as for every method; it does not
influence the representation.
"""

from __future__ import annotations

from typing import Any

import torch

from faircl.losses import nt_xent_loss
from faircl.losses.sampled_negatives import sample_negatives, sampled_pair_loss
from faircl.methods.base import FairModule
from faircl.methods.scale import view_outputs
from faircl.metrics import ClusterBalance
from faircl.metrics.clustering import kmeans
from faircl.metrics.probes import linear_probe as shared_linear_probe
from faircl.mining import fair_negative_weights, nearest_cluster_positive
from faircl.models import ProjectionHead


class FairSamplingSimCLR(FairModule):
    """SimCLR, then K-means on the train embeddings, then NT-Xent with fairness-driven negatives and positives.

    Needs a datamodule with ``two_views: true``. Attributes are never used in training (only in evaluation).

    Args:
        fair_sampling: run the cluster and ``fair`` phases (``False``: plain SimCLR for the whole fit).
        stage1_epochs: epochs of the plain SimCLR phase before clustering (paper: 30).
        temperature: τ of NT-Xent (0.5).
        proj_dim: output of the 2-layer projection head (128).
        proj_hidden: hidden width of the projection head (default: the encoder's ``out_dim``).
        num_clusters: K of K-means (4).
        epsilon: ε of the cluster weights (0.1).
        nearest_positive: add the nearest same-cluster row as a positive in the ``fair`` phase.
        negatives: ``"weighted"`` (default: weighted NT-Xent denominator, the expectation of the draw) or
            ``"sampled"`` (Algorithm 1 as written: one negative drawn per anchor from the other clusters).
        recluster_every: re-cluster every R epochs of the ``fair`` phase (0 = never).
        cluster_on: ``z`` (projection, as the paper) or ``h`` (encoder output).
        cluster_seed: seed of K-means.
        kmeans_iters: maximum Lloyd iterations.
        probe_max_rows: at most this many train rows for the test-time linear probe.
        gather_distributed: under DDP, contrast the local anchors with every process's rows (NT-Xent and the
            negative weights of the global batch; the cluster state is identical on every rank). The nearest
            same-cluster positive is still searched in the local batch. Not used with ``negatives="sampled"``.
        grad_cache_chunk: train with a gradient cache of this many rows per chunk (see :mod:`faircl.methods.scale`).
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments.
    """

    requires_views = True

    def __init__(
        self,
        fair_sampling: bool = True,
        stage1_epochs: int = 1,
        temperature: float = 0.5,
        proj_dim: int = 128,
        proj_hidden: int | None = None,
        num_clusters: int = 4,
        epsilon: float = 0.1,
        nearest_positive: bool = True,
        negatives: str = "weighted",
        recluster_every: int = 0,
        cluster_on: str = "z",
        cluster_seed: int = 0,
        kmeans_iters: int = 100,
        probe_max_rows: int = 5000,
        gather_distributed: bool = True,
        grad_cache_chunk: int | None = None,
        **kwargs: Any,
    ) -> None:
        if stage1_epochs < 0 or recluster_every < 0:
            raise ValueError(f"stage1_epochs and recluster_every must be >= 0, got {stage1_epochs}, "
                             f"{recluster_every}")
        if num_clusters < 2:
            raise ValueError(f"num_clusters must be >= 2, got {num_clusters}")
        if negatives not in ("weighted", "sampled"):
            raise ValueError(f"negatives must be 'weighted' or 'sampled', got {negatives!r}")
        if cluster_on not in ("z", "h"):
            raise ValueError(f"cluster_on must be 'z' or 'h', got {cluster_on!r}")
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if grad_cache_chunk is not None and grad_cache_chunk < 1:
            raise ValueError(f"grad_cache_chunk must be >= 1 or None, got {grad_cache_chunk}")
        super().__init__(**kwargs)
        self.grad_cache_chunk = grad_cache_chunk
        self.automatic_optimization = grad_cache_chunk is None

    # ------------------------------------------------------------------ model
    def build_heads(self) -> None:
        """Projection head ``h → z`` (2 layers, ReLU, L2-normalised), the online probe ``h.detach() → logits``,
        and the cluster state buffers."""
        hp = self.hparams
        out_dim = self.encoder.out_dim
        self.projector = ProjectionHead(out_dim, hp.proj_dim, hidden_dim=hp.proj_hidden or out_dim, num_layers=2)
        self.add_online_probe(out_dim, on="h")
        dim = hp.proj_dim if hp.cluster_on == "z" else out_dim
        # cluster id of every train row (by idx); empty until the first clustering (resized on checkpoint load)
        self.register_buffer("cluster_ids", torch.zeros(0, dtype=torch.long))
        self.register_buffer("cluster_freq", torch.zeros(hp.num_clusters))
        self.register_buffer("cluster_centroids", torch.zeros(hp.num_clusters, dim))
        self.register_buffer("cluster_epoch", torch.tensor(-1, dtype=torch.long))

    def embed_heads(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{"z": projection (normalised, [B, proj_dim])}``; ``logits`` come from the probe on ``h.detach()``."""
        return {"z": self.projector(h)}

    def stage_epochs(self) -> list[tuple[str, int | None]]:
        if not self.hparams.fair_sampling:
            return [("simclr", None)]
        return [("simclr", self.hparams.stage1_epochs), ("fair", None)]

    # ------------------------------------------------------------------ training
    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        hp = self.hparams
        z1, z2 = out["z"], view_outputs(self, batch)["z"]
        gather = bool(hp.get("gather_distributed", True)) and hp.get("negatives", "weighted") != "sampled"
        terms: dict[str, torch.Tensor] = {}
        if self.stage == "fair":
            if self.cluster_ids.numel() == 0:
                raise RuntimeError("the fair phase started without cluster assignments (cluster_ids is empty)")
            clusters = self.cluster_ids[batch["idx"]]
            weights = fair_negative_weights(z1.detach(), clusters, hp.num_clusters, hp.epsilon,
                                            cluster_freq=self.cluster_freq, gather_distributed=gather)
            extra = nearest_cluster_positive(z1.detach(), clusters) if hp.nearest_positive else None
            if hp.get("negatives", "weighted") == "sampled":
                drawn = sample_negatives(weights)
                terms["nt_xent"] = sampled_pair_loss(z1, z2, drawn, hp.temperature, extra_positives=extra)
            else:
                terms["nt_xent"] = nt_xent_loss(z1, z2, hp.temperature, negative_weights=weights,
                                                extra_positives=extra, gather_distributed=gather)
        else:
            terms["nt_xent"] = nt_xent_loss(z1, z2, hp.temperature, gather_distributed=gather)
        terms["loss"] = terms["nt_xent"]
        return self.with_probe_loss(terms, batch, out)

    def on_train_epoch_start(self) -> None:
        super().on_train_epoch_start()
        if self.stage != "fair":
            return
        due = self._due_clustering_epoch(self.current_epoch)
        if int(self.cluster_epoch) != due:
            self.cluster(self.current_epoch)

    def _due_clustering_epoch(self, epoch: int) -> int:
        """Epoch of the latest scheduled clustering at ``epoch`` (first ``fair`` epoch, then every R epochs)."""
        start = self.stage_start_epoch("fair")
        r = self.hparams.recluster_every
        return start if r == 0 else start + r * ((epoch - start) // r)

    @torch.no_grad()
    def cluster(self, epoch: int | None = None) -> torch.Tensor:
        """K-means over the whole train split (gathered from every process); fills the cluster buffers.

        Returns:
            the cluster id of every train row ``[N]``.
        """
        hp = self.hparams
        data = self.collect(self.plain_loader("train"), keys=(hp.cluster_on,))
        n = len(self.attached_datamodule.splits["train"])
        if data["idx"].numel() != n or not torch.equal(data["idx"], torch.arange(n)):
            raise RuntimeError(f"clustering needs every train row exactly once, gathered {data['idx'].numel()} of {n}")
        labels, centroids = kmeans(data[hp.cluster_on], hp.num_clusters, seed=hp.cluster_seed,
                                   max_iter=hp.kmeans_iters)
        self.cluster_ids = labels.to(self.device)
        self.cluster_freq.copy_(torch.bincount(labels, minlength=hp.num_clusters).float() / n)
        self.cluster_centroids.copy_(centroids.float())
        self.cluster_epoch.fill_(self.current_epoch if epoch is None else epoch)
        stats = cluster_stats(data[hp.cluster_on], hp.num_clusters, seed=hp.cluster_seed)
        self.log_dict({f"cluster/{k}": v for k, v in stats.items()}, on_step=False, on_epoch=True)
        return labels

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        # cluster_ids has one entry per train row: take the checkpoint's size before copying it in.
        key = prefix + "cluster_ids"
        if key in state_dict and state_dict[key].shape != self.cluster_ids.shape:
            self.cluster_ids = torch.zeros_like(state_dict[key], device=self.cluster_ids.device)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    # ------------------------------------------------------------------ evaluation
    def extra_test_metrics(self, outputs: dict[str, torch.Tensor]) -> dict[str, float]:
        """Cluster balance of the test embeddings (K-means, K = ``num_clusters``) and the linear probe on frozen ``h``."""
        hp = self.hparams
        report: dict[str, float] = {}
        emb = outputs.get(hp.cluster_on)
        if emb is not None and len(emb) >= hp.num_clusters:
            report.update({f"cluster_{k}": v for k, v in cluster_stats(emb, hp.num_clusters, hp.cluster_seed).items()})
        if self.attached_datamodule is not None and "h" in outputs:
            train = self.collect(self.plain_loader("train"), keys=("h", "y"), max_rows=hp.probe_max_rows)
            report.update(linear_probe(train["h"], train["y"], outputs["h"], outputs["y"], self.num_classes))
        return report


class SimCLR(FairSamplingSimCLR):
    """Plain SimCLR (Chen et al. 2020): :class:`FairSamplingSimCLR` with ``fair_sampling=False`` (the baseline).

    Args:
        fair_sampling: keep ``False`` (the argument exists so that checkpoints and configs round-trip).
        **kwargs: :class:`FairSamplingSimCLR` arguments.
    """

    def __init__(self, fair_sampling: bool = False, **kwargs: Any) -> None:
        super().__init__(fair_sampling=fair_sampling, **kwargs)


def cluster_stats(emb: torch.Tensor, num_clusters: int, seed: int = 0) -> dict[str, float]:
    """Martin & Ogbuokiri's cluster balance of embeddings ``[N, d]``, via :class:`faircl.metrics.ClusterBalance`.

    Returns ``{"dominance": largest cluster share, "entropy": entropy of the cluster sizes (bits),
    "separation": mean Euclidean distance between the centroids}`` of a seeded K-means with ``num_clusters``.
    """
    metric = ClusterBalance(num_clusters, seed=seed)
    metric.update(emb.float().cpu())
    result = metric.compute()
    return {key: float(result[name]) for key, name in
            (("dominance", "dominance_ratio"), ("entropy", "entropy"), ("separation", "separation"))}


def linear_probe(h_train: torch.Tensor, y_train: torch.Tensor, h_test: torch.Tensor, y_test: torch.Tensor,
                 num_classes: int, seed: int = 0) -> dict[str, float]:
    """Logistic-regression probe on frozen, standardised embeddings (SimCLR's linear evaluation; Martin & Ogbuokiri
    Table 2), by :func:`faircl.metrics.probes.linear_probe`.

    Returns:
        ``{"probe_accuracy", "probe_f1", "probe_auc"}`` (F1 of class 1 for binary tasks, macro otherwise; AUC NaN
        when a class is absent from the test labels).
    """
    scores = shared_linear_probe(h_train, y_train, h_test, y_test, "logistic", num_classes=num_classes, seed=seed)
    return {f"probe_{key}": float(scores[key]) for key in ("accuracy", "f1", "auc")}


__all__ = ["FairSamplingSimCLR", "SimCLR", "cluster_stats", "kmeans", "linear_probe"]
