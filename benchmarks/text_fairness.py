"""Fair text classification at CPU scale on real data: the comparisons of Shen et al. (2021) and Chi et al. (2022).

    .venv/bin/python benchmarks/text_fairness.py            # full run (≤ 25 min on a 2-core CPU), writes the results
    .venv/bin/python benchmarks/text_fairness.py --quick    # smoke run (1 seed, 1 epoch, small subsets)

Writes ``benchmarks/results/text_fairness.md`` and ``text_fairness_tradeoff.png`` (``--out`` to change).

(a) Huang et al. English hate speech, attribute gender then age, under the controlled-stereotype protocol
    (``HateSpeech(split_protocol="controlled")``: ``English_valid`` and ``English_test`` pooled; train with balanced
    classes and groups where the attribute agrees with the label for 80% of rows; balanced val / test), or with
    ``--protocol published`` the published split (train on ``English_valid`` minus 10%, test on ``English_test``). Shen's protocol: ``Embed`` is a bi-GRU (``TokenEncoder``) trained
    once with cross-entropy and then frozen; its 400-d outputs (plus two EDA views of every training tweet, for the
    two-view methods) are computed once, and every method trains ``Enc`` (2 × 300 tanh MLP) + its heads on them.
    CE, ConFair (``Con_*``), ``Con_*^ft``, OneStageCL, TwoStageCL, Adv, DiverseAdv, INLP; mean ± std over seeds.
(b) λ sweep of TwoStageCL and ConFair on (a) with attribute age, and the accuracy–fairness plot.
(c) Bias in Bios samples (28 professions × 10 bios) on frozen all-MiniLM-L6-v2 features from the feature cache.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _stats import judge, summary_table  # noqa: E402

from faircl.data.base import FairDataModule, FairDataset  # noqa: E402
from faircl.metrics.tradeoff import tradeoff_score  # noqa: E402
from faircl.testing import quiet_trainer_kwargs  # noqa: E402

COLUMNS = [("accuracy", "Acc"), ("f1", "F1"), ("tpr_gap_rms", "GAP"), ("eo_gap", "EO gap"),
           ("leakage_h", "Leak@h"), ("leakage_yhat", "Leak@ŷ")]
EMBED = {"embed_dim": 100, "hidden_dim": 128, "bidirectional": True}
ENC = {"encoder": "mlp", "encoder_kwargs": {"hidden_dim": 300, "num_layers": 2}}


# ------------------------------------------------------------------------------------------ frozen-feature data
class _Lookup:
    """Row key ``i`` → ``tables[0][i]``; ``(k, i)`` → ``tables[k][i]`` (view ``k``)."""

    def __init__(self, tables: list[torch.Tensor]) -> None:
        self.tables = tables

    def __call__(self, key: Any) -> torch.Tensor:
        k, i = key if isinstance(key, tuple) else (0, key)
        return self.tables[k][int(i)]


class _PickView:
    def __init__(self, num_views: int) -> None:
        self.num_views = num_views

    def __call__(self, i: Any) -> tuple[int, int]:
        return int(torch.randint(1, self.num_views + 1, ())), int(i)


class FrozenFeatures(FairDataModule):
    """Pre-computed features per split (train may carry extra view tables for two-view methods)."""

    def __init__(self, tables: dict[str, list[torch.Tensor]], labels: dict[str, tuple[np.ndarray, np.ndarray]],
                 num_classes: int, group_names: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tables, self.labels, self._nc = tables, labels, num_classes
        self.group_names = group_names
        self.class_names = [str(c) for c in range(num_classes)]
        self._reported = True

    @property
    def input_dim(self) -> int:
        return int(self.tables["train"][0].shape[1])

    def load_splits(self) -> dict[str, FairDataset]:
        return {s: FairDataset(torch.arange(len(t[0])), *self.labels[s], num_classes=self._nc,
                               num_groups=len(self.group_names), transform=_Lookup(t), source=f"features[{s}]")
                for s, t in self.tables.items()}

    def view_transform(self):
        return _PickView(len(self.tables["train"]) - 1)


# ------------------------------------------------------------------------------------------ running methods
def fit_test(cls: type, kwargs: dict[str, Any], dm: FairDataModule, epochs: int, seed: int,
             lr: float = 1e-3) -> tuple[dict[str, float], float]:
    """Train ``cls(**kwargs)`` for ``epochs`` (no early stopping), test; returns (test report, fit seconds)."""
    L.seed_everything(seed, verbose=False)
    dm.seed = seed
    model = cls(num_classes=dm.num_classes, num_groups=dm.num_groups, input_dim=dm.input_dim, lr=lr,
                **{**ENC, **kwargs})
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=epochs, limit_val_batches=0, num_sanity_val_steps=0))
    with contextlib.redirect_stdout(io.StringIO()):
        t0 = time.perf_counter()
        trainer.fit(model, datamodule=dm)
        seconds = time.perf_counter() - t0
        trainer.test(model, datamodule=dm, verbose=False)
    report = dict(model.test_report)
    report.update(prediction_stats(model, dm))
    return report, seconds


@torch.no_grad()
def prediction_stats(model: Any, dm: FairDataModule) -> dict[str, float]:
    """Share of the most predicted class (degenerate runs) and the constant predictor's accuracy on test."""
    model.eval()
    preds, ys = [], []
    for batch in dm.plain_loader("test"):
        preds.append(model(batch["x"])["logits"].argmax(dim=1))
        ys.append(batch["y"])
    p, y = torch.cat(preds), torch.cat(ys)
    return {"majority_share": float(torch.bincount(p).max()) / len(p),
            "constant_accuracy": float(torch.bincount(y).max()) / len(y)}


