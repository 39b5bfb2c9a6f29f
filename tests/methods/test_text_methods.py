"""Fair text-classification methods: TwoStageCL, OneStageCL, ConFair (Con_* and Con_*^ft), Adversarial,
DiverseAdversarial and INLP."""

from __future__ import annotations

from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch
from lightning.pytorch.callbacks import Callback

from faircl.data.synthetic import BiasedFeatures
from faircl.methods import CE
from faircl.methods.adversarial import Adversarial, DiverseAdversarial
from faircl.methods.confair import ConFair
from faircl.methods.inlp import INLP, inlp_projection, nullspace_projection
from faircl.methods.one_stage_cl import OneStageCL
from faircl.methods.two_stage_cl import TwoStageCL
from faircl.testing import quiet_trainer_kwargs

REPO = Path(__file__).resolve().parents[2]
CONFIGS = ["confair", "two_stage_cl", "one_stage_cl", "adversarial", "diverse_adversarial", "inlp"]
SMALL = {
    "biased_features": ["--data.init_args.n_train=256", "--data.init_args.n_val=64", "--data.init_args.n_test=128"],
    "synthbios": ["--data.init_args.n_train=192", "--data.init_args.n_val=64", "--data.init_args.n_test=96"],
}
ENC = {"hidden_dim": 32, "num_layers": 2}


def _small_dm(**kw) -> BiasedFeatures:
    dm = BiasedFeatures(n_train=kw.pop("n_train", 512), n_val=64, n_test=kw.pop("n_test", 256),
                        batch_size=kw.pop("batch_size", 64), **kw)
    dm._reported = True  # no count tables in the test log
    return dm


def _trainer(**over) -> L.Trainer:
    return L.Trainer(**quiet_trainer_kwargs(num_sanity_val_steps=0, **over))


# --------------------------------------------------------------------------------------------- CLI fit / test
@pytest.mark.parametrize("dataset", ["biased_features", "synthbios"])
@pytest.mark.parametrize("method", CONFIGS)
def test_cli_fit_and_test_fast_dev_run(method, dataset, in_tmp):
    from faircl.cli import run_cli as main

    cfg = REPO / "configs" / method / f"{dataset}.yaml"
    cli = main(["fit", "--config", str(cfg), "--trainer.fast_dev_run=true", "--trainer.logger=false",
                "--trainer.enable_progress_bar=false", *SMALL[dataset]])
    model = cli.model
    assert type(model).__name__ == {"confair": "ConFair", "two_stage_cl": "TwoStageCL", "one_stage_cl": "OneStageCL",
                                    "adversarial": "Adversarial", "diverse_adversarial": "DiverseAdversarial",
                                    "inlp": "INLP"}[method]
    cli.trainer.test(model, datamodule=cli.datamodule, verbose=False)
    report = model.test_report
    for key in ("accuracy", "tpr_gap_rms", "eo_gap", "leakage_h", "leakage_yhat"):
        assert key in report and np.isfinite(report[key]), (key, report)


@pytest.mark.parametrize("cfg", ["confair/biased_features_ft.yaml", "confair/synthbios_ft.yaml"])
def test_cli_con_ft_fast_dev_run(cfg, in_tmp):
    from faircl.cli import run_cli as main

    dataset = cfg.split("/")[1].replace("_ft.yaml", "")
    cli = main(["fit", "--config", str(REPO / "configs" / cfg), "--trainer.fast_dev_run=true",
                "--trainer.logger=false", "--trainer.enable_progress_bar=false", *SMALL[dataset]])
    assert cli.model.pipeline and cli.model.stage_epochs()[0][0] == "contrastive"


def test_contrastive_methods_need_two_views():
    dm = _small_dm(n_train=128)
    model = TwoStageCL(input_dim=dm.input_dim, encoder_kwargs=ENC, leakage=False)
    with pytest.raises(ValueError, match="two_views"):
        _trainer(max_epochs=1, limit_train_batches=1, limit_val_batches=0).fit(model, datamodule=dm)


