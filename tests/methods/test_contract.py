"""The contract between FairModule and the methods, as a subclasser meets it: real signatures, plain Python
subclassing (abc.ABC, mixins), the checkpoint policy under a plain Trainer, and load_from_checkpoint."""

from __future__ import annotations

import abc
import inspect

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch import nn

from faircl.checkpoints import FairCheckpoint
from faircl.data import BiasedFeatures, ColoredDigits
from faircl.methods import CCD, INLP, METHODS, ConFair, FairModule, TwoStageCL
from faircl.methods.inputs import NotApplicableError
from faircl.testing import quiet_trainer_kwargs

# arguments of each method's own __init__ that its signature must show (and one of FairModule's for CE)
OWN_ARGS = {
    "CE": ("num_classes", "input_kind", "grad_cache_chunk"), "ConFair": ("alpha", "lambda_fair", "pipeline"),
    "TwoStageCL": ("lambda_cs", "cs_reduction", "stage2_hidden"), "OneStageCL": ("gamma", "lambda_cs"),
    "Adversarial": ("lambda_adv", "n_adv", "diff_form"), "DiverseAdversarial": ("n_adv", "lambda_diff"),
    "INLP": ("n_clf", "per_class", "probe"), "DML": ("loss", "miner", "embed_dim"),
    "PARADE": ("lambda_sa", "lambda_sep"), "FairSamplingSimCLR": ("num_clusters", "negatives", "cluster_on"),
    "SimCLR": ("fair_sampling",), "CCD": ("beta", "rho", "rho_estimate", "encoder", "lr"),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_signature_shows_the_real_arguments(name):
    cls = METHODS[name]
    sig = inspect.signature(cls)
    own = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    assert list(sig.parameters) == own  # what __init__ declares, not (*args, **kwargs)
    assert set(OWN_ARGS[name]) <= set(sig.parameters), sorted(sig.parameters)
    assert type(cls) is type(L.LightningModule)  # no metaclass of faircl's own


def _dm(**kw) -> BiasedFeatures:
    return BiasedFeatures(n_train=96, n_val=32, n_test=32, dim=6, batch_size=32, seed=0, **kw)


class Penalised(ConFair, abc.ABC):
    """An abstract method: ConFair plus a penalty its subclasses define."""

    @abc.abstractmethod
    def penalty(self, out: dict[str, torch.Tensor]) -> torch.Tensor:
        """A scalar added to the loss."""

    def losses(self, batch, out):
        terms = super().losses(batch, out)
        terms["penalty"] = self.penalty(out)
        terms["loss"] = terms["loss"] + terms["penalty"]
        return terms


class NormPenalised(Penalised):
    def __init__(self, weight: float = 0.1, extra_dim: int = 3, **kwargs) -> None:
        super().__init__(**kwargs)
        self.weight = weight
        self.extra = nn.Linear(self.encoder.out_dim, extra_dim)  # a head built in the ordinary way

    def penalty(self, out):
        return self.weight * self.extra(out["h"]).pow(2).mean()


def test_subclass_with_abc_trains():
    dm = _dm()
    kw = dict(num_classes=2, num_groups=2, input_dim=dm.input_dim, input_kind=dm.input_kind, leakage=False)
    with pytest.raises(TypeError, match="abstract"):
        Penalised(**kw)
    assert list(inspect.signature(NormPenalised).parameters)[:2] == ["weight", "extra_dim"]
    model = NormPenalised(weight=0.5, extra_dim=4, **kw)
    assert model.extra.out_features == 4 and model.hparams.weight == 0.5 and model.hparams.alpha == 1.0
    before = model.extra.weight.detach().clone()
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=1, limit_val_batches=0))
    trainer.fit(model, datamodule=dm)
    assert trainer.state.finished and "train/penalty" in trainer.callback_metrics
    assert not torch.equal(before, model.extra.weight)  # the subclass's head trained


class EpochCounter:
    """A mixin that counts the train epochs of any LightningModule."""

    def on_train_epoch_end(self) -> None:
        self.epochs_seen = getattr(self, "epochs_seen", 0) + 1
        super().on_train_epoch_end()


class CountedTwoStage(EpochCounter, TwoStageCL):
    pass


def test_subclass_with_mixin_trains_through_both_stages():
    dm = _dm(two_views=True)
    model = CountedTwoStage(num_classes=2, num_groups=2, input_dim=dm.input_dim, input_kind=dm.input_kind,
                            encoder_kwargs={"hidden_dim": 8}, proj_dim=4, stage1_epochs=1, leakage=False)
    assert "lambda_cs" in inspect.signature(CountedTwoStage).parameters
    init = {k: v.detach().clone() for k, v in model.state_dict().items()}
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=2, limit_val_batches=0))
    trainer.fit(model, datamodule=dm)
    assert model.epochs_seen == 2 and model.stage == "classifier"
    after = model.state_dict()
    for prefix in ("encoder.", "projection.", "classifier."):  # stage 1 trains the first two, stage 2 the last
        assert any(not torch.equal(after[k], init[k]) for k in init if k.startswith(prefix)), prefix


def test_wrong_input_kind_is_not_applicable_naming_both_sides():
    with pytest.raises(NotApplicableError, match=r"not applicable: CCD trains on tuples inputs, but "
                                                 r"input_kind='features'"):
        CCD(input_kind="features", encoder="mlp", input_dim=4)
    dm = ColoredDigits(size=8)
    model = ConFair(num_classes=dm.num_classes, num_groups=dm.num_groups, input_dim=dm.input_dim, leakage=False)
    with pytest.raises(NotApplicableError, match=r"ConFair was built for 'features' inputs .* but ColoredDigits "
                                                 r"emits 'images' inputs; build it with input_kind='images'"):
        L.Trainer(**quiet_trainer_kwargs(max_steps=1)).fit(model, datamodule=dm)