def method_grid(epochs: int) -> dict[str, tuple[str, dict[str, Any], bool]]:
    """Name → (class name, arguments, needs two views). Stage splits scale with ``epochs``."""
    first = max(1, math.ceil(epochs * 0.6))
    return {
        "CE": ("CE", {}, False),
        "ConFair (Con_*)": ("ConFair", {"lambda_fair": 1.0, "temperature": 0.01}, False),
        "Con_*^ft": ("ConFair", {"lambda_fair": 1.0, "temperature": 0.01, "pipeline": True, "stage1_epochs": first},
                     False),
        "OneStageCL": ("OneStageCL", {"lambda_cs": 1.0, "gamma": 0.3, "temperature": 0.1}, True),
        "TwoStageCL": ("TwoStageCL", {"lambda_cs": 1.0, "temperature": 0.1, "stage1_epochs": first}, True),
        "Adv": ("Adversarial", {"lambda_adv": 1.0, "conditional": True}, False),
        "DiverseAdv": ("DiverseAdversarial", {"lambda_adv": 1.0, "conditional": True, "n_adv": 3,
                                              "lambda_diff": 100.0}, False),
        # per-class INLP: the target here is equalized odds (Chi et al. use the per-class variant)
        "INLP": ("INLP", {"stage1_epochs": first, "n_clf": 20, "probe": "logistic", "per_class": True}, False),
    }


def run_table(make_dm, epochs: int, seeds: list[int], log, methods: list[str] | None = None
              ) -> dict[str, list[dict[str, float]]]:
    import faircl.methods as M

    grid = method_grid(epochs)
    out: dict[str, list[dict[str, float]]] = {}
    for name, (cls_name, kwargs, views) in grid.items():
        if methods and name not in methods:
            continue
        cls = getattr(M, cls_name)
        out[name] = []
        for seed in seeds:
            report, sec = fit_test(cls, kwargs, make_dm(views), epochs, seed)
            report["fit_seconds"] = sec
            out[name].append(report)
            log(f"  {name:16s} seed {seed}: acc {report['accuracy']:.3f} GAP {report['tpr_gap_rms']:.3f} "
                f"EO {report['eo_gap']:.3f} leak@h {report.get('leakage_h', float('nan')):.3f} ({sec:.1f}s)")
    return out


