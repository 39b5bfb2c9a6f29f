"""Training the text methods on frozen features, with every epoch kept so that each paper's model-selection rule
and DTO pick their epoch from the same run (``benchmarks/text_fairness.py``)."""

from __future__ import annotations

import contextlib
import copy
import io
import math
import time
from typing import Any, NamedTuple

import lightning as L
import numpy as np
import torch

from faircl.data.base import FairDataModule, FairDataset
from faircl.metrics.leakage import linear_leakage
from faircl.testing import quiet_trainer_kwargs

ENC = {"encoder": "mlp", "encoder_kwargs": {"hidden_dim": 300, "num_layers": 2}}
RULES = ("dto", "shen", "chi")
SHEN_TOLERANCE = 0.01


class Spec(NamedTuple):
    """One method of a grid: its class and arguments, whether it trains on two views, and (``None`` = the
    protocol's) its batch size and epochs."""

    cls: type
    kwargs: dict[str, Any]
    views: bool = False
    batch_size: int | None = None
    epochs: int | None = None


# ------------------------------------------------------------------------------------------ frozen-feature data
class _Lookup:
    """Row key ``i`` → ``tables[0][i]``; ``(k, i)`` → ``tables[k][i]`` (copy ``k``; 0 = the original)."""

    def __init__(self, tables: list[torch.Tensor]) -> None:
        self.tables = tables

    def __call__(self, key: Any) -> torch.Tensor:
        k, i = key if isinstance(key, tuple) else (0, key)
        return self.tables[k][int(i)]


class _DistinctViews:
    """Draws a copy of a row among the original and its augmented copies; the second draw for the same row (the
    other view of a pair) never repeats the first, so the two views of a pair are always distinct copies."""

    def __init__(self, num_copies: int) -> None:
        self.num_copies = num_copies
        self._last: tuple[int, int] | None = None

    def __call__(self, i: Any) -> tuple[int, int]:
        i = int(i)
        if self._last is not None and self._last[0] == i:
            k = int(torch.randint(0, self.num_copies - 1, ()))
            k = k + 1 if k >= self._last[1] else k
            self._last = None
        else:
            k = int(torch.randint(0, self.num_copies, ()))
            self._last = (i, k)
        return k, i