class FakeMetricINLP(INLP):
    """INLP logging ``val/fake`` = the epoch: lowest (best under ``min``) at epoch 0, before the projection."""

    def on_validation_epoch_end(self) -> None:
        super().on_validation_epoch_end()
        self.log("val/fake", float(self.current_epoch))


def _inlp_fit(tmp_path, **trainer_kw) -> tuple[L.Trainer, FakeMetricINLP]:
    dm = _dm()
    model = FakeMetricINLP(num_classes=2, num_groups=2, input_dim=dm.input_dim, input_kind=dm.input_kind,
                           stage1_epochs=2, n_clf=2, monitor="val/fake", monitor_mode="min", leakage=False)
    trainer = L.Trainer(max_epochs=4, default_root_dir=str(tmp_path), logger=False, enable_progress_bar=False,
                        enable_model_summary=False, num_sanity_val_steps=0, accelerator="cpu", **trainer_kw)
    trainer.fit(model, datamodule=dm)
    return trainer, model


def test_plain_trainer_inlp_best_checkpoint_is_from_the_final_stage(tmp_path):
    trainer, model = _inlp_fit(tmp_path)
    ckpt = trainer.checkpoint_callback
    assert isinstance(ckpt, FairCheckpoint) and ckpt.monitor == "val/fake"
    best = torch.load(ckpt.best_model_path, weights_only=True)
    assert best["epoch"] == model.stage_start_epoch("project") == 2  # not epoch 0, where val/fake is lowest
    assert bool(best["state_dict"]["projection_fitted"])  # the projection is in the best model
    assert (tmp_path / "checkpoints" / "last.ckpt").is_file()


def test_user_checkpoint_callback_wins_over_the_module_policy(tmp_path):
    mine = ModelCheckpoint(monitor="val/fake", mode="min", dirpath=tmp_path / "mine")
    trainer, _ = _inlp_fit(tmp_path, callbacks=[mine])
    assert trainer.checkpoint_callbacks == [mine]
    assert torch.load(mine.best_model_path, weights_only=True)["epoch"] == 0  # Lightning's own rule
    trainer, _ = _inlp_fit(tmp_path / "off", enable_checkpointing=False)
    assert trainer.checkpoint_callbacks == []


def _tiny(name: str, tiny_bert: str) -> tuple[FairModule, dict]:
    """A small instance of method ``name`` and one batch it reads."""
    g = torch.Generator().manual_seed(0)
    if name == "CCD":
        x = [["he is a doctor", "he sings"], ["she is a doctor", "she sings"], ["they are a doctor", "they sing"]]
        return CCD(encoder_kwargs={"model_dir": tiny_bert}, rho=0.5), {"x": x}
    extra = {"INLP": {"stage1_epochs": 1}, "PARADE": {"embed_dim": 8, "decorr_hidden": 8},
             "DML": {"embed_dim": 8}, "TwoStageCL": {"proj_dim": 4}, "OneStageCL": {"proj_dim": 4},
             "FairSamplingSimCLR": {"proj_dim": 4}, "SimCLR": {"proj_dim": 4}}.get(name, {})
    model = METHODS[name](num_classes=3, num_groups=2, input_dim=5, input_kind="features",
                          encoder_kwargs={"hidden_dim": 8}, **extra)
    return model, {"x": torch.randn(6, 5, generator=g)}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_load_from_checkpoint_rebuilds_every_method(name, tiny_bert, tmp_path):
    torch.manual_seed(0)
    model, batch = _tiny(name, tiny_bert)
    with torch.no_grad():
        for p in model.parameters():  # weights that differ from a fresh build
            p.add_(0.1 * torch.randn_like(p))
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=0))
    trainer.strategy.connect(model)
    trainer.save_checkpoint(tmp_path / "m.ckpt")
    torch.manual_seed(1)
    again = METHODS[name].load_from_checkpoint(tmp_path / "m.ckpt")
    assert type(again) is type(model) and dict(again.hparams) == dict(model.hparams)
    mine, theirs = model.state_dict(), again.state_dict()
    assert sorted(mine) == sorted(theirs) and all(torch.equal(mine[k], theirs[k]) for k in mine)
    model.eval(), again.eval()
    with torch.no_grad():
        a, b = model.step_outputs(batch), again.step_outputs(batch)
    assert sorted(a) == sorted(b) and all(torch.equal(a[k], b[k]) for k in a)


def test_arguments_are_validated_by_the_checks_family():
    from faircl._checks import check_in_range
    from faircl.methods import OneStageCL

    check_in_range("gamma", 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match=r"^gamma must be in \[0.0, 1.0\], got 1.5$"):
        OneStageCL(gamma=1.5, input_dim=4)
    with pytest.raises(ValueError, match=r"^optimizer must be one of \('adam', 'adamw', 'sgd'\), got 'lbfgs'$"):
        ConFair(optimizer="lbfgs", input_dim=4)
    with pytest.raises(ValueError, match=r"^cs_reduction must be one of \('code', 'paper'\), got 'sum'$"):
        TwoStageCL(cs_reduction="sum", input_dim=4)
    with pytest.raises(ValueError, match=r"^grad_cache_chunk: CCD does not train through the gradient cache"):
        CCD(grad_cache_chunk=4, encoder="mlp", input_dim=4)
