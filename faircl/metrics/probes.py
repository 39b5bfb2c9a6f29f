"""Linear probes on frozen representations: logistic regression or linear SVM (scikit-learn).

One probe serves every linear read-out of the package: Leakage@h / Leakage@ŷ (Shen et al. 2021: linear SVM,
C = 0.1, class-balanced), the finDML downstream logistic regression (Dullerud et al. 2022), the linear evaluation
of SimCLR features (Martin & Ogbuokiri), the utility probe of the CCD paper and the classifiers of INLP
(Ravfogel et al. 2020), which read the probe's ``coef_``.

* :func:`make_probe` builds an unfitted estimator (standardisation + classifier, or the bare classifier);
* :func:`fit_probe` fits it on training rows (unknown labels ``-1`` dropped, optional canonical row order and seeded
  row cap ``max_rows``);
* :func:`probe_accuracy` / :func:`probe_scores` score a fitted probe; :func:`linear_probe` does fit + score;
  :func:`cross_val_probe` gives stratified k-fold accuracy.

Inputs are tensors or numpy arrays; features ``[N, D]`` are read as float64.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from torch import Tensor

from faircl._checks import check_choice, check_finite, check_positive, check_same_length
from faircl.metrics._order import canonical_order

__all__ = [
    "PROBES",
    "cross_val_probe",
    "fit_probe",
    "linear_probe",
    "make_probe",
    "probe_accuracy",
    "probe_scores",
    "to_numpy",
]

PROBES = ("logistic", "svm")
"""``logistic``: ``LogisticRegression``; ``svm``: ``LinearSVC`` (liblinear)."""


def to_numpy(x: Tensor | np.ndarray | Any, name: str, ndim: int) -> np.ndarray:
    """``x`` as a numpy array (float64 features / int64 ids) with ``ndim`` dimensions; features must be finite."""
    if isinstance(x, Tensor):
        x = x.detach().cpu()
        x = x.double() if x.is_floating_point() else x.long()
        x = x.numpy()
    x = np.asarray(x)
    if x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s) ({'[N, D]' if ndim == 2 else '[N]'}), "
                         f"got shape {x.shape}")
    if ndim == 2:
        check_finite(name, x)
    return x


def make_probe(kind: str = "logistic", *, C: float = 1.0, class_weight: str | None = None,
               standardize: bool = True, seed: int = 0, max_iter: int = 2000):
    """An unfitted linear probe: ``StandardScaler → classifier`` (a ``Pipeline``), or the classifier alone.

    Args:
        kind: ``logistic`` or ``svm`` (:data:`PROBES`).
        C: inverse regularisation strength.
        class_weight: ``None`` or ``"balanced"``.
        standardize: standardise the features with the training statistics first. Without it the classifier's
            ``coef_`` are directions in the input space (what INLP needs).
        seed: ``random_state`` of the solver.
        max_iter: solver iterations.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    check_choice("kind", kind, PROBES)
    check_positive("C", C)
    if kind == "svm":
        clf = LinearSVC(C=C, class_weight=class_weight, random_state=seed, max_iter=max_iter)
    else:
        clf = LogisticRegression(C=C, class_weight=class_weight, random_state=seed, max_iter=max_iter)
    return make_pipeline(StandardScaler(), clf) if standardize else clf


def _subset(n: int, max_rows: int | None, seed: int) -> np.ndarray | None:
    if max_rows is None or n <= max_rows:
        return None
    return np.sort(np.random.default_rng(seed).choice(n, size=max_rows, replace=False))