class FrozenFeatures(FairDataModule):
    """Pre-computed features per split (train may carry augmented copies for the two-view methods)."""

    def __init__(self, tables: dict[str, list[torch.Tensor]], labels: dict[str, tuple[np.ndarray, np.ndarray]],
                 num_classes: int, group_names: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tables, self.labels, self._nc = tables, labels, num_classes
        self.group_names = group_names
        self.class_names = [str(c) for c in range(num_classes)]
        self._reported = True

    @property
    def input_dim(self) -> int:
        return int(self.tables["train"][0].shape[1])

    def load_splits(self) -> dict[str, FairDataset]:
        return {s: FairDataset(torch.arange(len(t[0])), *self.labels[s], num_classes=self._nc,
                               num_groups=len(self.group_names), transform=_Lookup(t), source=f"features[{s}]")
                for s, t in self.tables.items()}

    def view_transform(self):
        return _DistinctViews(len(self.tables["train"]))

    def with_views(self, views: bool, batch_size: int | None = None) -> FrozenFeatures:
        """The same features with (or without) two views, at ``batch_size`` (``None`` = this one's); a batch larger
        than the train split is the whole split."""
        bs = min(batch_size or self.batch_size, len(self.tables["train"][0]))
        return FrozenFeatures(self.tables, self.labels, self._nc, self.group_names, batch_size=bs,
                              eval_batch_size=256, two_views=views)

    def permuted(self, seed: int = 0) -> FrozenFeatures:
        """The control: every split's attribute permuted among its rows (the features and labels unchanged)."""
        rng = np.random.default_rng(seed)
        labels = {s: (y, rng.permutation(a)) for s, (y, a) in self.labels.items()}
        return FrozenFeatures(self.tables, labels, self._nc, self.group_names, batch_size=self.batch_size)


# ------------------------------------------------------------------------------------------ selection rules
def select_epoch(history: list[dict[str, float]], rule: str) -> int:
    """Index into ``history`` (validation metrics of the final stage's epochs) chosen by ``rule``.

    ``dto``: lowest validation DTO (distance to the optimum over accuracy and 1 − GAP). ``shen``: Shen et al.'s
    rule — the lowest validation GAP among the epochs whose accuracy is within ``SHEN_TOLERANCE`` of the best
    validation accuracy. ``chi``: Chi et al.'s early stopping on validation performance — the best validation F1.
    """
    if not history:
        raise RuntimeError("no validation epoch in the final stage")
    if rule == "dto":
        return int(np.nanargmin([h["dto"] for h in history]))
    if rule == "chi":
        return int(np.nanargmax([h["f1"] for h in history]))
    if rule == "shen":
        best = np.nanmax([h["accuracy"] for h in history])
        ok = [i for i, h in enumerate(history) if h["accuracy"] >= best - SHEN_TOLERANCE]
        return min(ok, key=lambda i: (history[i]["tpr_gap_rms"], -history[i]["accuracy"]))
    raise ValueError(f"unknown selection rule {rule!r}; expected one of {RULES}")


class EpochKeeper(L.Callback):
    """Keeps the validation metrics and a copy of the weights after every validation of the final stage."""

    def __init__(self) -> None:
        self.history: list[dict[str, float]] = []
        self.states: list[dict[str, torch.Tensor]] = []

    def on_validation_end(self, trainer: L.Trainer, pl_module: Any) -> None:
        from faircl.checkpoints import final_stage_or_unreachable

        if trainer.sanity_checking or not final_stage_or_unreachable(trainer):
            return
        m = {k.removeprefix("val/"): float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
        m["epoch"] = float(trainer.current_epoch)
        self.history.append(m)
        self.states.append(copy.deepcopy(pl_module.state_dict()))


def validation_leakage(model: Any, dm: FairDataModule) -> float:
    """Leak@h on the validation rows: the test's probe (linear SVM fit on the train split's hidden layer, the same
    rows and settings as :meth:`faircl.methods.base.FairModule.leakage_metrics`) scored on the validation split."""
    train = model.collect(dm.plain_loader("train"), keys=("h", "a"), max_rows=model.hparams.leakage_max_rows)
    val = model.collect(dm.plain_loader("val"), keys=("h", "a"))
    return float(linear_leakage(train["h"], train["a"], val["h"], val["a"]))


@torch.no_grad()
def predictions(model: Any, dm: FairDataModule, split: str) -> np.ndarray:
    model.eval()
    return torch.cat([model(b["x"])["logits"].argmax(dim=1) for b in dm.plain_loader(split)]).numpy()


def fit_select(cls: type, kwargs: dict[str, Any], dm: FairDataModule, epochs: int, seed: int, lr: float,
               rules: tuple[str, ...] = RULES) -> dict[str, dict[str, Any]]:
    """Train once; per selection rule, the test report of the chosen epoch with its per-row predictions."""
    L.seed_everything(seed, verbose=False)
    dm.seed = seed
    model = cls(num_classes=dm.num_classes, num_groups=dm.num_groups, input_dim=dm.input_dim, lr=lr,
                **{**ENC, **kwargs})
    keeper = EpochKeeper()
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=epochs, num_sanity_val_steps=0, callbacks=[keeper]))
    with contextlib.redirect_stdout(io.StringIO()):
        t0 = time.perf_counter()
        trainer.fit(model, datamodule=dm)
        seconds = time.perf_counter() - t0
    out: dict[str, dict[str, Any]] = {}
    by_index: dict[int, dict[str, Any]] = {}
    for rule in rules:
        i = select_epoch(keeper.history, rule)
        if i not in by_index:
            model.load_state_dict(keeper.states[i])
            with contextlib.redirect_stdout(io.StringIO()):
                trainer.test(model, datamodule=dm, verbose=False)
            rep = {k: float(v) for k, v in model.test_report.items() if isinstance(v, (int, float))}
            rep.update(selected_epoch=keeper.history[i]["epoch"], fit_seconds=seconds,
                       test_pred=predictions(model, dm, "test").tolist(),
                       val_pred=predictions(model, dm, "val").tolist(), batch_size=dm.batch_size,
                       epochs=epochs)
            if "leakage_h" in rep:
                rep["val_leakage_h"] = validation_leakage(model, dm)
            by_index[i] = rep
        out[rule] = by_index[i]
    return out


def run_methods(grid: dict[str, Spec], feats: Any, epochs: int, seeds: list[int],
                log, lr: float, label: str = "") -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``runs[rule][method]`` = per-seed reports (seed order), every method trained once per seed (for its own
    ``epochs`` and batch size when its :class:`Spec` sets them)."""
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {r: {} for r in RULES}
    for name, spec in grid.items():
        spec = Spec(*spec)
        for seed in seeds:
            res = fit_select(spec.cls, spec.kwargs, feats.with_views(spec.views, spec.batch_size),
                             spec.epochs or epochs, seed, lr)
            for rule, rep in res.items():
                runs[rule].setdefault(name, []).append(rep)
            d, s = res["dto"], res["shen"]
            log(f"  {label}{name:22s} seed {seed}: DTO-selected epoch {d['selected_epoch']:.0f} acc "
                f"{d['accuracy']:.3f} GAP {d['tpr_gap_rms']:.3f} EO {d['eo_gap']:.3f} leak@h "
                f"{d.get('leakage_h', math.nan):.3f} | Shen-selected epoch {s['selected_epoch']:.0f} acc "
                f"{s['accuracy']:.3f} GAP {s['tpr_gap_rms']:.3f} | Chi-selected epoch "
                f"{res['chi']['selected_epoch']:.0f} (batch {d['batch_size']}, {d['fit_seconds']:.1f}s)")
    return runs
