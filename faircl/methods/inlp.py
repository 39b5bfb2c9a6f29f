"""Iterative Nullspace Projection (Ravfogel et al. 2020), the post-hoc baseline of Chi et al. 2022 and Shen et al.
2021."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from faircl._checks import check_choice, check_positive
from faircl.checkpoints import check_checkpoint
from faircl.methods.base import FairModule
from faircl.metrics.probes import fit_probe, probe_accuracy
from faircl.utils import rank_tolerance

PROBES = ("svm", "logistic")


def nullspace_projection(directions: np.ndarray, dim: int) -> np.ndarray:
    """``P = I − B Bᵀ`` with ``B`` an orthonormal basis of the row space of ``directions`` ``[k, dim]``.

    ``P`` is the orthogonal projection onto the intersection of the classifiers' nullspaces (Ravfogel et al. eq. 3):
    every direction in ``directions`` is mapped to zero. The rank of ``directions`` is decided with the tolerance of
    ``torch.linalg.matrix_rank`` (:func:`faircl.utils.rank_tolerance`: singular values ``<= max(k, dim)·eps·σ_max``
    are zero), so a direction that repeats others up to round-off adds nothing, on any CPU.
    """
    eye = np.eye(dim)
    if len(directions) == 0:
        return eye
    d = np.asarray(directions, dtype=np.float64)
    u, s, _ = np.linalg.svd(d.T, full_matrices=False)
    basis = u[:, s > rank_tolerance(s.max(), d.shape, np.finfo(np.float64).eps)]  # [dim, rank]
    return eye - basis @ basis.T


def inlp_projection(
    h: np.ndarray,
    a: np.ndarray,
    y: np.ndarray | None = None,
    n_clf: int = 20,
    probe: str = "svm",
    probe_c: float = 1.0,
    min_accuracy: float = 0.0,
    seed: int = 0,
    max_iter: int = 2000,
) -> tuple[np.ndarray, list[float]]:
    """Iterative nullspace projection (Ravfogel et al. 2020, Algorithm 1).

    Round ``t``: fit a linear classifier ``W_t`` for ``a`` on ``h P_{t−1}``, add its rows to the removed
    directions and set ``P_t`` = projection onto the nullspace of all directions so far. With ``y`` given (the
    equalized-odds variant), each round fits one classifier per task class on that class's rows.

    Args:
        h: representations ``[N, d]``.
        a: attributes ``[N]`` (rows with ``a < 0`` are ignored).
        y: task labels ``[N]`` for the per-class variant, or ``None``.
        n_clf: number of rounds N_clf.
        probe: ``svm`` (``LinearSVC``) or ``logistic`` (``LogisticRegression``).
        probe_c: inverse regularisation strength of the probes.
        min_accuracy: stop early once every classifier of a round scores below this train accuracy (``0`` never).
        seed: random state of the probes.
        max_iter: iterations of each probe's solver.

    Returns:
        ``(P [d, d], accuracies)`` — the symmetric projection and each round's mean probe accuracy (before removal).
    """
    check_choice("probe", probe, PROBES)
    h = np.asarray(h, dtype=np.float64)
    a = np.asarray(a)
    keep = a >= 0
    h, a = h[keep], a[keep]
    if y is not None:
        y = np.asarray(y)[keep]
    dim = h.shape[1]
    subsets = [np.ones(len(a), bool)] if y is None else [y == c for c in np.unique(y)]
    directions: list[np.ndarray] = []
    proj = np.eye(dim)
    accuracies: list[float] = []
    for t in range(n_clf):
        round_acc = []
        for rows in subsets:
            if len(np.unique(a[rows])) < 2:
                continue
            x = h[rows] @ proj
            clf = fit_probe(x, a[rows], probe, C=probe_c, standardize=False, seed=seed + t, max_iter=max_iter,
                            name="a")
            round_acc.append(probe_accuracy(clf, x, a[rows]))
            directions.extend(np.atleast_2d(clf.coef_))
        if not round_acc:
            break
        accuracies.append(float(np.mean(round_acc)))
        proj = nullspace_projection(np.stack(directions), dim)
        if min_accuracy > 0 and max(round_acc) < min_accuracy:
            break
    return proj, accuracies


class INLP(FairModule):
    """Encoder → nullspace projection ``P`` → classifier, with ``P`` fitted by iterative linear probes for ``a``.

    Stages: ``pretrain`` (``stage1_epochs`` of cross-entropy on encoder + classifier; skip with ``0`` when the
    encoder is already trained — ``encoder_checkpoint`` — or frozen), then ``project``: the encoder is frozen,
    ``h`` is collected over the train split, ``P`` is fitted (:func:`inlp_projection`, per class when
    ``per_class``), the classifier is re-initialised and trained with cross-entropy on ``P h`` for the remaining
    epochs. ``P`` is a registered buffer (saved in checkpoints) applied in ``forward``; ``h`` in the outputs is the
    projected representation (what the classifier sees).

    Under DDP the ``project`` stage freezes the encoder and the DDP wrapper is rebuilt over the classifier at the
    stage start, so plain ``--trainer.strategy ddp`` works (no ``find_unused_parameters``; tests/scale).

    Args:
        n_clf: number of INLP rounds N_clf (Chi grids: 20–400).
        per_class: fit the probes within each task class (the equalized-odds variant).
        probe: ``svm`` or ``logistic``.
        probe_c: inverse regularisation of the probes.
        min_accuracy: stop the rounds early when the probes fall below this train accuracy (``0`` never).
        max_rows: at most this many train rows to fit the probes (a seeded prefix of the train split).
        stage1_epochs: epochs of cross-entropy training before projecting (``0`` = project right away).
        encoder_checkpoint: optional Lightning checkpoint (e.g. of a trained ``CE``) whose ``encoder.*`` weights are
            loaded before training.
        seed: random state of the probes and of the classifier re-initialisation.
        **kwargs: :class:`~faircl.methods.base.FairModule` arguments.
    """

    def __init__(
        self,
        n_clf: int = 20,
        per_class: bool = False,
        probe: Literal["svm", "logistic"] = "svm",
        probe_c: float = 1.0,
        min_accuracy: float = 0.0,
        max_rows: int = 20000,
        stage1_epochs: int = 5,
        encoder_checkpoint: str | None = None,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        check_positive("n_clf", n_clf, minimum=1)
        check_choice("probe", probe, PROBES)
        check_positive("probe_c", probe_c)
        check_positive("stage1_epochs", stage1_epochs, strict=False)
        super().__init__(**kwargs)
        self.n_clf, self.per_class, self.probe, self.probe_c = n_clf, per_class, probe, probe_c
        self.min_accuracy, self.max_rows, self.stage1_epochs = min_accuracy, max_rows, stage1_epochs
        self.encoder_checkpoint, self.seed = encoder_checkpoint, seed
        d = self.encoder.out_dim
        self.register_buffer("projection", torch.eye(d))
        self.register_buffer("projection_fitted", torch.tensor(False))
        self.probe_accuracies: list[float] = []
        if encoder_checkpoint is not None:
            self.load_encoder(encoder_checkpoint)

    def load_encoder(self, path: str) -> None:
        """Load the ``encoder.*`` weights of a Lightning checkpoint (any faircl method with the same encoder)."""
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"encoder_checkpoint {str(p)!r} not found (a .ckpt written by `faircl fit`)")
        state = check_checkpoint(p)["state_dict"]
        enc = {k[len("encoder."):]: v for k, v in state.items() if k.startswith("encoder.")}
        if not enc:
            raise ValueError(f"encoder_checkpoint {str(p)!r} holds no 'encoder.*' weights")
        self.encoder.load_state_dict(enc)

    def encode(self, x: Any) -> torch.Tensor:
        """``P h``: the encoder output projected onto the nullspace of the attribute probes."""
        h = self.encoder(x)
        return h @ self.projection.to(h.dtype)

    def stage_epochs(self) -> list[tuple[str, int | None]]:
        if self.stage1_epochs == 0:
            return [("project", None)]
        return [("pretrain", self.stage1_epochs), ("project", None)]

    def on_stage_start(self, stage: str) -> None:
        if stage != "project":
            return
        self.freeze_module(self.encoder)
        if bool(self.projection_fitted):
            return  # resumed after the projection was fitted: it is in the checkpoint
        self.fit_projection()
        # Re-initialise the classifier from a fixed seed so every DDP process holds the same weights.
        gen = torch.Generator().manual_seed(self.seed)
        for m in self.classifier.modules():
            if isinstance(m, nn.Linear):
                bound = 1.0 / m.in_features**0.5
                with torch.no_grad():
                    m.weight.copy_(torch.empty(m.weight.shape).uniform_(-bound, bound, generator=gen))
                    m.bias.copy_(torch.empty(m.bias.shape).uniform_(-bound, bound, generator=gen))
        if self._trainer is not None:
            for opt in self.trainer.optimizers:
                for p in self.classifier.parameters():
                    opt.state.pop(p, None)

    def fit_projection(self, loader: Any = None) -> None:
        """Collect ``h`` over the train split (or ``loader``) and fit ``P`` (stored in the ``projection`` buffer)."""
        if loader is None:
            loader = self.plain_loader("train")
        self.projection.copy_(torch.eye(self.projection.shape[0]))
        data = self.collect(loader, keys=("h", "y", "a"), max_rows=self.max_rows)
        proj, acc = inlp_projection(data["h"].numpy(), data["a"].numpy(),
                                    data["y"].numpy() if self.per_class else None, n_clf=self.n_clf,
                                    probe=self.probe, probe_c=self.probe_c, min_accuracy=self.min_accuracy,
                                    seed=self.seed)
        self.projection.copy_(torch.as_tensor(proj, dtype=self.projection.dtype))
        self.projection_fitted.fill_(True)
        self.probe_accuracies = acc
        if acc:
            self.log("inlp/first_probe_acc", acc[0])
            self.log("inlp/last_probe_acc", acc[-1])
