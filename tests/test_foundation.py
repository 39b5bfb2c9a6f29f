"""FairModule / FairDataModule / embedded data: counts, determinism, stages and resume, DDP, bf16, bad input."""

from __future__ import annotations

import lightning as L
import pytest
import torch

from faircl.data import BiasedFeatures, ColoredDigits, DataError, FairDataModule, FairDataset, SynthBios, encode_groups
from faircl.methods import CE, FairModule
from faircl.testing import quiet_trainer_kwargs


def _skew(counts: torch.Tensor, num_groups: int) -> float:
    """Share of rows whose attribute equals ``class mod G`` (the stereotyped cell)."""
    c = counts[:, :num_groups].double()
    stereo = sum(c[y, y % num_groups] for y in range(c.shape[0]))
    return float(stereo / c.sum())


@pytest.mark.parametrize("bias", [0.5, 0.8, 0.95])
def test_biased_features_counts_match_configured_skew(bias):
    dm = BiasedFeatures(n_train=20000, n_val=200, n_test=20000, bias=bias, seed=1)
    assert _skew(dm.count_table("train"), 2) == pytest.approx(bias, abs=0.01)
    assert _skew(dm.count_table("test"), 2) == pytest.approx(0.5, abs=0.01)
    assert dm.count_table("train")[:, -1].sum() == 0  # no unknown attribute


def test_multiclass_multigroup_skew():
    dm = BiasedFeatures(n_train=30000, n_test=30000, num_classes=6, num_groups=3, bias=0.7, dim=16)
    assert dm.num_classes == 6 and dm.num_groups == 3
    assert _skew(dm.count_table("train"), 3) == pytest.approx(0.7, abs=0.01)
    assert _skew(dm.count_table("test"), 3) == pytest.approx(1 / 3, abs=0.01)


def test_synthbios_and_digits_skew():
    bios = SynthBios(n_train=4000, n_val=100, n_test=4000, bias=0.8)
    t = bios.count_table("train")[:, :2].double()
    stereo = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])  # surgeon.. pastor male-typed, nurse.. yoga female-typed
    share = t[torch.arange(8), stereo].sum() / t.sum()
    assert float(share) == pytest.approx(0.8, abs=0.02)
    assert float(bios.count_table("test")[:, 0].sum() / 4000) == pytest.approx(0.5, abs=0.03)
    digits = ColoredDigits(bias=0.9)
    assert _skew(digits.count_table("train"), 2) == pytest.approx(0.9, abs=0.03)
    assert sum(len(digits.splits[s]) for s in ("train", "val", "test")) == 1797


def test_batches_follow_the_contract():
    dm = BiasedFeatures(n_train=300, n_val=50, n_test=50, two_views=True, batch_size=32)
    dm.setup("fit")
    b = next(iter(dm.train_dataloader()))
    assert set(b) == {"x", "x2", "y", "a", "idx"}
    assert b["x"].shape == b["x2"].shape == (32, 32)
    assert not torch.equal(b["x"], b["x2"])
    assert b["y"].dtype == b["a"].dtype == b["idx"].dtype == torch.long
    ev = next(iter(dm.val_dataloader()))
    assert "x2" not in ev and torch.equal(ev["idx"], torch.arange(32))


def test_encode_groups_intersectional_and_unknown():
    gender = ["female", "male", "x", "female", "male"]
    race = ["black", "white", "black", "white", ""]
    ids, names = encode_groups([gender, race])
    assert names == ["female|black", "female|white", "male|black", "male|white"]
    assert ids.tolist() == [0, 3, -1, 1, -1]
    with pytest.raises(DataError, match="not one of the known categories"):
        encode_groups([["a", "c"]], categories=[["a", "b"]])


def test_dataset_rejects_bad_labels_and_groups():
    with pytest.raises(DataError, match=r"label 5 outside \[0, 2\).*file 'bios.csv', column 'profession', row 1"):
        FairDataset(torch.zeros(3, 2), [0, 5, 1], [0, 1, 0], num_classes=2, num_groups=2, source="bios.csv",
                    y_column="profession")
    with pytest.raises(DataError, match=r"attribute id 2 outside \[-1, 2\)"):
        FairDataset(torch.zeros(2, 2), [0, 1], [2, 0], num_classes=2, num_groups=2)
    with pytest.raises(DataError, match="has 3 rows but y has 2"):
        FairDataset(torch.zeros(3, 2), [0, 1], [0, 1], num_classes=2, num_groups=2)


