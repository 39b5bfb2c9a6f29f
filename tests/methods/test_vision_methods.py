"""PARADE, the finDML baselines (DML) and FairSamplingSimCLR / SimCLR on ColoredDigits with the small conv encoder."""

from __future__ import annotations

from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from faircl.data.synthetic import ColoredDigits
from faircl.mining.mined import MetricObjective, mined_contrastive_loss
from faircl.methods.dml import DML
from faircl.methods.fair_sampling_simclr import FairSamplingSimCLR, SimCLR
from faircl.metrics import linear_probe as shared_linear_probe
from faircl.metrics.clustering import kmeans
from faircl.methods.parade import PARADE
from faircl.testing import quiet_trainer_kwargs

REPO = Path(__file__).resolve().parents[2]
TINY_ENCODER = dict(encoder="conv", encoder_kwargs={"width": 4, "out_dim": 16}, input_dim=3)


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models: one intra-op thread is fastest (and avoids oversubscription on a shared machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ---------------------------------------------------------------------------------------------------------- DML


def test_mined_contrastive_matches_pytorch_metric_learning():
    pml = pytest.importorskip("pytorch_metric_learning")
    from pytorch_metric_learning.losses import ContrastiveLoss

    torch.manual_seed(0)
    z = torch.randn(12, 8, dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 1, 2, 2, 0, 1, 2, 3, 3, 3])
    from faircl.mining import semihard_triplets

    triplets = semihard_triplets(z, y)
    assert triplets[0].numel() > 0
    ours = mined_contrastive_loss(z, triplets, pos_margin=0.1, neg_margin=1.2)
    ref = ContrastiveLoss(pos_margin=0.1, neg_margin=1.2)(F.normalize(z, dim=1), y, indices_tuple=triplets)
    assert pml is not None
    torch.testing.assert_close(ours, ref.to(ours.dtype), rtol=1e-6, atol=1e-8)


def test_mined_contrastive_literal_pairs():
    torch.manual_seed(1)
    z = torch.randn(6, 4, dtype=torch.float64)
    a, p, n = torch.tensor([0, 1, 2]), torch.tensor([1, 0, 3]), torch.tensor([4, 5, 0])
    zn = F.normalize(z, dim=1)
    pos = [max(0.0, float((zn[i] - zn[j]).norm()) - 0.0) for i, j in zip(a.tolist(), p.tolist())]
    neg = [max(0.0, 1.0 - float((zn[i] - zn[j]).norm())) for i, j in zip(a.tolist(), n.tolist())]
    expected = sum(pos) / max(1, sum(v > 0 for v in pos)) + sum(neg) / max(1, sum(v > 0 for v in neg))
    assert float(mined_contrastive_loss(z, (a, p, n))) == pytest.approx(expected, rel=1e-9)
    empty = torch.empty(0, dtype=torch.long)
    zero = mined_contrastive_loss(z.requires_grad_(), (empty, empty, empty))
    assert float(zero.detach()) == 0.0 and zero.requires_grad


@pytest.mark.parametrize("loss,miner", [("margin", "distance"), ("margin", "semihard"), ("triplet", "distance"),
                                        ("triplet", "semihard"), ("contrastive", "distance"), ("contrastive", "all"),
                                        ("multisimilarity", "none"), ("proxynca", "none"), ("arcface", "none")])
def test_every_objective_is_finite_with_gradients(loss, miner):
    torch.manual_seed(0)
    obj = MetricObjective(loss, miner, num_labels=4, embed_dim=16)
    z = torch.randn(16, 16, requires_grad=True)
    y = torch.arange(4).repeat_interleave(4)
    value, _ = obj(F.normalize(z, dim=1), y)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(z.grad).all() and z.grad.abs().sum() > 0
    # degenerate: a single class (no negatives) and all-unknown labels give a finite 0-or-more loss
    for labels in (torch.zeros(16, dtype=torch.long), torch.full((16,), -1)):
        z2 = torch.randn(16, 16, requires_grad=True)
        v2, _ = obj(F.normalize(z2, dim=1), labels)
        v2.backward()
        assert torch.isfinite(v2) and torch.isfinite(z2.grad).all()