def fit_probe(features: Tensor | np.ndarray, labels: Tensor | np.ndarray, kind: str = "logistic", *,
              C: float = 1.0, class_weight: str | None = None, standardize: bool = True,
              max_rows: int | None = None, seed: int = 0, max_iter: int = 2000, canonical: bool = False,
              name: str = "labels"):
    """Fit a linear probe predicting ``labels`` from ``features`` (see :func:`make_probe` for the options).

    Args:
        features: ``[N, D]``; labels: ``[N]`` integer ids, rows with ``-1`` are ignored.
        max_rows: fit on a random subset of at most this many (known) rows, drawn with ``seed``.
        canonical: put the rows in a canonical order first (:func:`faircl.metrics._order.canonical_order`), so the
            fit does not depend on how the rows were gathered (e.g. across processes).
        name: how ``labels`` is called in error messages.

    Returns:
        The fitted scikit-learn estimator.

    Raises:
        ValueError: shapes disagree, a non-finite feature, or fewer than two distinct known labels.
    """
    x = to_numpy(features, "features", 2)
    y = to_numpy(labels, name, 1)
    check_same_length(**{"features": x, name: y})
    if y.size and y.min() < -1:
        row = int(np.argmax(y < -1))
        raise ValueError(f"{name} contains {int(y[row])} at row {row}; expected -1 (unknown) or an id >= 0")
    known = y >= 0
    x, y = x[known], y[known]
    if canonical:
        order = canonical_order(x, y)
        x, y = x[order], y[order]
    keep = _subset(len(y), max_rows, seed)
    if keep is not None:
        x, y = x[keep], y[keep]
    if len(np.unique(y)) < 2:
        raise ValueError(f"{name} must hold at least two distinct known groups (classes) to fit a probe, got "
                         f"{np.unique(y).tolist()} over {len(y)} known rows")
    from sklearn.exceptions import ConvergenceWarning

    probe = make_probe(kind, C=C, class_weight=class_weight, standardize=standardize, seed=seed, max_iter=max_iter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        probe.fit(x, y)
    return probe


def probe_accuracy(probe: Any, features: Tensor | np.ndarray, labels: Tensor | np.ndarray) -> float:
    """Accuracy of a fitted probe on the rows with a known label (``-1`` rows ignored); NaN when there is none."""
    x = to_numpy(features, "features", 2)
    y = to_numpy(labels, "labels", 1)
    check_same_length(features=x, labels=y)
    known = y >= 0
    if not known.any():
        return float("nan")
    return float(np.mean(probe.predict(x[known]) == y[known]))


def probe_scores(probe: Any, features: Tensor | np.ndarray, labels: Tensor | np.ndarray,
                 num_classes: int | None = None) -> dict[str, float]:
    """``accuracy``, ``f1`` and ``auc`` of a fitted probe on ``(features, labels)``.

    F1 is that of class 1 for two classes and macro-F1 otherwise. AUC is the ROC-AUC of class 1 (two classes) or the
    one-vs-rest macro AUC; it needs probabilities (logistic probes) and every class present in ``labels``, else NaN.
    """
    from sklearn.metrics import f1_score, roc_auc_score

    x = to_numpy(features, "features", 2)
    y = to_numpy(labels, "labels", 1)
    check_same_length(features=x, labels=y)
    if len(y) == 0:
        return {"accuracy": float("nan"), "f1": float("nan"), "auc": float("nan")}
    classes = np.asarray(probe.classes_)
    num_classes = int(num_classes) if num_classes is not None else int(max(classes.max(), y.max())) + 1
    pred = probe.predict(x)
    binary = num_classes == 2
    f1 = f1_score(y, pred, average="binary" if binary else "macro",
                  labels=None if binary else list(range(num_classes)), zero_division=0)
    auc = float("nan")
    if hasattr(probe, "predict_proba") and len(np.unique(y)) == num_classes:
        proba = np.zeros((len(x), num_classes))
        proba[:, classes] = probe.predict_proba(x)
        auc = roc_auc_score(y, proba[:, 1]) if binary else roc_auc_score(y, proba, multi_class="ovr",
                                                                          labels=list(range(num_classes)))
    return {"accuracy": float(np.mean(pred == y)), "f1": float(f1), "auc": float(auc)}


def linear_probe(train_features: Tensor | np.ndarray, train_labels: Tensor | np.ndarray,
                 test_features: Tensor | np.ndarray, test_labels: Tensor | np.ndarray, kind: str = "logistic", *,
                 num_classes: int | None = None, C: float = 1.0, class_weight: str | None = None,
                 standardize: bool = True, max_rows: int | None = None, seed: int = 0,
                 max_iter: int = 2000) -> dict[str, float]:
    """Fit a probe on the train rows and return :func:`probe_scores` on the test rows.

    All three scores are NaN when the train labels hold fewer than two classes (no probe can be fitted).
    """
    y = to_numpy(train_labels, "train_labels", 1)
    if len(np.unique(y[y >= 0])) < 2:
        return {"accuracy": float("nan"), "f1": float("nan"), "auc": float("nan")}
    probe = fit_probe(train_features, y, kind, C=C, class_weight=class_weight, standardize=standardize,
                      max_rows=max_rows, seed=seed, max_iter=max_iter, name="train_labels")
    return probe_scores(probe, test_features, test_labels, num_classes)


def cross_val_probe(features: Tensor | np.ndarray, labels: Any, kind: str = "logistic", *, folds: int = 5,
                    C: float = 1.0, class_weight: str | None = None, standardize: bool = True, seed: int = 0,
                    max_iter: int = 2000) -> tuple[float, float]:
    """Stratified ``folds``-fold accuracy of a probe: ``(mean, std)`` over the folds (labels may be strings)."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    x = to_numpy(features, "features", 2)
    y = np.asarray(labels)
    check_same_length(features=x, labels=y)
    probe = make_probe(kind, C=C, class_weight=class_weight, standardize=standardize, seed=seed, max_iter=max_iter)
    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    acc = cross_val_score(probe, x, y, cv=cv, scoring="accuracy")
    return float(acc.mean()), float(acc.std())
