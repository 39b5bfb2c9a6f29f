"""The finDML benchmark on frozen embeddings (Dullerud et al., ICLR 2022, §3.2 and §5).

Two halves:

* **Representation space** — per-group Recall@k (Definition 1, k-close fairness), NMI of a K-means clustering
  restricted to each group, and U_KL = KL(uniform ‖ normalised singular values of the group's embeddings)
  (Definition 3), computed by :mod:`faircl.metrics` on the *test* embeddings, with their gaps.
* **Downstream** — logistic regression, SVM, K-means and random forest (scikit-learn, seeded) trained on the frozen
  *train* embeddings (optionally a re-balanced, or the original balanced, train set: §6.2 "naive re-balancing
  downstream"), scored on the test embeddings: per-group accuracy and macro precision / recall, and their gaps.

Gaps (:mod:`faircl.metrics.gaps`): ``majority_minority`` (largest − smallest group), ``worst_vs_rest``,
``top_vs_bottom_half`` (id order: e.g. the 3 lightest vs the 3 darkest skin tones), and — when the minoritised
groups are known, e.g. the groups shrunk by ``induce_imbalance`` — ``minority``: the size-weighted mean over the
other groups minus the size-weighted mean over the minoritised ones (the paper's "minoritized vs majoritized").
Positive gaps mean the minoritised / smaller / worse groups are behind (for U_KL, lower is better, so its
``minority`` gap is ``U_KL(minority) − U_KL(rest)``).

Command (one run of the whole benchmark for a checkpoint)::

    python -m faircl.eval.findml --ckpt runs/.../last.ckpt --config configs/parade/utkface.yaml --out report_dir
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from faircl._checks import check_choice, check_finite
from faircl.checkpoints import check_checkpoint
from faircl.data import DATAMODULES
from faircl.eval.report import print_report, write_report
from faircl.methods import METHODS
from faircl.metrics import gaps as G
from faircl.metrics.clustering import kmeans
from faircl.metrics.probes import make_probe
from faircl.metrics.representation import representation_report
from faircl.utils import per_group_items

__all__ = ["CLASSIFIERS", "evaluate_embeddings", "representation_report", "downstream_metrics", "rebalance_rows",
           "group_scores", "minority_gap", "main"]

CLASSIFIERS = ("lr", "svm", "kmeans", "rf")
REBALANCE = ("none", "class", "group", "cell")


def _np(x: Any, dtype=None) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=dtype)


def _check(emb: np.ndarray, labels: np.ndarray, groups: np.ndarray, name: str) -> None:
    if emb.ndim != 2:
        raise ValueError(f"{name}_emb must be [N, d], got shape {emb.shape}")
    if len(labels) != len(emb) or len(groups) != len(emb):
        raise ValueError(f"{name}: emb has {len(emb)} rows but y has {len(labels)} and a has {len(groups)}")
    if len(emb) == 0:
        raise ValueError(f"{name}: no rows")
    check_finite(f"{name}_emb", emb)


def minority_gap(values: Sequence[float], sizes: Sequence[float], minority: Sequence[int],
                 higher_is_better: bool = True) -> float:
    """``mean(rest) − mean(minority)`` as a float (:func:`faircl.metrics.gaps.minority_gap`)."""
    return float(G.minority_gap(torch.as_tensor(values, dtype=torch.float64),
                                torch.as_tensor(sizes, dtype=torch.float64), minority, higher_is_better))


def _gaps(prefix: str, per_group: np.ndarray, sizes: np.ndarray, higher_is_better: bool,
          minority: Sequence[int] | None) -> dict[str, float]:
    gaps = G.all_gaps(torch.as_tensor(per_group), torch.as_tensor(sizes), higher_is_better=higher_is_better,
                      prefix=f"{prefix}_gap", minority=minority)
    return {k: float(v) for k, v in gaps.items()}


# ---------------------------------------------------------------------------------------------- downstream
def rebalance_rows(y: np.ndarray, a: np.ndarray, by: str = "cell", seed: int = 0) -> np.ndarray:
    """Row indices of a re-balanced copy: every class / group / (class, group) cell undersampled to the smallest
    non-empty one (seeded). ``by="none"`` keeps every row. Rows with unknown ``a`` are dropped unless ``by="class"``.
    """
    check_choice("rebalance", by, REBALANCE)
    if by == "none":
        return np.arange(len(y))
    rng = np.random.default_rng([int(seed), 49979687])
    if by == "class":
        key = y
        valid = np.ones(len(y), dtype=bool)
    else:
        valid = a >= 0
        key = a if by == "group" else y * (int(a.max(initial=0)) + 1) + a
    cells = [np.flatnonzero(valid & (key == k)) for k in np.unique(key[valid])]
    n = min(len(c) for c in cells)
    return np.sort(np.concatenate([rng.choice(c, size=n, replace=False) for c in cells]))


def _make_classifier(name: str, seed: int, num_classes: int):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    if name == "lr":
        return make_probe("logistic", C=1.0, seed=seed)
    if name == "svm":
        return make_pipeline(StandardScaler(), SVC(kernel="rbf", C=1.0, random_state=seed))
    if name == "rf":
        return RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=1)
    if name == "kmeans":
        return _KMeansClassifier(num_classes, seed)
    raise ValueError(f"unknown downstream classifier {name!r}; choose from {CLASSIFIERS}")


class _KMeansClassifier:
    """K-means (:func:`faircl.metrics.clustering.kmeans`, 10 restarts) with K = number of classes; each cluster
    predicts the majority train class of its members, a test row the class of its nearest centroid."""

    def __init__(self, num_clusters: int, seed: int) -> None:
        self.num_clusters, self.seed = num_clusters, seed
        self.centroids: torch.Tensor | None = None
        self.label_of: np.ndarray | None = None

    def fit(self, x: np.ndarray, y: np.ndarray) -> _KMeansClassifier:
        k = min(self.num_clusters, len(x))
        clusters, self.centroids = kmeans(torch.as_tensor(x, dtype=torch.float64), k, seed=self.seed, n_init=10,
                                          canonical=True)
        clusters = clusters.numpy()
        fallback = np.bincount(y).argmax()
        self.label_of = np.array([np.bincount(y[clusters == c]).argmax() if (clusters == c).any() else fallback
                                  for c in range(k)])
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        nearest = torch.cdist(torch.as_tensor(x, dtype=torch.float64), self.centroids).argmin(1).numpy()
        return self.label_of[nearest]


def group_scores(y_true: np.ndarray, y_pred: np.ndarray, a: np.ndarray, num_groups: int
                 ) -> dict[str, tuple[float, np.ndarray]]:
    """Accuracy, macro precision and macro recall overall and per group.

    Macro averages run over the classes present in the rows' true labels (a class absent from a group's truth does
    not count as a zero); a predicted class never seen in the truth still lowers precision through its false
    positives only where it is a scored class. Empty groups are NaN.

    Returns:
        ``{"accuracy": (overall, per_group [G]), "precision": ..., "recall": ...}``.
    """
    from sklearn.metrics import precision_score, recall_score

    def scores(t: np.ndarray, p: np.ndarray) -> tuple[float, float, float]:
        if len(t) == 0:
            return float("nan"), float("nan"), float("nan")
        labels = np.unique(t)
        return (float(np.mean(t == p)),
                float(precision_score(t, p, labels=labels, average="macro", zero_division=0)),
                float(recall_score(t, p, labels=labels, average="macro", zero_division=0)))

    overall = scores(y_true, y_pred)
    per = np.array([scores(y_true[a == g], y_pred[a == g]) for g in range(num_groups)]).reshape(num_groups, 3)
    return {name: (overall[i], per[:, i]) for i, name in enumerate(("accuracy", "precision", "recall"))}


def downstream_metrics(
    train_emb: Any, train_y: Any, train_a: Any, test_emb: Any, test_y: Any, test_a: Any,
    *,
    num_classes: int,
    num_groups: int,
    group_names: Sequence[str],
    classifiers: Sequence[str] = CLASSIFIERS,
    rebalance: str = "none",
    minority_groups: Sequence[int] | None = None,
    seed: int = 0,
    max_rows: int | None = None,
) -> dict[str, float]:
    """Train each downstream classifier on the train embeddings and score it on the test embeddings.

    Returns:
        ``{"<clf>/accuracy": ..., "<clf>/accuracy/<group>": ..., "<clf>/accuracy_gap_<reducer>": ..., ...}`` for
        accuracy, macro precision and macro recall.
    """
    xtr, ytr, atr = _np(train_emb, np.float64), _np(train_y, np.int64), _np(train_a, np.int64)
    xte, yte, ate = _np(test_emb, np.float64), _np(test_y, np.int64), _np(test_a, np.int64)
    rows = rebalance_rows(ytr, atr, rebalance, seed)
    if max_rows is not None and len(rows) > max_rows:
        rows = np.sort(np.random.default_rng([int(seed), 86028121]).choice(rows, size=max_rows, replace=False))
    xtr, ytr = xtr[rows], ytr[rows]
    if len(np.unique(ytr)) < 2:
        raise ValueError("downstream training needs at least two classes in the (re-balanced) train embeddings")
    sizes = np.bincount(ate[ate >= 0], minlength=num_groups).astype(np.float64)
    report: dict[str, float] = {}
    for name in classifiers:
        clf = _make_classifier(name, seed, num_classes).fit(xtr, ytr)
        pred = np.asarray(clf.predict(xte))
        for metric, (overall, per_group) in group_scores(yte, pred, ate, num_groups).items():
            key = f"{name}/{metric}"
            report[key] = overall
            report.update(per_group_items(key, per_group.tolist(), group_names))
            report.update(_gaps(key, per_group, sizes, True, minority_groups))
    return report


# ---------------------------------------------------------------------------------------------- both
def evaluate_embeddings(
    train_emb: Any, train_y: Any, train_a: Any, test_emb: Any, test_y: Any, test_a: Any,
    *,
    num_classes: int | None = None,
    num_groups: int | None = None,
    group_names: Sequence[str] | None = None,
    ks: Sequence[int] = (1,),
    classifiers: Sequence[str] = CLASSIFIERS,
    rebalance: str = "none",
    downstream_train: tuple[Any, Any, Any] | None = None,
    minority_groups: Sequence[int] | None = None,
    seed: int = 0,
    max_rows: int | None = None,
) -> dict[str, float]:
    """The whole finDML evaluation of frozen embeddings as one flat report.

    Args:
        train_emb / train_y / train_a: train embeddings ``[N, d]``, classes ``[N]`` and attribute ids ``[N]``
            (``-1`` = unknown); they train the downstream classifiers.
        test_emb / test_y / test_a: test embeddings and labels; every score is measured on them.
        num_classes / num_groups: label ranges (default: ``max + 1`` over train and test).
        group_names: display names of the groups (default ``group<g>``).
        ks: the k of Recall@k.
        classifiers: subset of ``lr``, ``svm``, ``kmeans``, ``rf`` (empty: representation metrics only).
        rebalance: undersample the downstream train set to balanced ``class`` / ``group`` / ``cell`` counts.
        downstream_train: ``(emb, y, a)`` to train the downstream classifiers on instead of the train embeddings
            (e.g. the original balanced train set embedded by a model trained on an imbalanced one, finDML §6.2).
        minority_groups: the minoritised group ids (adds ``*_gap_minority`` entries).
        seed: seeds K-means, the classifiers and the re-balancing draw.
        max_rows: at most this many downstream train rows (seeded subset).

    Returns:
        Flat ``{name: float}`` report (NaN where a score is undefined, e.g. a group absent from the test set).
    """
    tr = (_np(train_emb, np.float64), _np(train_y, np.int64).reshape(-1), _np(train_a, np.int64).reshape(-1))
    te = (_np(test_emb, np.float64), _np(test_y, np.int64).reshape(-1), _np(test_a, np.int64).reshape(-1))
    _check(*tr, name="train")
    _check(*te, name="test")
    if tr[0].shape[1] != te[0].shape[1]:
        raise ValueError(f"train and test embeddings differ in width: {tr[0].shape[1]} vs {te[0].shape[1]}")
    if num_classes is None:
        num_classes = int(max(tr[1].max(), te[1].max())) + 1
    if num_groups is None:
        num_groups = int(max(tr[2].max(), te[2].max())) + 1
    names = list(group_names) if group_names is not None else [f"group{g}" for g in range(num_groups)]
    if len(names) != num_groups:
        raise ValueError(f"group_names has {len(names)} names for {num_groups} groups")
    for split, (_, yy, aa) in (("train", tr), ("test", te)):
        if yy.min() < 0 or yy.max() >= num_classes:
            raise ValueError(f"{split}_y holds a class outside [0, {num_classes})")
        if aa.min() < -1 or aa.max() >= num_groups:
            raise ValueError(f"{split}_a holds a group outside [-1, {num_groups})")
    if minority_groups is not None and any(not 0 <= g < num_groups for g in minority_groups):
        raise ValueError(f"minority_groups {list(minority_groups)} outside [0, {num_groups})")
    report = representation_report(te[0], te[1], te[2], num_classes=num_classes, num_groups=num_groups,
                                    group_names=names, ks=ks, minority_groups=minority_groups, seed=seed)
    if classifiers:
        ds = tr if downstream_train is None else tuple(_np(v) for v in downstream_train)
        report.update(downstream_metrics(*ds, *te, num_classes=num_classes, num_groups=num_groups, group_names=names,
                                         classifiers=classifiers, rebalance=rebalance,
                                         minority_groups=minority_groups, seed=seed, max_rows=max_rows))
    return report


# ---------------------------------------------------------------------------------------------- command
def _load_config(path: str | Path) -> dict[str, Any]:
    import yaml

    path = Path(path)
    if not path.is_file():
        raise SystemExit(f"findml: config file {str(path)!r} not found")
    cfg = yaml.safe_load(path.read_text()) or {}
    if "data" not in cfg:
        raise SystemExit(f"findml: config {str(path)!r} has no 'data' section (class_path + init_args)")
    return cfg


def _node(cfg: dict[str, Any], key: str) -> tuple[str | None, dict[str, Any]]:
    node = cfg.get(key)
    if isinstance(node, str):
        return node, {}
    if isinstance(node, dict):
        return node.get("class_path"), dict(node.get("init_args") or {})
    return None, {}


def build_datamodule(cfg: dict[str, Any], **overrides: Any):
    """The DataModule of a faircl config (``data: {class_path, init_args}``), with ``overrides`` applied."""
    name, args = _node(cfg, "data")
    choices = DATAMODULES
    short = (name or "").rsplit(".", 1)[-1]
    if short not in choices:
        raise SystemExit(f"findml: unknown datamodule {name!r}; available: {', '.join(sorted(choices))}")
    args.update(overrides)
    return choices[short](**args)


def load_model(ckpt: str | Path, cfg: dict[str, Any]):
    """Rebuild a method from a checkpoint; its class comes from the config's ``model.class_path`` (or the checkpoint)."""
    ckpt = Path(ckpt)
    if not ckpt.is_file():
        raise SystemExit(f"findml: checkpoint {str(ckpt)!r} not found")
    name, _ = _node(cfg, "model")
    ckpt_data = check_checkpoint(ckpt)  # weights_only=True: a crafted checkpoint runs no code; one-line errors
    if name is None:
        hp = ckpt_data.get("hyper_parameters") or {}
        name = hp.get("_class_path") if isinstance(hp, dict) else None
    choices = METHODS
    short = (name or "").rsplit(".", 1)[-1]
    if short not in choices:
        raise SystemExit(f"findml: cannot tell the method of {str(ckpt)!r} (model.class_path {name!r}); available: "
                         f"{', '.join(sorted(choices))}")
    return choices[short].load_from_checkpoint(str(ckpt), map_location="cpu", weights_only=True)