# --------------------------------------------------------------------------------------------- mitigation works
def _fit_report(model, dm, epochs: int) -> dict[str, float]:
    trainer = _trainer(max_epochs=epochs, limit_val_batches=0)
    trainer.fit(model, datamodule=dm)
    trainer.test(model, datamodule=dm, verbose=False)
    return model.test_report


@pytest.fixture(scope="module")
def ce_report():
    L.seed_everything(0, verbose=False)
    dm = _small_dm(n_train=2000, n_test=1000, batch_size=128)
    dm.setup()
    return _fit_report(CE(input_dim=dm.input_dim, encoder_kwargs=ENC, lr=3e-3), dm, 8)


def test_ce_is_biased_on_biased_features(ce_report):
    # the premise of the two tests below: the unmitigated model uses the attribute shortcut
    assert ce_report["tpr_gap_rms"] > 0.25 and ce_report["leakage_h"] > 0.8, ce_report


def test_confair_lowers_gap_and_leakage_vs_ce(ce_report):
    L.seed_everything(0, verbose=False)
    dm = _small_dm(n_train=2000, n_test=1000, batch_size=128)
    report = _fit_report(ConFair(input_dim=dm.input_dim, encoder_kwargs=ENC, lr=3e-3, lambda_fair=1.0, temperature=0.01),
                         dm, 8)
    assert report["tpr_gap_rms"] < ce_report["tpr_gap_rms"] - 0.15, (report, ce_report)
    assert report["leakage_h"] < ce_report["leakage_h"] - 0.1, (report, ce_report)
    assert report["accuracy"] > ce_report["accuracy"] - 0.02


def test_inlp_lowers_gap_and_leakage_vs_ce(ce_report):
    L.seed_everything(0, verbose=False)
    dm = _small_dm(n_train=2000, n_test=1000, batch_size=128)
    model = INLP(input_dim=dm.input_dim, encoder_kwargs=ENC, lr=3e-3, stage1_epochs=6, n_clf=20, probe="logistic")
    report = _fit_report(model, dm, 8)
    assert bool(model.projection_fitted)
    assert report["tpr_gap_rms"] < ce_report["tpr_gap_rms"] - 0.1, (report, ce_report)
    assert report["leakage_h"] < ce_report["leakage_h"] - 0.1, (report, ce_report)


# --------------------------------------------------------------------------------------------- stages
class _Watch(Callback):
    """Records the stage and a copy of the encoder weights at every train epoch start / end."""

    def __init__(self) -> None:
        self.stages, self.start, self.end, self.frozen = [], {}, {}, {}

    def on_train_epoch_start(self, trainer, module) -> None:
        self.stages.append(module.stage)
        self.start[trainer.current_epoch] = {k: v.clone() for k, v in module.encoder.state_dict().items()}

    def on_train_epoch_end(self, trainer, module) -> None:
        self.end[trainer.current_epoch] = {k: v.clone() for k, v in module.encoder.state_dict().items()}
        self.frozen[trainer.current_epoch] = all(not p.requires_grad for p in module.encoder.parameters())


def _same(a: dict, b: dict) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


def test_two_stage_cl_freezes_encoder_in_stage_two():
    L.seed_everything(0, verbose=False)
    dm = _small_dm(n_train=256, two_views=True)
    model = TwoStageCL(input_dim=dm.input_dim, encoder_kwargs=ENC, stage1_epochs=2, lambda_cs=1.0, lr=1e-2)
    watch = _Watch()
    head_before = {k: v.clone() for k, v in model.classifier.state_dict().items()}
    _trainer(max_epochs=4, limit_val_batches=1, callbacks=[watch]).fit(model, datamodule=dm)
    assert watch.stages == ["contrastive", "contrastive", "classifier", "classifier"]
    assert not _same(watch.start[0], watch.end[1])  # stage 1 trains the encoder
    assert _same(watch.end[1], watch.end[3])  # stage 2 leaves it untouched
    assert watch.frozen[2] and watch.frozen[3] and not watch.frozen[1]
    assert not _same(head_before, model.classifier.state_dict())