def test_bad_loss_miner_choices_are_rejected():
    with pytest.raises(ValueError, match="loss='nope'"):
        MetricObjective("nope")
    with pytest.raises(ValueError, match="needs triplets"):
        MetricObjective("margin", "none")
    with pytest.raises(ValueError, match="miner='none'"):
        MetricObjective("proxynca", "distance")
    with pytest.raises(ValueError, match="PARADE needs a triplet loss"):
        PARADE(loss="proxynca", miner="none", **TINY_ENCODER)


def test_dml_param_groups_give_beta_and_proxies_their_learning_rate():
    m = DML(loss="margin", beta_lr=5e-4, **TINY_ENCODER)
    groups = m.param_groups()
    beta = [g for g in groups if any(p is m.objective.criterion.beta for p in g["params"])]
    assert len(beta) == 1 and beta[0]["lr"] == 5e-4 and beta[0]["weight_decay"] == 0.0
    assert sum(len(g["params"]) for g in groups) == len([p for p in m.parameters() if p.requires_grad])
    proxy = DML(loss="proxynca", miner="none", proxy_lr=0.05, **TINY_ENCODER)
    assert any(g.get("lr") == 0.05 for g in proxy.param_groups())


def test_dml_probe_does_not_reach_the_embedding():
    torch.manual_seed(0)
    m = DML(loss="triplet", miner="all", num_classes=4, **TINY_ENCODER)
    x = torch.rand(8, 3, 8, 8)
    batch = {"x": x, "y": torch.arange(4).repeat(2), "a": torch.zeros(8, dtype=torch.long)}
    out = m(x)
    F.cross_entropy(out["logits"], batch["y"]).backward()
    assert m.embed.weight.grad is None and m.classifier.weight.grad is not None


# ---------------------------------------------------------------------------------------------------------- PARADE


def test_decorrelation_term_reverses_the_gradient_of_the_embeddings():
    """``−ρ·c`` in the loss: ξ ascends c (gradient −ρ ∂c/∂ξ), the embeddings descend it (gradient +ρ ∂c/∂z)."""
    torch.manual_seed(0)
    rho = 7.0
    m = PARADE(lambda_sep=rho, embed_dim=6, decorr_hidden=5, **TINY_ENCODER)
    xi = m.decorrelation.regressor
    zt = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    zs = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    m.decorrelation.double()
    (-rho * m.decorrelation(zt, zs)).backward()
    got = [zt.grad.clone(), zs.grad.clone()] + [p.grad.clone() for p in xi.parameters()]

    # literal c without any reversal: c = 1/(B d) Σ_i Σ_j (t_ij · r_ij)², t = norm(z_t), r = norm(ξ(norm(z_s)))
    zt2, zs2 = zt.detach().clone().requires_grad_(), zs.detach().clone().requires_grad_()
    for p in xi.parameters():
        p.grad = None
    t = F.normalize(zt2, dim=1)
    r = F.normalize(xi(F.normalize(zs2, dim=1)), dim=1)
    c = sum((t[i, j] * r[i, j]) ** 2 for i in range(4) for j in range(6)) / 24
    c.backward()
    ref = [zt2.grad, zs2.grad] + [p.grad for p in xi.parameters()]
    torch.testing.assert_close(got[0], rho * ref[0])  # embeddings: +ρ ∂c/∂z (they minimise c)
    torch.testing.assert_close(got[1], rho * ref[1])
    for g, r_ in zip(got[2:], ref[2:]):
        torch.testing.assert_close(g, -rho * r_)  # ξ: −ρ ∂c/∂ξ (it maximises c)
    assert ref[0].abs().sum() > 0


