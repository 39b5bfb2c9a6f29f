"""The text benchmark's training helpers (benchmarks/_text_runs.py): validation leakage and the batch of a method."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import lightning as L
import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

from _text_runs import FrozenFeatures, fit_select, validation_leakage  # noqa: E402

from faircl.metrics.leakage import linear_leakage  # noqa: E402
from faircl.testing import quiet_trainer_kwargs  # noqa: E402


def _features(n: int = 120, seed: int = 0) -> FrozenFeatures:
    g = torch.Generator().manual_seed(seed)
    tables, labels = {}, {}
    for split, rows in (("train", n), ("val", n // 2), ("test", n // 2)):
        y = torch.randint(0, 2, (rows,), generator=g)
        a = torch.randint(0, 2, (rows,), generator=g)
        x = torch.randn(rows, 8, generator=g) + torch.stack([y, a], 1).float().repeat(1, 4)
        tables[split], labels[split] = [x], (y.numpy(), a.numpy())
    return FrozenFeatures(tables, labels, 2, ["m", "f"], batch_size=32)


def test_validation_leakage_is_the_test_probe_scored_on_the_validation_rows():
    import faircl.methods as M

    feats = _features()
    L.seed_everything(0, verbose=False)
    model = M.CE(num_classes=2, num_groups=2, input_dim=8, encoder="mlp", encoder_kwargs={"hidden_dim": 16})
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=2, num_sanity_val_steps=0))
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.fit(model, datamodule=feats)
        trainer.test(model, datamodule=feats, verbose=False)
    # the validation rows swapped for the test rows: the value is the test report's Leak@h
    swapped = FrozenFeatures({**feats.tables, "val": feats.tables["test"]},
                             {**feats.labels, "val": feats.labels["test"]}, 2, ["m", "f"], batch_size=32)
    assert validation_leakage(model, swapped) == model.test_report["leakage_h"]
    # and an independent computation of the validation value: hidden layer by hand, probe by linear_leakage
    model.eval()
    with torch.no_grad():
        h = {s: model(feats.tables[s][0])["h"] for s in ("train", "val")}
    expected = linear_leakage(h["train"], torch.as_tensor(feats.labels["train"][1]), h["val"],
                              torch.as_tensor(feats.labels["val"][1]))
    assert np.isclose(validation_leakage(model, feats), expected)


def test_a_batch_larger_than_the_train_split_is_the_whole_split_and_is_recorded():
    import faircl.methods as M

    feats = _features(n=60)
    assert feats.with_views(False, 1024).batch_size == 60 and feats.with_views(False).batch_size == 32
    res = fit_select(M.CE, {"encoder_kwargs": {"hidden_dim": 16, "num_layers": 1}}, feats.with_views(False, 1024),
                     2, 0, 3e-3, rules=("dto",))
    rep = res["dto"]
    assert rep["batch_size"] == 60 and rep["epochs"] == 2
    assert 0.0 <= rep["val_leakage_h"] <= 1.0 and len(rep["val_pred"]) == 30