def test_two_stage_cl_resumes_from_stage_one_checkpoint(tmp_path):
    L.seed_everything(0, verbose=False)
    dm = _small_dm(n_train=256, two_views=True)
    kw = dict(input_dim=dm.input_dim, encoder_kwargs=ENC, stage1_epochs=2, lambda_cs=0.5, lr=1e-2)
    first = _trainer(max_epochs=2, limit_val_batches=0)
    first.fit(TwoStageCL(**kw), datamodule=dm)
    ckpt = tmp_path / "stage1.ckpt"
    first.save_checkpoint(ckpt)
    saved = torch.load(ckpt, map_location="cpu", weights_only=False)
    enc_saved = {k[len("encoder."):]: v for k, v in saved["state_dict"].items() if k.startswith("encoder.")}

    resumed = TwoStageCL(**kw)
    watch = _Watch()
    _trainer(max_epochs=4, limit_val_batches=0, callbacks=[watch]).fit(resumed, datamodule=dm, ckpt_path=str(ckpt))
    assert watch.stages == ["classifier", "classifier"]  # lands in stage 2, does not redo stage 1
    assert sorted(watch.start) == [2, 3]
    assert _same(enc_saved, watch.start[2]) and _same(enc_saved, resumed.encoder.state_dict())
    assert watch.frozen[2] and watch.frozen[3]
    reloaded = TwoStageCL.load_from_checkpoint(ckpt)
    assert reloaded.hparams.lambda_cs == 0.5 and reloaded.hparams.stage1_epochs == 2


def test_con_ft_pipeline_freezes_encoder_and_trains_only_the_head():
    L.seed_everything(0, verbose=False)
    dm = _small_dm(n_train=256)
    model = ConFair(input_dim=dm.input_dim, encoder_kwargs=ENC, pipeline=True, stage1_epochs=1, temperature=0.1)
    watch = _Watch()
    _trainer(max_epochs=3, limit_val_batches=0, callbacks=[watch]).fit(model, datamodule=dm)
    assert watch.stages == ["contrastive", "classifier", "classifier"]
    assert not _same(watch.start[0], watch.end[0]) and _same(watch.end[0], watch.end[2])


def test_confair_loss_terms_and_lambda():
    model = ConFair(input_dim=8, lambda_fair=3.0, temperature=0.1, leakage=False)
    assert model.alpha == pytest.approx(0.25) and model.beta == pytest.approx(0.75)
    torch.manual_seed(0)
    batch = {"x": torch.randn(16, 8), "y": torch.randint(0, 2, (16,)), "a": torch.randint(0, 2, (16,))}
    out = model(batch["x"])
    assert torch.allclose(out["z"].norm(dim=1), torch.ones(16))
    terms = model.losses(batch, out)
    expect = 0.25 * terms["ce"] + 0.75 * (terms["scl"] - terms["fcl"])
    assert torch.allclose(terms["loss"], expect)
    batch["a"][:] = -1  # no attribute known: L_fcl has no anchor, the loss stays finite
    terms = model.losses(batch, model(batch["x"]))
    assert torch.isfinite(terms["loss"]) and terms["fcl"] == 0
    with pytest.raises(ValueError, match="fcl_conditioning"):
        ConFair(input_dim=8, fcl_conditioning="group")


def test_one_stage_cl_combines_the_three_terms():
    model = OneStageCL(input_dim=8, lambda_cs=2.0, gamma=0.3, leakage=False)
    torch.manual_seed(0)
    x = torch.randn(12, 8)
    batch = {"x": x, "x2": x + 0.1 * torch.randn_like(x), "y": torch.randint(0, 2, (12,)),
             "a": torch.randint(0, 2, (12,))}
    terms = model.losses(batch, model(x))
    assert torch.allclose(terms["loss"], 0.7 * terms["ce"] + 0.3 * terms["sup"] + 2.0 * terms["cs"])
    with pytest.raises(ValueError, match="gamma"):
        OneStageCL(input_dim=8, gamma=1.5)