def test_parade_losses_and_released_embedding():
    torch.manual_seed(0)
    m = PARADE(lambda_sa=0.3, lambda_sep=50.0, embed_dim=8, miner="semihard", num_classes=6, num_groups=2, **TINY_ENCODER)
    x = torch.rand(12, 3, 8, 8)
    batch = {"x": x, "y": torch.arange(6).repeat(2), "a": torch.tensor([0, 1, -1] * 4), "idx": torch.arange(12)}
    m.train()
    out = m(x)
    assert {"h", "z", "z_sa", "logits"} <= set(out)
    terms = m.losses(batch, out)
    corr = m.decorrelation(out["z"], out["z_sa"])
    torch.testing.assert_close(terms["decorr"], -50.0 * corr)
    l_sa, _ = m.objective_sa(out["z_sa"], batch["a"])
    torch.testing.assert_close(terms["sa"], 0.3 * l_sa)
    torch.testing.assert_close(terms["loss"], terms["targ"] + terms["sa"] + terms["decorr"] + terms["probe_ce"])
    terms["loss"].backward()
    assert m.embed_sa.weight.grad is not None and m.objective_sa.criterion.beta.grad is not None
    m.eval()
    released = m(x)
    assert set(released) == {"h", "z", "logits"}
    torch.testing.assert_close(released["z"], m.embed_both(x)["z"])


def test_decorrelation_lowers_the_correlation_between_heads():
    """Synthetic features; two PARADE models with the same seed, data, batches and ρ = 500, so the regressor ξ is
    trained identically hard in both. Only the gradient reversal into the embeddings differs (λ = 1 vs 0). The
    correlation c(φ_targ, φ_SA) measured on held-out rows by each model's own ξ must be clearly lower with it.
    (For λ = 1 it ends near 1/d, the value of embeddings with uniform coordinate magnitudes.)"""
    from faircl.data.synthetic import BiasedFeatures

    dm = BiasedFeatures(n_train=600, n_val=10, n_test=300, dim=16, num_classes=4, num_groups=2, seed=0)
    train, test = dm.splits["train"], dm.splits["test"]
    measured = {lam: _own_adversary_correlation(train, test, lam) for lam in (0.0, 1.0)}
    assert measured[1.0] < 0.6 * measured[0.0], measured


def _own_adversary_correlation(train, test, lam: float, steps: int = 100) -> float:
    """Train a small PARADE with reversal strength ``lam``; return c on ``test`` measured by its own regressor ξ."""
    torch.manual_seed(0)
    m = PARADE(num_classes=4, num_groups=2, input_dim=16, encoder="mlp", encoder_kwargs={"hidden_dim": 32},
               embed_dim=16, lambda_sa=0.3, lambda_sep=500.0, decorr_hidden=32, miner="semihard", leakage=False)
    m.decorrelation.reversal.lambda_ = lam
    opt = torch.optim.Adam(m.param_groups(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    m.train()
    for _ in range(steps):
        rows = torch.randperm(len(train), generator=g)[:64]
        batch = {"x": train.x[rows], "y": train.y[rows], "a": train.a[rows]}
        opt.zero_grad()
        m.losses(batch, m(batch["x"]))["loss"].backward()
        opt.step()
    m.eval()
    with torch.no_grad():
        out = m.embed_both(test.x)
        return float(m.decorrelation(out["z"], out["z_sa"]))


def test_parade_checkpoint_round_trip(tmp_path):
    m = PARADE(lambda_sa=0.3, lambda_sep=123.0, embed_dim=8, num_classes=10, num_groups=3, **TINY_ENCODER)
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=0))
    trainer.strategy.connect(m)
    path = tmp_path / "p.ckpt"
    trainer.save_checkpoint(path)
    back = PARADE.load_from_checkpoint(path)
    assert back.hparams.lambda_sep == 123.0 and back.hparams.lambda_sa == 0.3 and back.hparams.num_groups == 3
    assert back.hparams.loss == "margin" and back.hparams.embed_dim == 8


# ---------------------------------------------------------------------------------------------------------- SimCLR


def test_kmeans_is_deterministic_and_matches_scikit_learn():
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    g = torch.Generator().manual_seed(0)
    centers = torch.tensor([[0.0, 0.0], [5.0, 5.0], [0.0, 6.0], [6.0, 0.0]])
    x = torch.cat([c + 0.5 * torch.randn(40 + 10 * i, 2, generator=g) for i, c in enumerate(centers)])
    a, ca = kmeans(x, 4, seed=3)
    b, cb = kmeans(x.clone(), 4, seed=3)
    assert torch.equal(a, b) and torch.equal(ca, cb)
    ref = KMeans(4, n_init=10, random_state=0).fit_predict(x.numpy())
    assert adjusted_rand_score(ref, a.numpy()) == 1.0
    with pytest.raises(ValueError, match="1 <= k <= N"):
        kmeans(x[:3], 4)
    same, _ = kmeans(torch.ones(10, 3), 2)  # degenerate: identical points, still a valid partition
    assert same.shape == (10,) and int(same.max()) <= 1