def summarise(runs: dict[str, list[dict[str, float]]]) -> tuple[list[str], dict[str, dict[str, float]]]:
    """Markdown rows ``mean ± std`` (in %) and the per-method means, with Shen's Tradeoff over the methods."""
    means = {m: {k: float(np.mean([r[k] for r in rs])) for k, _ in COLUMNS} for m, rs in runs.items()}
    stds = {m: {k: float(np.std([r[k] for r in rs])) for k, _ in COLUMNS} for m, rs in runs.items()}
    names = list(runs)
    trade = tradeoff_score([means[m] for m in names], accuracy="accuracy", gap="tpr_gap_rms",
                           leakage_h="leakage_h", leakage_y="leakage_yhat")
    lines = ["| method | " + " | ".join(c for _, c in COLUMNS) + " | Tradeoff | fit s |",
             "|---|" + "---|" * (len(COLUMNS) + 2)]
    for m, t in zip(names, trade):
        means[m]["tradeoff"] = float(t)
        cells = [f"{100 * means[m][k]:.1f} ± {100 * stds[m][k]:.1f}" for k, _ in COLUMNS]
        sec = np.mean([r["fit_seconds"] for r in runs[m]])
        lines.append(f"| {m} | " + " | ".join(cells) + f" | {t:.3f} | {sec:.1f} |")
    return lines, means


# ------------------------------------------------------------------------------------------ (a) hate speech
@torch.no_grad()
def encode_ids(encoder: torch.nn.Module, ids: torch.Tensor, batch: int = 512) -> torch.Tensor:
    encoder.eval()
    return torch.cat([encoder(ids[i:i + batch]) for i in range(0, len(ids), batch)]).float()


def hate_features(data_dir: Path, attribute: str, embed_epochs: int, max_train: int | None, views: int,
                  log, embed: Any = None, protocol: str = "controlled") -> tuple[FrozenFeatures, Any]:
    """Train the bi-GRU ``Embed`` with CE (seed 0) unless given, freeze it, and return its features of every split.

    The Embed is trained once (on the first attribute's train split, labels only) and reused for the other
    attribute: the held-out validation rows differ a little between attributes, the test file is never seen.
    """
    from faircl.data.text import HateSpeech
    from faircl.methods import CE

    dm = HateSpeech(data_dir=str(data_dir), language="English", attribute=attribute,
                    split_protocol="valid_as_train" if protocol == "published" else "controlled", batch_size=128,
                    seed=0, controlled_eval=400 if max_train is not None and max_train < 2000 else 2000)
    dm._reported = True
    splits = dm.splits
    if dm.protocol_report is not None:
        rep = dm.protocol_report
        log(f"  controlled protocol ({attribute}): train agreement a = y {100 * rep['agreement']:.1f}%, "
            f"counts {rep['counts']}")
    if max_train is not None:  # seeded subset of train for smoke runs
        keep = np.random.default_rng(0).permutation(len(splits["train"]))[:max_train]
        tr = splits["train"]
        splits["train"] = FairDataset(tr.x[keep], tr.y[keep].numpy(), tr.a[keep].numpy(), num_classes=2,
                                      num_groups=tr.num_groups, source=tr.source)
    if embed is None:
        L.seed_everything(0, verbose=False)
        embed = CE(num_classes=2, num_groups=dm.num_groups, input_dim=dm.input_dim, encoder="tokens",
                   encoder_kwargs=EMBED, lr=2e-3, leakage=False)
        trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=embed_epochs, limit_val_batches=0,
                                                   num_sanity_val_steps=0))
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            trainer.fit(embed, datamodule=dm)
        log(f"  bi-GRU Embed: {embed_epochs} CE epoch(s) on {len(splits['train'])} tweets in "
            f"{time.perf_counter() - t0:.0f}s")
    eda = dm.view_transform()
    tables, labels = {}, {}
    for split, ds in splits.items():
        ids = torch.as_tensor(ds.x) if not isinstance(ds.x, torch.Tensor) else ds.x
        t = [encode_ids(embed.encoder, ids)]
        if split == "train":
            torch.manual_seed(0)
            for _ in range(views):
                t.append(encode_ids(embed.encoder, torch.stack([eda(r) for r in ids])))
        tables[split] = t
        labels[split] = (ds.y.numpy(), ds.a.numpy())
    return FrozenFeatures(tables, labels, 2, list(dm.group_names), batch_size=256), embed


