"""Training the vision methods with every epoch of the final stage kept, so that each paper's selection rule and DTO
pick their epoch from the same run, and per-row validation and test predictions of every selected model
(``benchmarks/vision_fairness.py``).

Classifier methods (CE, ConFair, TwoStageCL, OneStageCL) predict with their own head. The embedding methods have
none, so their per-row prediction is read off the embedding: DML / PARADE — the label of the nearest *training*
embedding (cosine 1-NN over the normalised ``z``: the retrieval a deployed metric model does; its per-(class,
group) accuracy is the per-(class, group) Recall@1 against the training gallery); SimCLR / FairSampling — a
logistic-regression probe fitted on the frozen, standardised training ``h`` (SimCLR's linear evaluation, Martin &
Ogbuokiri's utility). The papers' own numbers (finDML Recall@1 / NMI per group within the test split; cluster
dominance / entropy) come from each model's test report.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import time
from typing import Any

import lightning as L
import numpy as np
import torch
from _text_runs import EpochKeeper, predictions, select_epoch, validation_leakage

from faircl.eval.compare import confusion_from_rows, gap_from_confusion
from faircl.methods.selection import selection_scores
from faircl.testing import quiet_trainer_kwargs

#: selection rules: "paper" = each paper's own rule (Shen / Chi on validation; fixed budget = the last epoch for
#: finDML and Martin & Ogbuokiri, who report fixed training budgets); "dto" = lowest validation DTO.
RULES = ("paper", "dto")


def split_metrics(y: np.ndarray, a: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    """Accuracy, GAP, EO gap, F1 of class 1 and DTO of one split's predictions (fractions)."""
    counts = confusion_from_rows(y, pred, a, 2, 2)
    out = {m: float(gap_from_confusion(counts, m)) for m in ("accuracy", "tpr_gap_rms", "eo_gap", "balanced_accuracy")}
    tp = float(np.sum((pred == 1) & (y == 1)))
    out["f1"] = 2 * tp / max(float(np.sum(pred == 1) + np.sum(y == 1)), 1.0)
    out.update(selection_scores(out))
    return out


# ------------------------------------------------------------------------------------------ classifier methods
def fit_classifier(cls: type, kwargs: dict[str, Any], dm: Any, epochs: int, seed: int, lr: float,
                   paper_rule: str) -> dict[str, dict[str, Any]]:
    """Train once with validation after every epoch; per rule (``paper`` = ``paper_rule`` of
    :func:`_text_runs.select_epoch`, ``dto``), the test report and per-row predictions of the chosen epoch."""
    L.seed_everything(seed, verbose=False)
    model = cls(num_classes=2, num_groups=2, input_dim=3, lr=lr, **kwargs)
    keeper = EpochKeeper()
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=epochs, num_sanity_val_steps=0, callbacks=[keeper]))
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.fit(model, datamodule=dm)
    seconds = time.perf_counter() - t0
    out: dict[str, dict[str, Any]] = {}
    done: dict[int, dict[str, Any]] = {}
    for rule, how in (("paper", paper_rule), ("dto", "dto")):
        i = select_epoch(keeper.history, how)
        if i not in done:
            model.load_state_dict(keeper.states[i])
            with contextlib.redirect_stdout(io.StringIO()):
                trainer.test(model, datamodule=dm, verbose=False)
            rep = {k: float(v) for k, v in model.test_report.items() if isinstance(v, (int, float))}
            rep.update(selected_epoch=keeper.history[i]["epoch"], fit_seconds=seconds, val_history=[
                           [h["epoch"], h.get("accuracy", math.nan), h.get("tpr_gap_rms", math.nan)]
                           for h in keeper.history],
                       test_pred=predictions(model, dm, "test").tolist(),
                       val_pred=predictions(model, dm, "val").tolist())
            if "leakage_h" in rep:  # the test's probe scored on the validation rows (the bias test needs both)
                rep["val_leakage_h"] = validation_leakage(model, dm)
            done[i] = rep
        out[rule] = {**done[i], "rule": how}
    return out