def embed(model, loader, max_rows: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, str]:
    """``(emb, y, a, key)``: the model's ``z`` if its ``forward`` returns one, else ``h``, over ``loader``."""
    out = model.collect(loader, keys=("z", "h", "y", "a"), max_rows=max_rows)
    key = "z" if "z" in out else "h"
    return out[key], out["y"], out["a"], key


def evaluate_checkpoint(ckpt: str | Path, config: str | Path, *, ks: Sequence[int] = (1,),
                        classifiers: Sequence[str] = CLASSIFIERS, rebalance: str = "none",
                        balanced_downstream: bool = False, seed: int = 0, max_rows: int | None = None,
                        data_overrides: Mapping[str, Any] | None = None) -> tuple[dict[str, float], dict[str, Any]]:
    """Load a checkpoint and its datamodule config, embed train and test, and run :func:`evaluate_embeddings`.

    ``balanced_downstream`` trains the downstream classifiers on the train split embedded *without* the
    datamodule's ``induce_imbalance`` (finDML §6.2). Returns ``(report, meta)``.
    """
    cfg = _load_config(config)
    overrides = dict(data_overrides or {})
    overrides.setdefault("two_views", False)
    dm = build_datamodule(cfg, **overrides)
    dm.setup("test")
    model = load_model(ckpt, cfg)
    train = embed(model, dm.plain_loader("train"), max_rows=max_rows)
    test = embed(model, dm.plain_loader("test"))
    minority = list(getattr(dm, "imbalanced_ids", []) or []) if getattr(dm, "imbalance_by", "") == "attribute" \
        else None
    downstream = None
    if balanced_downstream:
        dm_bal = build_datamodule(cfg, **{**overrides, "induce_imbalance": 0, "imbalance_values": None})
        dm_bal.setup("test")
        downstream = embed(model, dm_bal.plain_loader("train"), max_rows=max_rows)[:3]
    report = evaluate_embeddings(*train[:3], *test[:3], num_classes=dm.num_classes, num_groups=dm.num_groups,
                                 group_names=dm.group_names, ks=ks, classifiers=classifiers, rebalance=rebalance,
                                 downstream_train=downstream, minority_groups=minority or None, seed=seed,
                                 max_rows=max_rows)
    meta = {"checkpoint": str(ckpt), "config": str(config), "method": type(model).__name__,
            "data": type(dm).__name__, "embedding": train[3], "train_rows": int(len(train[0])),
            "test_rows": int(len(test[0])), "minority_groups": [dm.group_names[g] for g in (minority or [])],
            "downstream_train": "balanced (no induced imbalance)" if balanced_downstream else
            f"train split, rebalance={rebalance}"}
    return report, meta


