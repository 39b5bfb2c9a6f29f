"""Linear leakage of a protected attribute (Shen et al. 2021, §"Evaluation metrics": Leakage@h and Leakage@ŷ)."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from faircl._checks import check_embeddings, check_ids, check_positive, check_same_length
from faircl.metrics.probes import fit_probe, probe_accuracy

__all__ = ["LinearLeakage", "fit_leakage_probe", "linear_leakage"]


def fit_leakage_probe(train_features: Tensor | np.ndarray, train_groups: Tensor | np.ndarray, C: float = 0.1,
                      max_rows: int | None = None, seed: int = 0, max_iter: int = 2000):
    """Fit the attacker of Leakage@h / Leakage@ŷ: standardisation + linear SVM (``C``, class-balanced).

    The probe of :mod:`faircl.metrics.probes` with the paper's settings, fitted on the rows in a canonical order
    (independent of how they were gathered).

    Args:
        train_features: training representations ``[N, D]`` (hidden states ``h`` or logits).
        train_groups: their protected attribute ``[N]``; rows with ``-1`` are ignored.
        C: SVM regularisation (0.1 as in the paper's code).
        max_rows: if set, fit on a random subset of this many rows (seeded by ``seed``).
        seed: seed of the subset and of liblinear.
        max_iter: liblinear iterations.

    Returns:
        A fitted scikit-learn ``Pipeline``.
    """
    return fit_probe(train_features, train_groups, "svm", C=C, class_weight="balanced", max_rows=max_rows,
                     seed=seed, max_iter=max_iter, canonical=True, name="train_groups")


def linear_leakage(train_features: Tensor | np.ndarray, train_groups: Tensor | np.ndarray,
                   test_features: Tensor | np.ndarray, test_groups: Tensor | np.ndarray, C: float = 0.1,
                   max_rows: int | None = None, seed: int = 0) -> float:
    """Leakage: accuracy on the test rows of a linear SVM fit on the train rows to predict the attribute.

    Rows with attribute ``-1`` are ignored on both sides. 0.5 is chance for a balanced binary attribute; NaN when the
    test split has no known attribute.

    Examples:
        The attribute is the sign of the first feature: a linear probe recovers it from the test rows.


        >>> import torch
        >>> from faircl.metrics import linear_leakage
        >>> g = torch.Generator().manual_seed(0)
        >>> x = torch.randn(200, 4, generator=g)
        >>> a = (x[:, 0] > 0).long()
        >>> linear_leakage(x[:100], a[:100], x[100:], a[100:]) > 0.9
        True
        >>> linear_leakage(x[:100, 1:], a[:100], x[100:, 1:], a[100:]) < 0.7   # without that feature: near chance
        True
    """
    probe = fit_leakage_probe(train_features, train_groups, C=C, max_rows=max_rows, seed=seed)
    return probe_accuracy(probe, test_features, test_groups)


class LinearLeakage(Metric):
    """Leakage@h / Leakage@ŷ (Shen et al. 2021) as a metric.

    Call :meth:`fit` once with the *training* representations (every process with the same rows, e.g. from
    ``FairModule.collect``), then :meth:`update` with evaluation batches; the evaluation rows are ``cat`` states, so
    under DDP :meth:`compute` scores the rows of all processes. The probe (standardisation + linear SVM, C = 0.1,
    class-balanced, fixed ``seed``) is deterministic, so every process computes the same value.

    Args:
        C: SVM regularisation.
        max_rows: optional cap on the training rows (random subset, seeded).
        seed: seed of the subset and of the solver.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    def __init__(self, C: float = 0.1, max_rows: int | None = None, seed: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        check_positive("C", C)
        if max_rows is not None:
            check_positive("max_rows", max_rows, minimum=2)
        self.C = C
        self.max_rows = max_rows
        self.seed = seed
        self.probe = None
        self.add_state("features", default=[], dist_reduce_fx="cat")
        self.add_state("groups", default=[], dist_reduce_fx="cat")

    def fit(self, train_features: Tensor, train_groups: Tensor) -> LinearLeakage:
        """Fit the probe on training representations ``[N, D]`` and attributes ``[N]`` (``-1`` rows ignored)."""
        self.probe = fit_leakage_probe(train_features, train_groups, C=self.C, max_rows=self.max_rows,
                                       seed=self.seed)
        return self

    def update(self, features: Tensor, groups: Tensor) -> None:
        """Accumulate evaluation representations ``[N, D]`` (any float dtype) and attributes ``[N]``."""
        check_embeddings("features", features)
        groups = check_ids("groups", groups, allow_unknown=True)
        check_same_length(features=features, groups=groups)
        self.features.append(features.detach().float())
        self.groups.append(groups.detach())

    def compute(self) -> Tensor:
        """Probe accuracy on the accumulated rows with a known attribute (float64 scalar; NaN if none)."""
        if self.probe is None:
            raise RuntimeError("LinearLeakage.compute() needs a fitted probe: call fit(train_features, "
                               "train_groups) first")
        if isinstance(self.features, list) and not self.features:
            return torch.tensor(float("nan"), dtype=torch.float64)
        accuracy = probe_accuracy(self.probe, dim_zero_cat(self.features), dim_zero_cat(self.groups))
        return torch.tensor(accuracy, dtype=torch.float64)