class _EmptyTest(FairDataModule):
    def load_splits(self):
        full = FairDataset(torch.zeros(4, 2), [0, 1, 0, 1], [0, 0, 1, 1], num_classes=2, num_groups=2)
        empty = FairDataset(torch.zeros(0, 2), [], [], num_classes=2, num_groups=2, source="test.csv")
        return {"train": full, "val": full, "test": empty}


def test_empty_split_is_an_error_naming_it():
    with pytest.raises(DataError, match=r"the 'test' split is empty \(file 'test.csv'\)"):
        _EmptyTest().setup("fit")


def _fit_test(seed: int, **trainer_kw) -> dict[str, float]:
    L.seed_everything(seed)
    dm = BiasedFeatures(n_train=1000, n_val=200, n_test=400, batch_size=64, seed=seed)
    model = CE(num_classes=dm.num_classes, num_groups=dm.num_groups, input_dim=dm.input_dim,
               encoder_kwargs={"hidden_dim": 32}, leakage=False)
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=2, **trainer_kw))
    trainer.fit(model, datamodule=dm)
    trainer.test(model, datamodule=dm, verbose=False)
    return model.test_report


def test_same_seed_gives_identical_metrics():
    a, b = _fit_test(3), _fit_test(3)
    assert a == b
    assert a != _fit_test(4)


def test_ce_shows_bias_on_biased_features():
    L.seed_everything(0)
    dm = BiasedFeatures(seed=0)
    model = CE(num_classes=2, num_groups=2, input_dim=dm.input_dim, encoder_kwargs={"hidden_dim": 64})
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=5))
    trainer.fit(model, datamodule=dm)
    trainer.test(model, datamodule=dm, verbose=False)
    r = model.test_report
    assert r["accuracy"] > 0.6
    assert r["tpr_gap_rms"] > 0.15, r  # the shortcut makes the groups' TPRs differ
    assert r["leakage_h"] > 0.8  # the attribute is linearly recoverable from h


def test_bf16_mixed_run_completes():
    r = _fit_test(0, precision="bf16-mixed")
    assert 0.5 < r["accuracy"] <= 1.0


# ------------------------------------------------------------------ stages and resume
class TwoStageToy(FairModule):
    """Stage "pre" trains everything; stage "head" freezes the encoder and records what happened."""

    def __init__(self, pre_epochs: int = 2, **kwargs) -> None:
        super().__init__(**kwargs)
        self.register_buffer("stage_starts", torch.zeros(2, dtype=torch.long))
        self.seen: list[str] = []

    def stage_epochs(self):
        return [("pre", self.hparams.pre_epochs), ("head", None)]

    def on_stage_start(self, stage: str) -> None:
        self.stage_starts[["pre", "head"].index(stage)] += 1
        if stage == "head":
            self.freeze_module(self.encoder)

    def training_step(self, batch, batch_idx):
        self.seen.append(self.stage)
        return super().training_step(batch, batch_idx)


def test_stages_switch_at_epoch_boundaries_and_resume(tmp_path):
    dm = BiasedFeatures(n_train=256, n_val=64, n_test=64, batch_size=64)
    kw = dict(num_classes=2, num_groups=2, input_dim=dm.input_dim, encoder_kwargs={"hidden_dim": 16}, leakage=False)
    model = TwoStageToy(pre_epochs=2, **kw)
    ckpt_cb = L.pytorch.callbacks.ModelCheckpoint(dirpath=tmp_path, save_top_k=-1, every_n_epochs=1,
                                                  filename="{epoch}")
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=4, enable_checkpointing=True, callbacks=[ckpt_cb]))
    trainer.fit(model, datamodule=dm)
    per_epoch = len(model.seen) // 4
    assert model.seen == ["pre"] * 2 * per_epoch + ["head"] * 2 * per_epoch
    assert all(not p.requires_grad for p in model.encoder.parameters())

    # Resume from the end of epoch 2 (first epoch of "head" already done): lands in "head", re-applies the freeze.
    resumed = TwoStageToy(pre_epochs=2, **kw)
    trainer2 = L.Trainer(**quiet_trainer_kwargs(max_epochs=4))
    enc_before = {k: v.clone() for k, v in torch.load(tmp_path / "epoch=2.ckpt", weights_only=False)[
        "state_dict"].items() if k.startswith("encoder.")}
    trainer2.fit(resumed, datamodule=dm, ckpt_path=tmp_path / "epoch=2.ckpt")
    assert resumed.seen == ["head"] * per_epoch
    assert resumed.stage_starts.tolist() == [1, 2]  # "pre" once before the checkpoint, "head" again after resume
    for k, v in resumed.state_dict().items():
        if k.startswith("encoder."):
            assert torch.equal(v, enc_before[k]), f"{k} changed in the frozen stage"

    # Resume from the middle of "pre" (after epoch 0): continues in "pre" then switches.
    resumed2 = TwoStageToy(pre_epochs=2, **kw)
    L.Trainer(**quiet_trainer_kwargs(max_epochs=4)).fit(resumed2, datamodule=dm, ckpt_path=tmp_path / "epoch=0.ckpt")
    assert resumed2.seen == ["pre"] * per_epoch + ["head"] * 2 * per_epoch


