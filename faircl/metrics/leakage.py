"""Linear leakage of a protected attribute (Shen et al. 2021, §"Evaluation metrics": Leakage@h and Leakage@ŷ)."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from faircl.metrics._order import canonical_order

__all__ = ["LinearLeakage", "fit_leakage_probe", "linear_leakage"]


def _to_numpy(x: Tensor | np.ndarray, name: str, ndim: int) -> np.ndarray:
    if isinstance(x, Tensor):
        x = x.detach().cpu()
        x = x.double() if x.is_floating_point() else x.long()
        x = x.numpy()
    x = np.asarray(x)
    if x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s) ({'[N, D]' if ndim == 2 else '[N]'}), "
                         f"got shape {x.shape}")
    if ndim == 2 and not np.isfinite(x).all():
        row = int(np.argwhere(~np.isfinite(x))[0, 0])
        raise ValueError(f"{name} contains a non-finite value at row {row}")
    return x


def _check_pair(x: np.ndarray, a: np.ndarray, xname: str, aname: str) -> None:
    if x.shape[0] != a.shape[0]:
        raise ValueError(f"{xname} and {aname} must have the same number of rows, got {x.shape[0]} and {a.shape[0]}")
    if a.size and a.min() < -1:
        row = int(np.argmax(a < -1))
        raise ValueError(f"{aname} contains {int(a[row])} at row {row}; expected -1 (unknown) or a group id >= 0")


def fit_leakage_probe(train_x: Tensor | np.ndarray, train_a: Tensor | np.ndarray, C: float = 0.1,
                      max_train: int | None = None, random_state: int = 0, max_iter: int = 2000):
    """Fit the attacker of Leakage@h / Leakage@ŷ: standardisation + linear SVM (``C``, class-balanced).

    Args:
        train_x: training representations ``[N, D]`` (hidden states ``h`` or logits).
        train_a: their protected attribute ``[N]``; rows with ``-1`` are ignored.
        C: SVM regularisation (0.1 as in the paper's code).
        max_train: if set, fit on a random subset of this many rows (seeded by ``random_state``).
        random_state: seed of the subset and of liblinear.
        max_iter: liblinear iterations.

    Returns:
        A fitted scikit-learn ``Pipeline``.
    """
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    x = _to_numpy(train_x, "train_features", 2)
    a = _to_numpy(train_a, "train_groups", 1)
    _check_pair(x, a, "train_features", "train_groups")
    known = a >= 0
    x, a = x[known], a[known]
    # a canonical row order makes the fit independent of how the rows were gathered
    order = canonical_order(x, a)
    x, a = x[order], a[order]
    if max_train is not None and len(a) > max_train:
        keep = np.sort(np.random.default_rng(random_state).choice(len(a), size=max_train, replace=False))
        x, a = x[keep], a[keep]
    if len(np.unique(a)) < 2:
        raise ValueError(f"train_groups must hold at least two distinct known groups to fit a leakage probe, got "
                         f"{np.unique(a).tolist()} over {len(a)} known rows")
    probe = make_pipeline(StandardScaler(),
                          LinearSVC(C=C, class_weight="balanced", random_state=random_state, max_iter=max_iter))
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        probe.fit(x, a)
    return probe


def _probe_accuracy(probe, x: np.ndarray, a: np.ndarray) -> float:
    known = a >= 0
    if not known.any():
        return float("nan")
    return float(np.mean(probe.predict(x[known]) == a[known]))


def linear_leakage(train_x: Tensor | np.ndarray, train_a: Tensor | np.ndarray, test_x: Tensor | np.ndarray,
                   test_a: Tensor | np.ndarray, C: float = 0.1, max_train: int | None = None,
                   random_state: int = 0) -> float:
    """Leakage: accuracy on ``(test_x, test_a)`` of a linear SVM fit on ``(train_x, train_a)`` to predict ``a``.

    Rows with attribute ``-1`` are ignored on both sides. 0.5 is chance for a balanced binary attribute; NaN when the
    test split has no known attribute.
    """
    probe = fit_leakage_probe(train_x, train_a, C=C, max_train=max_train, random_state=random_state)
    x = _to_numpy(test_x, "features", 2)
    a = _to_numpy(test_a, "groups", 1)
    _check_pair(x, a, "features", "groups")
    return _probe_accuracy(probe, x, a)


class LinearLeakage(Metric):
    """Leakage@h / Leakage@ŷ (Shen et al. 2021) as a metric.

    Call :meth:`fit` once with the *training* representations (every process with the same rows, e.g. from
    ``FairModule.collect``), then :meth:`update` with evaluation batches; the evaluation rows are ``cat`` states, so
    under DDP :meth:`compute` scores the rows of all processes. The probe (standardisation + linear SVM, C = 0.1,
    class-balanced, fixed ``random_state``) is deterministic, so every process computes the same value.

    Args:
        C: SVM regularisation.
        max_train: optional cap on the training rows (random subset, seeded).
        random_state: seed.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    def __init__(self, C: float = 0.1, max_train: int | None = None, random_state: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        if C <= 0:
            raise ValueError(f"C must be > 0, got {C}")
        if max_train is not None and max_train < 2:
            raise ValueError(f"max_train must be >= 2 or None, got {max_train}")
        self.C = C
        self.max_train = max_train
        self.random_state = random_state
        self.probe = None
        self.add_state("features", default=[], dist_reduce_fx="cat")
        self.add_state("groups", default=[], dist_reduce_fx="cat")

    def fit(self, train_features: Tensor, train_groups: Tensor) -> LinearLeakage:
        """Fit the probe on training representations ``[N, D]`` and attributes ``[N]`` (``-1`` rows ignored)."""
        self.probe = fit_leakage_probe(train_features, train_groups, C=self.C, max_train=self.max_train,
                                       random_state=self.random_state)
        return self

    def update(self, features: Tensor, groups: Tensor) -> None:
        """Accumulate evaluation representations ``[N, D]`` (any float dtype) and attributes ``[N]``."""
        if not isinstance(features, Tensor) or features.ndim != 2:
            raise ValueError(f"features must be a tensor of shape [N, D], got "
                             f"{tuple(features.shape) if isinstance(features, Tensor) else type(features).__name__}")
        if not isinstance(groups, Tensor) or groups.ndim != 1 or groups.is_floating_point():
            raise ValueError("groups must be an integer tensor of shape [N]")
        if features.shape[0] != groups.shape[0]:
            raise ValueError(f"features and groups must have the same number of rows, got {features.shape[0]} and "
                             f"{groups.shape[0]}")
        self.features.append(features.detach().float())
        self.groups.append(groups.detach().long())

    def compute(self) -> Tensor:
        """Probe accuracy on the accumulated rows with a known attribute (float64 scalar; NaN if none)."""
        if self.probe is None:
            raise RuntimeError("LinearLeakage.compute() needs a fitted probe: call fit(train_features, "
                               "train_groups) first")
        if isinstance(self.features, list) and not self.features:
            return torch.tensor(float("nan"), dtype=torch.float64)
        x = _to_numpy(dim_zero_cat(self.features), "features", 2)
        a = _to_numpy(dim_zero_cat(self.groups), "groups", 1)
        return torch.tensor(_probe_accuracy(self.probe, x, a), dtype=torch.float64)