def with_views(base: FrozenFeatures, views: bool) -> FrozenFeatures:
    return FrozenFeatures(base.tables, base.labels, base._nc, base.group_names, batch_size=base.batch_size,
                          two_views=views)


# ------------------------------------------------------------------------------------------ (b) λ sweep
def lambda_sweep(feats: FrozenFeatures, epochs: int, seeds: list[int], lams: dict[str, list[float]], log
                 ) -> tuple[dict[str, list[tuple[float, dict[str, float], dict[str, float]]]],
                            dict[str, dict[float, list[dict[str, float]]]]]:
    """Returns the per-λ means and stds, and the per-seed reports ``runs[name][λ]``."""
    from faircl.methods import ConFair, TwoStageCL

    first = max(1, math.ceil(epochs * 0.6))
    out: dict[str, list] = {}
    runs: dict[str, dict[float, list[dict[str, float]]]] = {}
    for name, cls, views, key, extra in (
            ("TwoStageCL", TwoStageCL, True, "lambda_cs", {"temperature": 0.1, "stage1_epochs": first}),
            ("ConFair", ConFair, False, "lambda_fair", {"temperature": 0.01})):
        out[name], runs[name] = [], {}
        for lam in lams[name]:
            reps = [fit_test(cls, {key: lam, **extra}, with_views(feats, views), epochs, s)[0] for s in seeds]
            mean = {k: float(np.mean([r[k] for r in reps])) for k, _ in COLUMNS}
            std = {k: float(np.std([r[k] for r in reps])) for k, _ in COLUMNS}
            out[name].append((lam, mean, std))
            runs[name][lam] = reps
            log(f"  {name} λ={lam:g}: acc {mean['accuracy']:.3f} GAP {mean['tpr_gap_rms']:.3f} "
                f"EO {mean['eo_gap']:.3f} leak@h {mean['leakage_h']:.3f}")
    return out, runs