def test_checkpoint_rebuilds_the_module(tmp_path):
    dm = BiasedFeatures(n_train=128, n_val=64, n_test=64, batch_size=64)
    model = TwoStageToy(pre_epochs=3, num_classes=2, num_groups=2, input_dim=dm.input_dim,
                        encoder_kwargs={"hidden_dim": 8}, lr=0.01)
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=1))
    trainer.fit(model, datamodule=dm)
    trainer.save_checkpoint(tmp_path / "m.ckpt")
    loaded = TwoStageToy.load_from_checkpoint(tmp_path / "m.ckpt")
    assert loaded.hparams.pre_epochs == 3 and loaded.hparams.lr == 0.01
    assert loaded.encoder.out_dim == 8
    x = torch.randn(5, dm.input_dim)
    model.eval()
    assert torch.allclose(loaded(x)["logits"], model(x)["logits"])


# ------------------------------------------------------------------ DDP
def _ddp_report(strategy: str, devices: int) -> dict[str, float]:
    L.seed_everything(0)
    dm = BiasedFeatures(n_train=512, n_val=101, n_test=203, batch_size=64, seed=0)
    model = CE(num_classes=2, num_groups=2, input_dim=dm.input_dim, encoder_kwargs={"hidden_dim": 16})
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=1, strategy=strategy, devices=devices))
    trainer.fit(model, datamodule=dm)
    return model, trainer, dm


@pytest.mark.ddp
@pytest.mark.slow
def test_ddp_spawn_two_processes_completes_and_test_metrics_are_exact():
    model, trainer, dm = _ddp_report("ddp_spawn", 2)
    # ddp_spawn returns the trained weights to the main process; evaluate the same weights both ways.
    single = L.Trainer(**quiet_trainer_kwargs())
    single.test(model, datamodule=dm, verbose=False)
    ref = dict(model.test_report)
    ddp = L.Trainer(**quiet_trainer_kwargs(strategy="ddp_spawn", devices=2))
    ddp.test(model, datamodule=dm, verbose=False)
    # ddp_spawn does not copy attributes back: rerun through callback_metrics (logged from the gathered report).
    got = {k[len("test/"):]: float(v) for k, v in ddp.callback_metrics.items() if k.startswith("test/")}
    for key in ("accuracy", "tpr_gap_rms", "eo_gap", "dp_gap", "leakage_h"):
        assert got[key] == pytest.approx(ref[key], abs=1e-6), key


def test_gather_rows_keeps_each_row_once_in_idx_order():
    """A padded distributed shard repeats rows; the gathered rows hold each ``idx`` once, sorted, fields aligned."""
    from faircl.utils import gather_rows

    parts = [{"idx": torch.tensor([4, 0, 2]), "h": torch.tensor([[4.0], [0.0], [2.0]])},
             {"idx": torch.tensor([1, 3, 4, 0]), "h": torch.tensor([[1.0], [3.0], [4.0], [0.0]])}]  # 4, 0 padded
    rows = gather_rows(parts)
    assert rows["idx"].tolist() == [0, 1, 2, 3, 4]
    assert rows["h"].flatten().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    plain = gather_rows([{"h": torch.ones(3, 1)}, {"h": torch.zeros(2, 1)}])  # no idx: kept as given
    assert plain["h"].flatten().tolist() == [1.0, 1.0, 1.0, 0.0, 0.0]