def parser(config_type: Any = str) -> argparse.ArgumentParser:
    """The options of ``faircl findml``; ``config_type`` reads ``--config`` (the command resolves a shipped name)."""
    p = argparse.ArgumentParser(prog="faircl findml",
                                description="finDML benchmark of a checkpoint: representation and downstream gaps.")
    p.add_argument("--ckpt", required=True, help="checkpoint written by `faircl fit`")
    p.add_argument("--config", required=True, type=config_type,
                   help="the faircl YAML config (its data section builds the splits)")
    p.add_argument("--out", default=None, help="directory for report.json / report.md (default: next to the ckpt)")
    p.add_argument("--k", type=int, nargs="+", default=[1], help="k of Recall@k")
    p.add_argument("--classifiers", nargs="*", default=list(CLASSIFIERS), choices=CLASSIFIERS)
    p.add_argument("--rebalance", default="none", choices=REBALANCE, help="re-balance the downstream train set")
    p.add_argument("--balanced-downstream", action="store_true",
                   help="train downstream classifiers on the train split without the induced imbalance")
    p.add_argument("--max-rows", type=int, default=None, help="at most this many train rows")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=None, help="override data.init_args.data_dir")
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    """``python -m faircl.eval.findml --ckpt CKPT --config CONFIG [--out DIR] ...``: prints and writes the report."""
    return run(parser().parse_args(argv))


def run(args: argparse.Namespace) -> dict[str, float]:
    """The finDML report of ``args`` (:func:`parser`'s options): printed, and written to ``--out``."""
    overrides = {"data_dir": args.data_dir} if args.data_dir else {}
    report, meta = evaluate_checkpoint(args.ckpt, args.config, ks=args.k, classifiers=args.classifiers,
                                       rebalance=args.rebalance, balanced_downstream=args.balanced_downstream,
                                       seed=args.seed, max_rows=args.max_rows, data_overrides=overrides)

    out = Path(args.out) if args.out else Path(args.ckpt).resolve().parent / "findml"
    print_report(report, title=f"finDML: {meta['method']} on {meta['data']} ({meta['embedding']})")
    path = write_report(report, out, meta=meta)
    print(f"finDML report written to {path} and {path.with_suffix('.md')}")
    undefined = sorted(k for k, v in report.items() if isinstance(v, float) and math.isnan(v))
    if undefined:
        print(f"{len(undefined)} undefined entries (a group absent from the test split?): {undefined[:6]}")
    return report


if __name__ == "__main__":
    main()