# --------------------------------------------------------------------------------------------- adversaries
@pytest.mark.parametrize("conditional", [False, True])
def test_adversary_gradient_reaches_the_encoder_reversed(conditional):
    torch.manual_seed(0)
    lam = 0.7
    model = Adversarial(input_dim=8, lambda_adv=lam, conditional=conditional, leakage=False)
    x, y, a = torch.randn(32, 8), torch.randint(0, 2, (32,)), torch.randint(0, 2, (32,))

    # through the method: d L_adv / d encoder
    model.zero_grad()
    model.adversarial_terms(model.encoder(x), y, a)["adv"].backward()
    enc_rev = [p.grad.clone() for p in model.encoder.parameters()]
    disc_rev = [p.grad.clone() for p in model.discriminators.parameters()]

    # reference: the discriminator's plain cross-entropy on h, no reversal
    model.zero_grad()
    h = model.encoder(x)
    inp = torch.cat([h, torch.nn.functional.one_hot(y, 2).float()], 1) if conditional else h
    torch.nn.functional.cross_entropy(model.discriminators[0](inp)[0], a).backward()
    enc_ref = [p.grad.clone() for p in model.encoder.parameters()]
    disc_ref = [p.grad.clone() for p in model.discriminators.parameters()]

    for g, r in zip(enc_rev, enc_ref):
        assert r.abs().max() > 0
        torch.testing.assert_close(g, -lam * r)
    for g, r in zip(disc_rev, disc_ref):  # the discriminator itself learns normally
        torch.testing.assert_close(g, r)


def test_adversarial_total_loss_and_unknown_attributes():
    torch.manual_seed(0)
    model = DiverseAdversarial(input_dim=8, lambda_adv=1.0, lambda_diff=10.0, leakage=False)
    assert len(model.discriminators) == 3
    batch = {"x": torch.randn(16, 8), "y": torch.randint(0, 2, (16,)), "a": torch.randint(0, 2, (16,))}
    terms = model.losses(batch, model(batch["x"]))
    assert torch.allclose(terms["loss"], terms["ce"] + terms["adv"] + 10.0 * terms["diff"])
    batch["a"][:] = -1
    terms = model.losses(batch, model(batch["x"]))
    assert terms["adv"] == 0 and torch.allclose(terms["loss"], terms["ce"])
    terms["loss"].backward()
    assert all(torch.isfinite(p.grad).all() for p in model.encoder.parameters() if p.grad is not None)
    with pytest.raises(ValueError, match="n_adv"):
        DiverseAdversarial(input_dim=8, n_adv=1)


def test_diverse_adversarial_checkpoint_round_trip(tmp_path):
    dm = _small_dm(n_train=128)
    model = DiverseAdversarial(input_dim=dm.input_dim, encoder_kwargs=ENC, lambda_adv=0.3, adv_hidden=16)
    trainer = _trainer(max_epochs=1, limit_train_batches=1, limit_val_batches=0)
    trainer.fit(model, datamodule=dm)
    trainer.save_checkpoint(tmp_path / "m.ckpt")
    back = DiverseAdversarial.load_from_checkpoint(tmp_path / "m.ckpt")
    assert back.hparams.lambda_adv == 0.3 and back.hparams.n_adv == 3 and back.hparams.adv_hidden == 16
    x = torch.randn(4, dm.input_dim)
    torch.testing.assert_close(back.eval()(x)["logits"], model.eval()(x)["logits"])


# --------------------------------------------------------------------------------------------- INLP
def _linear_attribute_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    dirs = np.random.default_rng(123).standard_normal((4, 20))  # attribute in 3 directions, label in one
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.5, y, 1 - y)
    x = rng.standard_normal((n, 20)) + 2.0 * np.outer(a, dirs[0] + dirs[1] - dirs[2]) + 1.5 * np.outer(y, dirs[3])
    x += 0.5 * np.outer(a, dirs[1])
    return x, y, a


