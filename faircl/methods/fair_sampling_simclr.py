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

from collections.abc import Mapping
from typing import Any, Literal

import torch

from faircl._checks import check_choice, check_positive
from faircl.losses import nt_xent_loss
from faircl.mining.fair_sampling import NEGATIVES, fair_nt_xent_loss
from faircl.methods.base import FairModule
from faircl.metrics.clustering import kmeans
from faircl.metrics.embedding import cluster_balance
from faircl.metrics.probes import linear_probe
from faircl.models import ProjectionHead

__all__ = ["FairSamplingSimCLR", "SimCLR"]


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
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments. ``gather_distributed``: NT-Xent and the
            negative weights of the global batch (the cluster state is identical on every rank; the nearest
            same-cluster positive is still searched in the local batch; not used with ``negatives="sampled"``).
    """

    requires_views = True
    checkpoint_sized_buffers = ("cluster_ids",)  # one cluster id per train row

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
        negatives: Literal["weighted", "sampled"] = "weighted",
        recluster_every: int = 0,
        cluster_on: Literal["z", "h"] = "z",
        cluster_seed: int = 0,
        kmeans_iters: int = 100,
        probe_max_rows: int = 5000,
        **kwargs: Any,
    ) -> None:
        check_positive("stage1_epochs", stage1_epochs, strict=False)
        check_positive("recluster_every", recluster_every, strict=False)
        check_positive("num_clusters", num_clusters, minimum=2)
        check_choice("negatives", negatives, NEGATIVES)
        check_choice("cluster_on", cluster_on, ("z", "h"))
        check_positive("temperature", temperature)
        super().__init__(**kwargs)
        self.fair_sampling, self.stage1_epochs, self.temperature = fair_sampling, stage1_epochs, temperature
        self.num_clusters, self.epsilon, self.nearest_positive = num_clusters, epsilon, nearest_positive
        self.negatives, self.recluster_every, self.cluster_on = negatives, recluster_every, cluster_on
        self.cluster_seed, self.kmeans_iters, self.probe_max_rows = cluster_seed, kmeans_iters, probe_max_rows
        out_dim = self.encoder.out_dim
        # projection head h → z (2 layers, ReLU, L2-normalised) and the online probe h.detach() → logits
        self.projector = ProjectionHead(out_dim, proj_dim, hidden_dim=proj_hidden or out_dim, num_layers=2)
        self.add_online_probe(out_dim, on="h")
        dim = proj_dim if cluster_on == "z" else out_dim
        # cluster id of every train row (by idx); empty until the first clustering (load_state_dict takes the size)
        self.register_buffer("cluster_ids", torch.zeros(0, dtype=torch.long))
        self.register_buffer("cluster_freq", torch.zeros(num_clusters))
        self.register_buffer("cluster_centroids", torch.zeros(num_clusters, dim))
        self.register_buffer("cluster_epoch", torch.tensor(-1, dtype=torch.long))

    # ------------------------------------------------------------------ model
    def embed_heads(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{"z": projection (normalised, [B, proj_dim])}``; ``logits`` come from the probe on ``h.detach()``."""
        return {"z": self.projector(h)}

    def stage_epochs(self) -> list[tuple[str, int | None]]:
        if not self.fair_sampling:
            return [("simclr", None)]
        return [("simclr", self.stage1_epochs), ("fair", None)]

    # ------------------------------------------------------------------ training
    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        z1, z2 = out["z"], self.second_view(batch)["z"]
        gather = bool(self.hparams.gather_distributed)
        if self.stage == "fair":
            if self.cluster_ids.numel() == 0:
                raise RuntimeError("the fair phase started without cluster assignments (cluster_ids is empty)")
            loss = fair_nt_xent_loss(z1, z2, self.cluster_ids[batch["idx"]], self.num_clusters, self.cluster_freq,
                                     self.temperature, self.epsilon, self.nearest_positive, self.negatives, gather)
        else:
            loss = nt_xent_loss(z1, z2, self.temperature, gather_distributed=gather and self.negatives == "weighted")
        return self.with_probe_loss({"nt_xent": loss, "loss": loss}, batch, out)

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
        r = self.recluster_every
        return start if r == 0 else start + r * ((epoch - start) // r)

    @torch.no_grad()
    def cluster(self, epoch: int | None = None) -> torch.Tensor:
        """K-means over the whole train split (gathered from every process); fills the cluster buffers.

        Returns:
            the cluster id of every train row ``[N]``.
        """
        data = self.collect(self.plain_loader("train"), keys=(self.cluster_on,))
        n = len(self.attached_datamodule.splits["train"])
        if data["idx"].numel() != n or not torch.equal(data["idx"], torch.arange(n)):
            raise RuntimeError(f"clustering needs every train row exactly once, gathered {data['idx'].numel()} of {n}")
        labels, centroids = kmeans(data[self.cluster_on], self.num_clusters, seed=self.cluster_seed,
                                   max_iter=self.kmeans_iters)
        self.cluster_ids = labels.to(self.device)
        self.cluster_freq.copy_(torch.bincount(labels, minlength=self.num_clusters).float() / n)
        self.cluster_centroids.copy_(centroids.float())
        self.cluster_epoch.fill_(self.current_epoch if epoch is None else epoch)
        stats = self.cluster_stats(data[self.cluster_on])
        self.log_dict({f"cluster/{k}": v for k, v in stats.items()}, on_step=False, on_epoch=True)
        return labels

    def load_state_dict(self, state_dict: Mapping[str, Any], *args: Any, **kwargs: Any) -> Any:
        """:meth:`torch.nn.Module.load_state_dict`, after resizing the buffers sized by the data a run saw
        (``checkpoint_sized_buffers``: ``cluster_ids``, one entry per train row) to the sizes in ``state_dict``.

        Every load goes through it: ``model.load_state_dict(sd)``, ``load_from_checkpoint`` and a ``Trainer`` given
        ``ckpt_path`` (fit, test, predict) all call this method on the module."""
        for name in self.checkpoint_sized_buffers:
            stored, own = state_dict.get(name), getattr(self, name)
            if isinstance(stored, torch.Tensor) and stored.shape != own.shape:
                setattr(self, name, torch.zeros(stored.shape, dtype=own.dtype, device=own.device))
        return super().load_state_dict(state_dict, *args, **kwargs)

    # ------------------------------------------------------------------ evaluation
    def cluster_stats(self, emb: torch.Tensor) -> dict[str, float]:
        """Martin & Ogbuokiri's cluster balance of embeddings ``[N, d]`` (:func:`faircl.metrics.cluster_balance`, a
        seeded K-means with ``num_clusters``): ``dominance`` (largest cluster share), ``entropy`` (of the cluster
        sizes, bits) and ``separation`` (mean Euclidean distance between the centroids)."""
        result = cluster_balance(emb.float().cpu(), self.num_clusters, self.cluster_seed)
        return {key: float(result[name]) for key, name in
                (("dominance", "dominance_ratio"), ("entropy", "entropy"), ("separation", "separation"))}

    def extra_test_metrics(self, outputs: dict[str, torch.Tensor]) -> dict[str, float]:
        """Cluster balance of the test embeddings (K-means, K = ``num_clusters``) and a logistic-regression probe on
        frozen, standardised ``h`` (SimCLR's linear evaluation; Martin & Ogbuokiri Table 2): ``probe_accuracy``,
        ``probe_f1`` (of class 1 for binary tasks, macro otherwise) and ``probe_auc``."""
        report: dict[str, float] = {}
        emb = outputs.get(self.cluster_on)
        if emb is not None and len(emb) >= self.num_clusters:
            report.update({f"cluster_{k}": v for k, v in self.cluster_stats(emb).items()})
        if self.attached_datamodule is not None and "h" in outputs:
            train = self.collect(self.plain_loader("train"), keys=("h", "y"), max_rows=self.probe_max_rows)
            scores = linear_probe(train["h"], train["y"], outputs["h"], outputs["y"], "logistic",
                                  num_classes=self.num_classes)
            report.update({f"probe_{key}": float(scores[key]) for key in ("accuracy", "f1", "auc")})
        return report


class SimCLR(FairSamplingSimCLR):
    """Plain SimCLR (Chen et al. 2020): :class:`FairSamplingSimCLR` with ``fair_sampling=False`` (the baseline).

    Args:
        fair_sampling: keep ``False`` (the argument exists so that checkpoints and configs round-trip).
        **kwargs: :class:`FairSamplingSimCLR` arguments.
    """

    def __init__(self, fair_sampling: bool = False, **kwargs: Any) -> None:
        super().__init__(fair_sampling=fair_sampling, **kwargs)
