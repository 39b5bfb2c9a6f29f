"""The code of the guides "Writing your own method" and "Your own datamodule" (docs/examples/) runs."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import torch

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
FAST = {"enable_progress_bar": False, "logger": False, "enable_model_summary": False, "limit_train_batches": 3,
        "limit_val_batches": 2}


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_custom_method_trains_and_logs_its_term(tmp_path):
    ex = _load("custom_method")
    from faircl.data import BiasedFeatures

    dm = BiasedFeatures()
    model = ex.GroupLossGap(lambda_gap=2.0, num_classes=dm.num_classes, num_groups=dm.num_groups,
                            input_dim=dm.input_dim, input_kind=dm.input_kind)
    assert model.hparams.lambda_gap == 2.0
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    terms = model.losses(batch, model(batch["x"]))
    assert set(terms) >= {"ce", "group_gap", "loss"}
    assert torch.allclose(terms["loss"], terms["ce"] + 2.0 * terms["group_gap"])
    # One group only: the gap is 0 and still back-propagates.
    one = {**batch, "a": torch.zeros_like(batch["a"])}
    terms = model.losses(one, model(one["x"]))
    assert terms["group_gap"].item() == 0.0 and terms["loss"].requires_grad
    report = ex.main(max_epochs=1, default_root_dir=str(tmp_path), **FAST)
    assert 0.0 <= report["accuracy"] <= 1.0 and not math.isnan(report["tpr_gap_rms"])


def test_custom_datamodule_trains_a_two_view_method(tmp_path):
    ex = _load("custom_datamodule")
    dm = ex.MyTable(n=200)
    assert (dm.num_classes, dm.num_groups, dm.input_dim) == (2, 2, 8)
    assert [len(dm.splits[s]) for s in ("train", "val", "test")] == [120, 40, 40]
    report = ex.main(max_epochs=2, default_root_dir=str(tmp_path), **FAST)
    assert 0.0 <= report["accuracy"] <= 1.0
