"""Staged methods under 2-process ``ddp_spawn`` (gloo, CPU) without ``find_unused_parameters``: each stage freezes
what it does not train and the DDP wrapper is rebuilt at the stage start, so fit crosses the stage boundary and
test runs."""

from __future__ import annotations

import lightning as L
import pytest
import torch
from lightning.pytorch.strategies import DDPStrategy

from faircl.data import BiasedFeatures
from faircl.methods import ConFair, TwoStageCL
from faircl.testing import quiet_trainer_kwargs


def _fit_and_test(model: L.LightningModule, two_views: bool) -> dict[str, float]:
    L.seed_everything(0)
    dm = BiasedFeatures(n_train=128, n_val=32, n_test=64, dim=8, batch_size=32, seed=0, two_views=two_views)
    init = {k: v.detach().clone() for k, v in model.state_dict().items()}
    strategy = DDPStrategy(start_method="spawn", find_unused_parameters=False, process_group_backend="gloo")
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=2, devices=2, strategy=strategy, limit_val_batches=0))
    trainer.fit(model, datamodule=dm)
    assert trainer.state.finished
    # ddp_spawn copies the trained weights back: both stages trained something
    after = model.state_dict()
    for prefix in ("encoder.", "classifier."):
        assert any(not torch.equal(after[k], init[k]) for k in init if k.startswith(prefix)), prefix
    tester = L.Trainer(**quiet_trainer_kwargs(devices=2, strategy=DDPStrategy(start_method="spawn",
                                                                               process_group_backend="gloo")))
    tester.test(model, datamodule=dm, verbose=False)
    return {k: float(v) for k, v in tester.callback_metrics.items() if k.startswith("test/")}


@pytest.mark.ddp
@pytest.mark.e2e
def test_two_stage_cl_crosses_stage_boundary_under_plain_ddp():
    torch.manual_seed(0)
    model = TwoStageCL(num_classes=2, num_groups=2, input_dim=8, encoder_kwargs={"hidden_dim": 16}, proj_dim=8,
                       stage1_epochs=1, leakage=False)
    report = _fit_and_test(model, two_views=True)
    assert 0.0 <= report["test/accuracy"] <= 1.0


@pytest.mark.ddp
@pytest.mark.e2e
def test_confair_pipeline_crosses_stage_boundary_under_plain_ddp():
    torch.manual_seed(0)
    model = ConFair(num_classes=2, num_groups=2, input_dim=8, encoder_kwargs={"hidden_dim": 16}, pipeline=True,
                    stage1_epochs=1, leakage=False, grad_cache_chunk=8)
    report = _fit_and_test(model, two_views=False)
    assert 0.0 <= report["test/accuracy"] <= 1.0


@pytest.mark.ddp
@pytest.mark.e2e
def test_one_stage_cl_gradient_cache_under_plain_ddp():
    """Two views, chunked: the classifier is reached by view-1 chunks only; the last synchronised backward still
    reduces every parameter, so DDP without find_unused_parameters runs several steps."""
    from faircl.methods import OneStageCL

    L.seed_everything(0)
    dm = BiasedFeatures(n_train=128, n_val=32, n_test=64, dim=8, batch_size=32, seed=0, two_views=True)
    model = OneStageCL(num_classes=2, num_groups=2, input_dim=8, encoder_kwargs={"hidden_dim": 16}, proj_dim=8,
                       leakage=False, grad_cache_chunk=8)
    init = {k: v.detach().clone() for k, v in model.state_dict().items()}
    strategy = DDPStrategy(start_method="spawn", find_unused_parameters=False, process_group_backend="gloo")
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=1, devices=2, strategy=strategy, limit_val_batches=0))
    trainer.fit(model, datamodule=dm)
    assert trainer.state.finished
    after = model.state_dict()
    for prefix in ("encoder.", "classifier.", "projection."):
        assert any(not torch.equal(after[k], init[k]) for k in init if k.startswith(prefix)), prefix


@pytest.mark.ddp
@pytest.mark.e2e
def test_inlp_crosses_stage_boundary_under_plain_ddp():
    """INLP freezes its encoder for the ``project`` stage and the wrapper is rebuilt there, so plain DDP (no
    ``find_unused_parameters``) trains both stages: no ``ddp_find_unused_parameters_true`` is needed."""
    from faircl.methods import INLP

    torch.manual_seed(0)
    model = INLP(num_classes=2, num_groups=2, input_dim=8, encoder_kwargs={"hidden_dim": 16}, stage1_epochs=1,
                 n_clf=2, leakage=False)
    report = _fit_and_test(model, two_views=False)
    assert bool(model.projection_fitted) and 0.0 <= report["test/accuracy"] <= 1.0
