"""A plain ``lightning.Trainer`` (the notebook path) also records the fit in the checkpoint and keeps the test's rows."""

from __future__ import annotations

import lightning as L
import torch

from faircl.data import BiasedFeatures
from faircl.methods import CE


def test_plain_trainer_records_the_fit_and_keeps_rows(tmp_path):
    L.seed_everything(5)
    dm = BiasedFeatures(n_train=200, n_val=50, n_test=61, batch_size=50, bias=0.7)
    model = CE(encoder="mlp", encoder_kwargs={"hidden_dim": 8}, input_dim=32, num_classes=2, num_groups=2)
    trainer = L.Trainer(max_epochs=1, logger=False, enable_progress_bar=False, enable_model_summary=False,
                        default_root_dir=tmp_path)
    trainer.fit(model, datamodule=dm)
    record = torch.load(trainer.checkpoint_callback.best_model_path, weights_only=True)["faircl_fit"]
    assert record["seed"] == 5 and record["source"] == "lightning.Trainer"
    assert record["config"]["model"] == "CE" and record["config"]["data"] == "BiasedFeatures"
    assert record["config"]["data.bias"] == 0.7
    trainer.test(model, datamodule=dm, verbose=False)
    rows = model.test_rows
    assert len(rows["test"]["idx"]) == 61 and len(rows["val"]["idx"]) == 50
    test = rows["test"]
    assert abs((test["pred"] == test["y"]).mean() - model.test_report["accuracy"]) < 1e-9
    known = test["a"] >= 0
    assert abs((test["leak_h"][known] == test["a"][known]).mean() - model.test_report["leakage_h"]) < 1e-9
    # a fresh module loaded from the checkpoint carries the record
    fresh = CE.load_from_checkpoint(trainer.checkpoint_callback.best_model_path, weights_only=True)
    assert fresh.fit_record == record