def linear_probe(h_train, y_train, h_test, y_test, num_classes):
    """The test-time probe of the SimCLR methods: the one logistic probe of faircl.metrics, keys ``probe_*``."""
    scores = shared_linear_probe(h_train, y_train, h_test, y_test, "logistic", num_classes=num_classes)
    return {f"probe_{key}": float(scores[key]) for key in ("accuracy", "f1", "auc")}


def test_linear_probe_scores():
    g = torch.Generator().manual_seed(0)
    y = torch.arange(2).repeat(50)
    h = torch.randn(100, 4, generator=g) + 4.0 * y[:, None]
    r = linear_probe(h, y, h, y, num_classes=2)
    assert r["probe_accuracy"] == 1.0 and r["probe_f1"] == 1.0 and r["probe_auc"] == 1.0
    y3 = torch.arange(3).repeat(30)
    h3 = torch.randn(90, 4, generator=g) + 5.0 * F.one_hot(y3, 4).float()
    r3 = linear_probe(h3, y3, h3[y3 < 2], y3[y3 < 2], num_classes=3)
    assert r3["probe_accuracy"] == 1.0 and np.isnan(r3["probe_auc"])  # a class absent from the evaluated labels


def test_simclr_needs_two_views():
    m = SimCLR(**TINY_ENCODER)
    x = torch.rand(4, 3, 8, 8)
    with pytest.raises(ValueError, match="two_views"):
        m.losses({"x": x, "y": torch.zeros(4, dtype=torch.long)}, m(x))
    assert m.stage_epochs() == [("simclr", None)]
    fair = FairSamplingSimCLR(stage1_epochs=3, recluster_every=2, **TINY_ENCODER)
    assert fair.stage_epochs() == [("simclr", 3), ("fair", None)]
    assert [fair._due_clustering_epoch(e) for e in (3, 4, 5, 6, 7)] == [3, 3, 5, 5, 7]