# ------------------------------------------------------------------------------------------ embedding methods
class StateKeeper(L.Callback):
    """A copy of the weights after every training epoch from ``first`` on."""

    def __init__(self, first: int = 0) -> None:
        self.first = first
        self.states: list[tuple[int, dict[str, torch.Tensor]]] = []

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: Any) -> None:
        if trainer.current_epoch >= self.first:
            self.states.append((trainer.current_epoch, copy.deepcopy(pl_module.state_dict())))


@torch.no_grad()
def _embed(model: Any, dm: Any, split: str, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    model.eval()
    zs, ys, as_ = [], [], []
    for b in dm.plain_loader(split):
        zs.append(model(b["x"])[key].float())
        ys.append(b["y"])
        as_.append(b["a"])
    return torch.cat(zs).numpy(), torch.cat(ys).numpy(), torch.cat(as_).numpy()


def embedding_predictions(model: Any, dm: Any, how: str, seed: int) -> dict[str, np.ndarray]:
    """Per-row validation and test predictions read off the embedding: ``knn`` (label of the nearest training ``z``,
    cosine) or ``probe`` (logistic regression on standardised training ``h``)."""
    key = "z" if how == "knn" else "h"
    tr, ytr, _ = _embed(model, dm, "train", key)
    out = {}
    if how == "probe":
        from faircl.metrics.probes import fit_probe

        probe = fit_probe(tr, ytr, "logistic", seed=seed, max_iter=1000, name="train labels")
    for split in ("val", "test"):
        z, _, _ = _embed(model, dm, split, key)
        if how == "knn":
            sim = z @ tr.T
            out[split] = ytr[np.argmax(sim, axis=1)].astype(np.int64)
        else:
            out[split] = np.asarray(probe.predict(z), dtype=np.int64)
    return out


def fit_embedding(cls: type, kwargs: dict[str, Any], dm: Any, epochs: int, seed: int, how: str,
                  first_kept: int = 0) -> dict[str, dict[str, Any]]:
    """Train once (no validation loop); every kept epoch is scored on validation through
    :func:`embedding_predictions`; ``paper`` = the last epoch (fixed budget), ``dto`` = lowest validation DTO."""
    L.seed_everything(seed, verbose=False)
    model = cls(num_classes=2, num_groups=2, input_dim=3, **kwargs)
    keeper = StateKeeper(first_kept)
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=epochs, limit_val_batches=0, num_sanity_val_steps=0,
                                               callbacks=[keeper]))
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.fit(model, datamodule=dm)
    seconds = time.perf_counter() - t0
    val = dm.splits["val"]
    yv, av = val.y.numpy(), val.a.numpy()
    history, preds = [], []
    for epoch, state in keeper.states:
        model.load_state_dict(state)
        p = embedding_predictions(model, dm, how, seed)
        history.append({"epoch": float(epoch), **split_metrics(yv, av, p["val"])})
        preds.append(p)
    out: dict[str, dict[str, Any]] = {}
    done: dict[int, dict[str, Any]] = {}
    for rule in RULES:
        i = len(history) - 1 if rule == "paper" else int(np.nanargmin([h.get("dto", math.nan) for h in history]))
        if i not in done:
            model.load_state_dict(keeper.states[i][1])
            with contextlib.redirect_stdout(io.StringIO()):
                trainer.test(model, datamodule=dm, verbose=False)
            rep = {k: float(v) for k, v in model.test_report.items() if isinstance(v, (int, float))}
            test = dm.splits["test"]
            rep.update({f"pred_{k}": v for k, v in split_metrics(test.y.numpy(), test.a.numpy(),
                                                                  preds[i]["test"]).items()})
            rep.update(selected_epoch=history[i]["epoch"], fit_seconds=seconds, val_history=[
                           [h["epoch"], h["accuracy"], h["tpr_gap_rms"]] for h in history],
                       test_pred=preds[i]["test"].tolist(), val_pred=preds[i]["val"].tolist())
            done[i] = rep
        out[rule] = {**done[i], "rule": "fixed" if rule == "paper" else "dto"}
    return out