def plot_sweep(sweep, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (name, key, label) in zip(axes, (("TwoStageCL", "eo_gap", "EO gap (Chi)"),
                                             ("ConFair", "tpr_gap_rms", "GAP (Shen)"))):
        pts = sweep[name]
        xs = [100 * m[key] for _, m, _ in pts]
        ys = [100 * m["accuracy"] for _, m, _ in pts]
        ax.errorbar(xs, ys, xerr=[100 * s[key] for _, _, s in pts], yerr=[100 * s["accuracy"] for _, _, s in pts],
                    marker="o", capsize=3)
        for (lam, _, _), x, y in zip(pts, xs, ys):
            ax.annotate(f"λ={lam:g}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xlabel(f"{label} ×100 (lower is fairer)")
        ax.set_ylabel("accuracy ×100")
        ax.set_title(f"{name}: accuracy vs fairness over λ")
        ax.grid(alpha=0.3)
    fig.suptitle("English hate speech, attribute age (frozen bi-GRU features)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------------------ (c) Bias in Bios
def bios_factory(data_dir: Path, batch_size: int):
    from faircl.data.text import BiasInBios

    def make(views: bool) -> FairDataModule:
        dm = BiasInBios(data_dir=str(data_dir), features="frozen", batch_size=batch_size, two_views=views,
                        val_fraction=0.15, test_fraction=0.3, frozen_views=2, seed=0)
        dm._reported = True
        return dm

    return make


# ------------------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 seed, 1 epoch, small subsets")
    parser.add_argument("--data", default=os.environ.get("FAIRCL_DATA", str(ROOT.parent / "shared" / "data")))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "text_fairness.md"))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=5, help="epochs of every method on the hate-speech features")
    parser.add_argument("--embed-epochs", type=int, default=1, help="CE epochs of the bi-GRU Embed")
    parser.add_argument("--sweep-seeds", type=int, default=2)
    parser.add_argument("--bios-epochs", type=int, default=30)
    parser.add_argument("--max-train", type=int, default=4000,
                        help="seeded subset of the hate-speech train tweets (0 = all)")
    parser.add_argument("--protocol", choices=("controlled", "published"), default="controlled",
                        help="hate-speech split: controlled stereotype (80%% a = y in train) or the published one")
    parser.add_argument("--methods", default="", help="comma-separated subset of the methods (default: all)")
    parser.add_argument("--attributes", default="gender,age", help="hate-speech attributes to run")
    parser.add_argument("--no-bios", action="store_true", help="skip part (c)")
    parser.add_argument("--tiny", action="store_true", help="with --quick: 400 train tweets (for the test suite)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    logging.getLogger("lightning.fabric").setLevel(logging.ERROR)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    data = Path(args.data)
    hate_dir, bios_dir = data / "multilingual_hate_speech_demographics", data / "bias_in_bios_samples"
    for d in (hate_dir,) + (() if args.no_bios else (bios_dir,)):
        if not d.is_dir():
            raise SystemExit(f"data folder {d} not found: pass --data <folder> or set FAIRCL_DATA")
    if args.quick:
        args.seeds, args.epochs, args.embed_epochs, args.sweep_seeds, args.bios_epochs = 1, 3, 1, 1, 3
    seeds = list(range(args.seeds))
    max_train = (400 if args.tiny else 1500) if args.quick else (args.max_train or None)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()] or None
    attributes = [a.strip() for a in args.attributes.split(",") if a.strip()]
    views = 2
    started = time.perf_counter()
    lines_log: list[str] = []

    def log(msg: str) -> None:
        print(msg, flush=True)

    out = Path(args.out)
    cmd = "python benchmarks/text_fairness.py" + (" --quick" if args.quick else "")
    md = [f"# Fair text classification at CPU scale\n", f"Regenerate: `{cmd}` (from the repository root; data in "
          "`../shared/data` or `--data`).\n"]

    # (a)
    hate: dict[str, dict[str, list[dict[str, float]]]] = {}
    hate_means: dict[str, dict[str, dict[str, float]]] = {}
    feats_by_attr: dict[str, FrozenFeatures] = {}
    embed = None
    for attr in attributes:
        log(f"(a) hate speech, attribute {attr}")
        # controlled protocol: one Embed per attribute (the pooled rows of one attribute's test set may be
        # another attribute's train rows)
        feats, embed = hate_features(hate_dir, attr, args.embed_epochs, max_train, views, log,
                                     embed if args.protocol == "published" else None, args.protocol)
        feats_by_attr[attr] = feats
        hate[attr] = run_table(lambda v, f=feats: with_views(f, v), args.epochs, seeds, log, methods)
    # (b)
    sweep_attr = "age" if "age" in feats_by_attr else attributes[0]
    log(f"(b) λ sweep, hate speech / {sweep_attr}")
    # Chi et al.'s grid (λ on the scale of their code's per-anchor-mean L_CS, TwoStageCL's default reduction)
    lams = {"TwoStageCL": [0.0, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0], "ConFair": [0.0, 0.25, 1.0, 4.0]}
    if args.quick:
        lams = {"TwoStageCL": [0.0, 1.0], "ConFair": [0.0, 1.0]}
    sweep_seeds = list(range(max(args.sweep_seeds, 1)))
    sweep, sweep_runs = lambda_sweep(feats_by_attr[sweep_attr], args.epochs, sweep_seeds, lams, log)
    png = out.with_name(out.stem + "_tradeoff.png")
    out.parent.mkdir(parents=True, exist_ok=True)
    plot_sweep(sweep, png)
    # (c)
    bios: dict[str, list[dict[str, float]]] = {}
    if not args.no_bios:
        log("(c) Bias in Bios samples, frozen MiniLM features")
        bios = run_table(bios_factory(bios_dir, 16), args.bios_epochs, seeds, log, methods)
    total = time.perf_counter() - started

    # ------------------------------------------------------------------ write
    first_attr = attributes[0]
    tr = feats_by_attr[first_attr].splits["train"]
    te = feats_by_attr[first_attr].splits["test"]
    proto = ("controlled stereotype (pooled English valid + test; train 80% a = y, balanced classes and groups; "
             "balanced val / test)" if args.protocol == "controlled" else
             "published split (train English_valid − 10%, test English_test)")
    md.append("## Summary: do the papers' claims hold here?\n")
    md.append(f"Paired by seed ({len(seeds)} seed(s); the λ row: {len(sweep_seeds)}), 95% t-intervals, points ×100. "
              "Verdict rule (`benchmarks/_stats.py`): *untestable* when the baseline's gap interval includes 0 or "
              "its accuracy is not above a constant predictor's; *degenerate* when the method predicts one class "
              "for ≥ 95% of test rows; *holds* when the gap falls with an interval excluding 0 and accuracy falls "
              "by ≤ 2 points; *does not hold* otherwise."
              + (" **Smoke run (`--quick`): one seed, so every verdict is untestable by construction.**"
                 if args.quick else "") + "\n")
    md += summary_table(claim_rows(hate, sweep_runs, sweep_attr, bios, proto))
    md.append("")
    md.append(f"Scale: {len(seeds)} seed(s); hate speech ({proto}): bi-GRU `Embed` (`TokenEncoder`, embedding 100, "
              f"2 × 128 GRU → 256-d; Shen used 2 × 200) trained {args.embed_epochs} CE epoch(s) on the train split "
              f"then frozen (Shen's protocol), every method trains `Enc` (2 × 300 tanh) and its heads on the frozen "
              f"features for {args.epochs} epochs (batch 256, Adam 1e-3, no early stopping or model selection; "
              f"two-step methods spend {max(1, math.ceil(args.epochs * 0.6))} epochs in their first stage); "
              f"{len(tr)} train / {len(te)} test tweets ({first_attr}); two-view methods draw their views from "
              f"{views} EDA copies of every training tweet encoded once. Bias in Bios: {args.bios_epochs} epochs, "
              f"batch 16. Whole run: {total / 60:.1f} min on this machine ({os.cpu_count()} CPU cores, shared).\n")
    md.append("Columns are ×100, mean ± std over seeds. GAP = `tpr_gap_rms` (Shen), EO gap = Σ over groups of "
              "|TPR_a − TPR| + |FPR_a − FPR| for the positive class only (Chi's code sums both classes: 2× this), "
              "Leak@h / Leak@ŷ = linear-SVM accuracy for the attribute on the hidden layer / logits (50 = chance "
              "for balanced groups; tweets with unknown attribute are left out of every fairness measure). "
              "Tradeoff = Shen's ½N(Acc) + ¼N(1−GAP) + ⅛N(1−Leak@h) + ⅛N(1−Leak@ŷ) over the method means of "
              "each table (`faircl.metrics.tradeoff.tradeoff_score`).\n")
    md.append("Hyper-parameters (no tuning beyond the paper defaults): ConFair λ = 1 (α = β = ½), τ = 0.01; "
              "Con_*^ft the same contrastive loss, then a logistic-regression head; One/TwoStageCL λ = 1, τ = 0.1 "
              "(γ = 0.3), `L_CS` reduced as in the authors' code (mean over the 2N anchors); Adv λ_adv = 1 with "
              "the discriminator conditioned on y (Chi's EO variant), DiverseAdv 3 discriminators, λ_diff = 100 "
              "(the authors' difference loss, training only the discriminators); INLP 20 per-class "
              "logistic-regression rounds (the equalized-odds variant) on the CE-trained `Enc`.\n")
    for attr in attributes:
        lines, means = summarise(hate[attr])
        hate_means[attr] = means
        md.append(f"\n## (a) English hate speech — attribute {attr}\n")
        md += lines
    md.append(f"\n## (b) λ sweep — hate speech, attribute {sweep_attr}\n")
    md.append(f"{len(sweep_seeds)} seed(s) per point. Plot: `{png.name}` (accuracy against the EO gap for "
              "TwoStageCL, against GAP for ConFair).\n")
    md.append(f"![trade-off]({png.name})\n")
    md.append("| method | λ | Acc | GAP | EO gap | Leak@h | Leak@ŷ |")
    md.append("|---|---|---|---|---|---|---|")
    for name, pts in sweep.items():
        for lam, m, s in pts:
            cells = " | ".join(f"{100 * m[k]:.1f} ± {100 * s[k]:.1f}" for k in
                               ("accuracy", "tpr_gap_rms", "eo_gap", "leakage_h", "leakage_yhat"))
            md.append(f"| {name} | {lam:g} | {cells} |")
    if bios:
        lines, _ = summarise(bios)
        md.append("\n## (c) Bias in Bios samples — frozen all-MiniLM-L6-v2 features, 28 professions, gender\n")
        md.append("280 real biographies (10 per profession), seeded stratified 55/15/30 split: a very small test "
                  "set, so gaps are noisy. Features come from the on-disk feature cache (computed once).\n")
        md += lines
    overhead = out.parent / "overhead.md"
    if overhead.is_file():  # figures of benchmarks/overhead.py (run separately)
        md.append("\n## Training overhead (from `benchmarks/overhead.py`)\n")
        md += [line for line in overhead.read_text().splitlines()[1:] if line.strip()]
    out.write_text("\n".join(md) + "\n")
    log(f"wrote {out} and {png} in {total / 60:.1f} min")


