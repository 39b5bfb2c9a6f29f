"""Per-step bookkeeping: loss terms are summed every step and logged once an epoch (their row-weighted mean); step
values are logged only on the steps a logger writes, or for the progress bar."""

from __future__ import annotations

import csv

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import CSVLogger

from faircl.data import BiasedFeatures
from faircl.methods import CE
from faircl.checkpoints import check_finite_terms
from faircl.methods.steplog import EpochTerms, stack_terms
from faircl.testing import quiet_trainer_kwargs


class _Losses(Callback):
    def __init__(self) -> None:
        self.losses: list[list[float]] = []

    def on_train_epoch_start(self, trainer, module) -> None:
        self.losses.append([])

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        self.losses[-1].append(float(outputs["loss"]))


def _setup(**trainer_kw):
    dm = BiasedFeatures(n_train=64, n_val=16, n_test=16, dim=8, batch_size=16, seed=0)
    model = CE(num_classes=2, num_groups=2, input_dim=8, leakage=False)
    rec = _Losses()
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=2, limit_val_batches=0, num_sanity_val_steps=0,
                                               callbacks=[rec], **trainer_kw))
    return dm, model, rec, trainer


def test_no_per_step_logging_without_logger_or_bar_and_epoch_mean_is_exact(monkeypatch):
    dm, model, rec, trainer = _setup()
    names = []
    real_log = CE.log

    def spy(self, name, *args, **kwargs):
        names.append((name, self.trainer.current_epoch))
        return real_log(self, name, *args, **kwargs)

    monkeypatch.setattr(CE, "log", spy)
    trainer.fit(model, datamodule=dm)
    assert not [n for n, _ in names if n.endswith("_step")]
    assert [n for n, _ in names if n == "train/loss"] == ["train/loss", "train/loss"]  # once an epoch
    want = sum(rec.losses[-1]) / len(rec.losses[-1])  # equal batches: the row-weighted mean is the plain mean
    assert float(trainer.callback_metrics["train/loss"]) == pytest.approx(want, rel=1e-6)
    assert float(trainer.callback_metrics["train/ce"]) == pytest.approx(want, rel=1e-6)


def test_logger_gets_step_values_on_its_steps_and_epoch_means(tmp_path):
    dm, model, rec, trainer = _setup(logger=CSVLogger(str(tmp_path), name="run"), log_every_n_steps=2)
    trainer.fit(model, datamodule=dm)
    rows = list(csv.DictReader(open(next(tmp_path.rglob("metrics.csv")))))
    steps = [r for r in rows if r.get("train/loss_step")]
    assert len(steps) == 4  # 2 epochs × 4 steps, written every 2nd step
    flat = [v for epoch in rec.losses for v in epoch]
    assert [float(r["train/loss_step"]) for r in steps] == pytest.approx([flat[1], flat[3], flat[5], flat[7]],
                                                                          rel=1e-6)
    epochs = [float(r["train/loss"]) for r in rows if r.get("train/loss")]
    assert epochs == pytest.approx([sum(e) / len(e) for e in rec.losses], rel=1e-6)


def test_epoch_terms_weight_by_rows_and_skip_absent_terms():
    acc = EpochTerms()
    acc.add({"loss": torch.tensor(1.0), "probe": torch.tensor(4.0)}, 3)
    acc.add({"loss": torch.tensor(3.0)}, 1)
    means = acc.means()
    assert float(means["loss"]) == pytest.approx((3 * 1.0 + 1 * 3.0) / 4)
    assert float(means["probe"]) == pytest.approx(4.0)
    assert EpochTerms().means() == {}


def test_epoch_terms_sum_one_vector_per_term_set_and_fall_back_for_non_scalars():
    acc = EpochTerms()
    for step in range(3):  # the same names step after step: one running vector
        acc.add({"loss": torch.tensor(float(step)), "ce": torch.tensor(2.0 * step)}, 2)
    acc.add({"ce": torch.tensor(10.0), "loss": torch.tensor(20.0)}, 4)  # another order: another vector
    acc.add({"loss": torch.tensor([1.0, 3.0])}, 2)  # a non-scalar term counts by its mean
    means = acc.means()
    loops = {"loss": [(0.0, 2), (1.0, 2), (2.0, 2), (20.0, 4), (2.0, 2)],
             "ce": [(0.0, 2), (2.0, 2), (4.0, 2), (10.0, 4)]}
    for name, pairs in loops.items():
        want = sum(v * r for v, r in pairs) / sum(r for _, r in pairs)
        assert float(means[name]) == pytest.approx(want)
    assert stack_terms({"a": torch.tensor([1.0, 2.0])}) is None and stack_terms({}) is None


def test_finite_check_with_a_stacked_vector_names_the_term():
    terms = {"loss": torch.tensor(1.0), "fcl": torch.tensor(float("nan"))}
    with pytest.raises(FloatingPointError, match="'fcl' is nan"):
        check_finite_terms(terms, {"idx": torch.arange(3)}, "step 7", stack_terms(terms))
    check_finite_terms({"loss": torch.tensor(1.0)}, {}, "step 8", stack_terms({"loss": torch.tensor(1.0)}))