class _SaveClusters(L.Callback):
    """Writes each rank's cluster buffers at the end of training (picklable for ddp_spawn)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def on_train_end(self, trainer, pl_module) -> None:
        torch.save({"ids": pl_module.cluster_ids.cpu(), "freq": pl_module.cluster_freq.cpu(),
                    "epoch": int(pl_module.cluster_epoch)},
                   Path(self.folder) / f"{trainer.world_size}_{trainer.global_rank}.pt")


def _cluster_run(folder: Path, devices: int, seed: int = 0) -> None:
    L.seed_everything(seed)
    dm = ColoredDigits(size=8, two_views=True, batch_size=32, seed=0)
    m = FairSamplingSimCLR(num_classes=10, num_groups=2, stage1_epochs=0, leakage=False, cluster_seed=seed,
                           **TINY_ENCODER)
    kw = quiet_trainer_kwargs(max_epochs=1, limit_train_batches=1, limit_val_batches=0,
                              callbacks=[_SaveClusters(str(folder))])
    if devices > 1:
        kw.update(devices=devices, strategy="ddp_spawn")
    L.Trainer(**kw).fit(m, datamodule=dm)


def test_cluster_phase_is_deterministic_and_identical_on_one_and_two_processes(tmp_path):
    """The cluster phase runs at the first epoch (stage1_epochs=0), i.e. on the seeded initial weights, which
    are the same in every run; the partition must be the same twice and on 1 and 2 processes (every rank)."""
    _cluster_run(tmp_path, devices=1)
    first = torch.load(tmp_path / "1_0.pt")
    _cluster_run(tmp_path, devices=1)
    again = torch.load(tmp_path / "1_0.pt")
    n = len(ColoredDigits(size=8).splits["train"])
    assert first["ids"].shape == (n,) and first["epoch"] == 0
    assert len(torch.unique(first["ids"])) == 4
    assert torch.equal(first["ids"], again["ids"])
    _cluster_run(tmp_path, devices=2)
    for rank in (0, 1):
        ddp = torch.load(tmp_path / f"2_{rank}.pt")
        assert torch.equal(ddp["ids"], first["ids"]), f"rank {rank} clustered differently"
        torch.testing.assert_close(ddp["freq"], first["freq"])


def test_resume_across_phases_keeps_cluster_state(tmp_path):
    from lightning.pytorch.callbacks import ModelCheckpoint

    def run(max_epochs: int, ckpt: str | None = None) -> FairSamplingSimCLR:
        L.seed_everything(0)
        dm = ColoredDigits(size=8, two_views=True, batch_size=32, seed=0)
        m = FairSamplingSimCLR(num_classes=10, num_groups=2, stage1_epochs=1, leakage=False, **TINY_ENCODER)
        cb = ModelCheckpoint(dirpath=tmp_path, filename="{epoch}", save_top_k=-1, every_n_epochs=1)
        trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=max_epochs, limit_train_batches=2, limit_val_batches=0,
                                                   enable_checkpointing=True, callbacks=[cb]))
        trainer.fit(m, datamodule=dm, ckpt_path=ckpt)
        return m

    m = run(1)  # phase 1 only
    assert m.cluster_ids.numel() == 0 and int(m.cluster_epoch) == -1
    m = run(3, str(tmp_path / "epoch=0.ckpt"))  # resumes into the fair phase and clusters at epoch 1
    assert m.stage == "fair" and int(m.cluster_epoch) == 1 and m.cluster_ids.numel() > 0
    saved = torch.load(tmp_path / "epoch=2.ckpt", weights_only=False)["state_dict"]
    assert torch.equal(saved["cluster_ids"], m.cluster_ids.cpu())
    m = run(4, str(tmp_path / "epoch=2.ckpt"))  # resumes inside the fair phase: no new clustering
    assert m.stage == "fair" and int(m.cluster_epoch) == 1
    assert torch.equal(m.cluster_ids.cpu(), saved["cluster_ids"])
    back = FairSamplingSimCLR.load_from_checkpoint(tmp_path / "epoch=2.ckpt")
    assert torch.equal(back.cluster_ids, saved["cluster_ids"]) and back.hparams.stage1_epochs == 1
    assert int(back.cluster_epoch) == 1


def test_cluster_ids_load_at_the_stored_size_through_every_path(tmp_path):
    """``cluster_ids`` (one id per train row) is empty in a new model; a checkpoint's ids load at their size through
    ``model.load_state_dict`` (no Lightning), ``load_from_checkpoint`` and a Trainer's ``ckpt_path``, and an empty
    one loads back into a clustered model. A buffer that is not sized by the data still refuses another shape."""
    L.seed_everything(0)
    dm = ColoredDigits(size=8, two_views=True, batch_size=32, seed=0)
    kw = dict(num_classes=10, num_groups=2, stage1_epochs=1, leakage=False, **TINY_ENCODER)
    trained = FairSamplingSimCLR(**kw)
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=2, limit_train_batches=2, limit_val_batches=0))
    trainer.fit(trained, datamodule=dm)
    ids = trained.cluster_ids.cpu()
    assert ids.numel() == len(dm.splits["train"]) and len(torch.unique(ids)) > 1
    ckpt = tmp_path / "clustered.ckpt"
    trainer.save_checkpoint(ckpt)
    state = torch.load(ckpt, weights_only=True)["state_dict"]

    plain = FairSamplingSimCLR(**kw)
    assert plain.cluster_ids.numel() == 0
    plain.load_state_dict(state)  # plain torch
    assert torch.equal(plain.cluster_ids, ids)
    assert torch.equal(FairSamplingSimCLR.load_from_checkpoint(ckpt).cluster_ids, ids)
    tested = FairSamplingSimCLR(**kw)
    L.Trainer(**quiet_trainer_kwargs()).test(tested, datamodule=dm, ckpt_path=str(ckpt), verbose=False)
    assert torch.equal(tested.cluster_ids.cpu(), ids)

    unclustered = FairSamplingSimCLR(**kw).state_dict()  # before any clustering: no ids
    plain.load_state_dict(unclustered)
    assert plain.cluster_ids.shape == (0,)
    bad = {**state, "cluster_freq": torch.zeros(3)}
    with pytest.raises(RuntimeError, match="cluster_freq"):
        plain.load_state_dict(bad)


# ---------------------------------------------------------------------------------------------------------- CLI


@pytest.mark.parametrize("method", ["parade", "dml", "fair_sampling_simclr", "simclr"])
def test_cli_fit_and_test_on_colored_digits(method, in_tmp):
    from faircl.cli import run_cli as main

    config = str(REPO / "configs" / method / "colored_digits.yaml")
    small = ["--trainer.fast_dev_run=true", "--data.init_args.size=8",
             "--model.init_args.encoder_kwargs={width: 4, out_dim: 16}"]
    if method == "fair_sampling_simclr":
        small.append("--model.init_args.stage1_epochs=0")  # reach the cluster and fair phases in one epoch
    cli = main(["fit", "--config", config, *small])
    assert cli.trainer.state.finished
    if method == "fair_sampling_simclr":
        assert int(cli.model.cluster_epoch) == 0 and cli.model.cluster_ids.numel() == len(cli.datamodule.splits["train"])
    cli = main(["test", "--config", config, *small])
    report = cli.model.test_report
    assert "accuracy" in report
    if method in ("parade", "dml"):
        assert "recall@1" in report and "nmi" in report and "ukl" in report
        assert any(k.startswith("recall@1_gap") for k in report)
    else:
        assert {"probe_accuracy", "probe_f1", "probe_auc", "cluster_dominance"} <= set(report)


def test_fair_sampling_checkpoint_after_the_fair_phase_tests_in_a_new_process(in_tmp):
    """A checkpoint saved after the clustering holds one cluster id per train row; a fresh model has none, and
    ``faircl test --ckpt_path best`` in a new process takes the checkpoint's (it refused the shapes before)."""
    import json
    import shutil
    import subprocess
    import sys

    from faircl.cli import run_cli as main

    config = str(REPO / "configs" / "fair_sampling_simclr" / "colored_digits.yaml")
    small = ["--data.init_args.size=8", "--data.init_args.batch_size=128",
             "--model.init_args.encoder_kwargs={width: 4, out_dim: 16}", "--trainer.max_epochs=2",
             "--trainer.limit_train_batches=2", "--trainer.limit_val_batches=1", "--trainer.enable_progress_bar=false",
             "--model.init_args.stage1_epochs=1", "--model.init_args.row_predictions=probe",
             "--model.init_args.leakage=false", f"--trainer.default_root_dir={in_tmp}"]
    cli = main(["fit", "--config", config, *small])
    n_train = len(cli.datamodule.splits["train"])
    assert cli.model.cluster_ids.numel() == n_train
    faircl = shutil.which("faircl", path=str(Path(sys.executable).parent)) or shutil.which("faircl")
    done = subprocess.run([faircl, "test", "--config", config, *small[:3], f"--trainer.default_root_dir={in_tmp}",
                           "--ckpt_path", "best"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(sorted(in_tmp.glob("**/report.json"))[-1].read_text())
    assert report["meta"]["rows"]["predictions"] == "probe"
    assert report["meta"]["rows"]["test"]["rows"] == report["meta"]["rows"]["test"]["split_size"]


def test_utkface_configs_parse():
    """The UTKFace configs name existing classes and arguments (instantiation without running)."""
    import yaml

    for method in ("parade", "dml", "fair_sampling_simclr", "simclr"):
        cfg = yaml.safe_load((REPO / "configs" / method / "utkface.yaml").read_text())
        cls = {"parade": PARADE, "dml": DML, "fair_sampling_simclr": FairSamplingSimCLR, "simclr": SimCLR}[method]
        assert cfg["model"]["class_path"] == cls.__name__
        init = dict(cfg["model"]["init_args"])
        init["encoder"], init["encoder_kwargs"] = "conv", {"width": 4, "out_dim": 16}
        cls(input_dim=3, **init)