def _judge_pair(runs_m, runs_b, key: str, reference: float = 0.0):
    return judge([r[key] for r in runs_b], [r[key] for r in runs_m], [r["accuracy"] for r in runs_b],
                 [r["accuracy"] for r in runs_m], constant_acc=float(np.mean([r["constant_accuracy"] for r in runs_b])),
                 method_majority_share=[r["majority_share"] for r in runs_m], reference=reference)


def claim_rows(hate, sweep_runs, sweep_attr, bios, proto: str) -> list[tuple[str, str, Any]]:
    """The papers' claims, each judged on seed-paired runs (method against its baseline)."""
    rows = []
    claims = [("ConFair (Con_*)", "tpr_gap_rms", 0.0, "Shen: ConFair lowers GAP vs CE"),
              ("ConFair (Con_*)", "leakage_h", 0.5, "Shen: ConFair lowers Leak@h vs CE (above chance)"),
              ("TwoStageCL", "eo_gap", 0.0, "Chi: TwoStageCL lowers the EO gap vs CE"),
              ("OneStageCL", "eo_gap", 0.0, "Chi: OneStageCL lowers the EO gap vs CE"),
              ("DiverseAdv", "eo_gap", 0.0, "Chi (baseline): DiverseAdv lowers the EO gap vs CE"),
              ("INLP", "eo_gap", 0.0, "Chi (baseline): per-class INLP lowers the EO gap vs CE")]
    for attr, runs in hate.items():
        for method, key, ref, claim in claims:
            if method in runs and "CE" in runs:
                rows.append((f"{claim} ({attr})", f"hate speech, {proto.split(' (')[0]}",
                             _judge_pair(runs[method], runs["CE"], key, ref)))
    two = sweep_runs.get("TwoStageCL", {})
    if len(two) >= 2:
        lo, hi = min(two), max(two)
        rows.append((f"Chi: TwoStageCL's EO gap falls from λ = {lo:g} to λ = {hi:g} ({sweep_attr})",
                     "hate speech, λ sweep", _judge_pair(two[hi], two[lo], "eo_gap")))
    if bios and "ConFair (Con_*)" in bios and "CE" in bios:
        rows.append(("Shen: ConFair lowers GAP vs CE (Bias in Bios)", "Bios samples, frozen MiniLM",
                     _judge_pair(bios["ConFair (Con_*)"], bios["CE"], "tpr_gap_rms")))
    return rows


if __name__ == "__main__":
    main()