@pytest.mark.parametrize("per_class", [False, True])
def test_inlp_projection_brings_a_fresh_probe_to_chance(per_class):
    from sklearn.linear_model import LogisticRegression

    x, y, a = _linear_attribute_data(3000, 0)
    xt, yt, at = _linear_attribute_data(2000, 1)
    before = LogisticRegression(max_iter=2000).fit(x, a).score(xt, at)
    # min_accuracy stops the rounds once the probe is at chance (more rounds would remove random directions)
    proj, acc = inlp_projection(x, a, y if per_class else None, n_clf=10, probe="svm", min_accuracy=0.55, seed=0)
    torch.testing.assert_close(torch.as_tensor(proj), torch.as_tensor(proj.T))  # symmetric
    torch.testing.assert_close(torch.as_tensor(proj @ proj), torch.as_tensor(proj))  # idempotent
    after = LogisticRegression(max_iter=2000).fit(x @ proj, a).score(xt @ proj, at)
    assert before > 0.9
    assert abs(after - 0.5) < 0.04, after
    assert acc[0] > 0.9 and acc[-1] < 0.55 and len(acc) < 10
    task = LogisticRegression(max_iter=2000).fit(x @ proj, y).score(xt @ proj, yt)
    assert task > 0.65  # the label direction survives (per class, each round removes one direction per class)


def test_nullspace_projection_removes_exactly_the_directions():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 6))
    p = nullspace_projection(np.concatenate([w, w[:1] + w[1:2]]), 6)  # a dependent row changes nothing
    np.testing.assert_allclose(w @ p, 0, atol=1e-10)
    assert np.linalg.matrix_rank(p) == 3
    np.testing.assert_allclose(nullspace_projection(np.zeros((0, 6)), 6), np.eye(6))
    # the dependent row up to round-off (entries × (1 + k·eps), |k| <= 4): still 3 directions, on any CPU's kernels
    for seed in range(5):
        k = np.random.default_rng(seed).integers(-4, 5, (1, 6))
        noisy = nullspace_projection(np.concatenate([w, (w[:1] + w[1:2]) * (1 + k * np.finfo(float).eps)]), 6)
        assert np.linalg.matrix_rank(noisy) == 3
        np.testing.assert_allclose(noisy, p, atol=1e-10)


def test_inlp_projection_is_a_checkpointed_buffer(tmp_path):
    L.seed_everything(0, verbose=False)
    dm = _small_dm(n_train=256)
    model = INLP(input_dim=dm.input_dim, encoder_kwargs=ENC, stage1_epochs=1, n_clf=3, leakage=False)
    trainer = _trainer(max_epochs=2, limit_val_batches=0)
    trainer.fit(model, datamodule=dm)
    assert bool(model.projection_fitted) and not torch.allclose(model.projection, torch.eye(32))
    trainer.save_checkpoint(tmp_path / "inlp.ckpt")
    back = INLP.load_from_checkpoint(tmp_path / "inlp.ckpt")
    torch.testing.assert_close(back.projection, model.projection)
    assert bool(back.projection_fitted) and back.hparams.n_clf == 3
    x = torch.randn(5, dm.input_dim)
    out = back.eval()(x)
    torch.testing.assert_close(out["h"], back.encoder(x) @ back.projection)
    # resuming inside the projection stage keeps the fitted projection instead of refitting it
    resumed = INLP(input_dim=dm.input_dim, encoder_kwargs=ENC, stage1_epochs=1, n_clf=3, leakage=False)
    _trainer(max_epochs=3, limit_val_batches=0).fit(resumed, datamodule=dm, ckpt_path=str(tmp_path / "inlp.ckpt"))
    torch.testing.assert_close(resumed.projection, model.projection)


def test_inlp_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="probe"):
        INLP(input_dim=8, probe="tree")
    with pytest.raises(FileNotFoundError, match="encoder_checkpoint"):
        INLP(input_dim=8, encoder_checkpoint=str(tmp_path / "missing.ckpt"))
