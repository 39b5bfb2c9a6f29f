"""Fair text classification at CPU scale on real data: the comparisons of Shen et al. (2021) and Chi et al. (2022).

    .venv/bin/python benchmarks/text_fairness.py            # full run (≤ 25 min on a 2-core CPU), writes the results
    .venv/bin/python benchmarks/text_fairness.py --quick    # smoke run (1 seed, 1 epoch, small subsets)

Writes ``benchmarks/results/text_fairness.md`` and ``text_fairness_tradeoff.png`` (``--out`` to change).

(a) Huang et al. English hate speech (``HateSpeech``, train on ``English_valid`` minus a held-out 10%, test on
    ``English_test``), attribute gender then age. Shen's protocol: ``Embed`` is a bi-GRU (``TokenEncoder``) trained
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
    return dict(model.test_report), seconds


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
        "INLP": ("INLP", {"stage1_epochs": first, "n_clf": 20, "probe": "logistic"}, False),
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
                  log, embed: Any = None) -> tuple[FrozenFeatures, Any]:
    """Train the bi-GRU ``Embed`` with CE (seed 0) unless given, freeze it, and return its features of every split.

    The Embed is trained once (on the first attribute's train split, labels only) and reused for the other
    attribute: the held-out validation rows differ a little between attributes, the test file is never seen.
    """
    from faircl.data.text import HateSpeech
    from faircl.methods import CE

    dm = HateSpeech(data_dir=str(data_dir), language="English", attribute=attribute,
                    split_protocol="valid_as_train", batch_size=128, seed=0)
    dm._reported = True
    splits = dm.splits
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
                 ) -> dict[str, list[tuple[float, dict[str, float], dict[str, float]]]]:
    from faircl.methods import ConFair, TwoStageCL

    first = max(1, math.ceil(epochs * 0.6))
    out: dict[str, list] = {}
    for name, cls, views, key, extra in (
            ("TwoStageCL", TwoStageCL, True, "lambda_cs", {"temperature": 0.1, "stage1_epochs": first}),
            ("ConFair", ConFair, False, "lambda_fair", {"temperature": 0.01})):
        out[name] = []
        for lam in lams[name]:
            reps = [fit_test(cls, {key: lam, **extra}, with_views(feats, views), epochs, s)[0] for s in seeds]
            mean = {k: float(np.mean([r[k] for r in reps])) for k, _ in COLUMNS}
            std = {k: float(np.std([r[k] for r in reps])) for k, _ in COLUMNS}
            out[name].append((lam, mean, std))
            log(f"  {name} λ={lam:g}: acc {mean['accuracy']:.3f} GAP {mean['tpr_gap_rms']:.3f} "
                f"EO {mean['eo_gap']:.3f} leak@h {mean['leakage_h']:.3f}")
    return out


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
                        help="seeded subset of the hate-speech train tweets (0 = all 11.4k)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    logging.getLogger("lightning.fabric").setLevel(logging.ERROR)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    data = Path(args.data)
    hate_dir, bios_dir = data / "multilingual_hate_speech_demographics", data / "bias_in_bios_samples"
    for d in (hate_dir, bios_dir):
        if not d.is_dir():
            raise SystemExit(f"data folder {d} not found: pass --data <folder> or set FAIRCL_DATA")
    if args.quick:
        args.seeds, args.epochs, args.embed_epochs, args.sweep_seeds, args.bios_epochs = 1, 2, 1, 1, 3
    seeds = list(range(args.seeds))
    max_train = 1500 if args.quick else (args.max_train or None)
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
    for attr in ("gender", "age"):
        log(f"(a) hate speech, attribute {attr}")
        feats, embed = hate_features(hate_dir, attr, args.embed_epochs, max_train, views, log, embed)
        feats_by_attr[attr] = feats
        hate[attr] = run_table(lambda v, f=feats: with_views(f, v), args.epochs, seeds, log)
    # (b)
    log("(b) λ sweep, hate speech / age")
    lams = {"TwoStageCL": [0.0, 1.0, 5.0, 10.0], "ConFair": [0.0, 0.25, 1.0, 4.0]}
    if args.quick:
        lams = {"TwoStageCL": [0.0, 5.0], "ConFair": [0.0, 1.0]}
    sweep = lambda_sweep(feats_by_attr["age"], args.epochs, list(range(args.sweep_seeds)), lams, log)
    png = out.with_name(out.stem + "_tradeoff.png")
    out.parent.mkdir(parents=True, exist_ok=True)
    plot_sweep(sweep, png)
    # (c)
    log("(c) Bias in Bios samples, frozen MiniLM features")
    bios = run_table(bios_factory(bios_dir, 16), args.bios_epochs, seeds, log)
    total = time.perf_counter() - started

    # ------------------------------------------------------------------ write
    tr = feats_by_attr["gender"].splits["train"]
    te = feats_by_attr["gender"].splits["test"]
    md.append(f"Scale: {len(seeds)} seed(s); hate speech: bi-GRU `Embed` (`TokenEncoder`, embedding 100, 2 × 128 "
              f"GRU → 256-d; Shen used 2 × 200) trained {args.embed_epochs} CE epoch(s) on the train split then frozen (Shen's protocol), "
              f"every method trains `Enc` (2 × 300 tanh) and its heads on the frozen features for {args.epochs} "
              f"epochs (batch 256, Adam 1e-3, no early stopping or model selection; two-step methods spend "
              f"{max(1, math.ceil(args.epochs * 0.6))} epochs in their first stage); {len(tr)} train / {len(te)} test "
              f"tweets; two-view methods draw their views from {views} EDA copies of every training tweet encoded "
              f"once. Bias in Bios: {args.bios_epochs} epochs, batch 16. Whole run: {total / 60:.1f} min on this "
              f"machine ({os.cpu_count()} CPU cores, shared).\n")
    md.append("Columns are ×100, mean ± std over seeds. GAP = `tpr_gap_rms` (Shen), EO gap = Σ over groups of "
              "|TPR_a − TPR| + |FPR_a − FPR| for the positive class (Chi, binary task), Leak@h / Leak@ŷ = linear-SVM "
              "accuracy for the attribute on the hidden layer / logits (50 = chance for balanced groups; tweets "
              "with unknown attribute are left out of every fairness measure). Tradeoff = Shen's "
              "½N(Acc) + ¼N(1−GAP) + ⅛N(1−Leak@h) + ⅛N(1−Leak@ŷ) over the method means of each table "
              "(`faircl.metrics.tradeoff.tradeoff_score`).\n")
    md.append("Hyper-parameters (no tuning beyond the paper defaults): ConFair λ = 1 (α = β = ½), τ = 0.01; "
              "Con_*^ft the same contrastive loss, then a logistic-regression head; One/TwoStageCL λ = 1, τ = 0.1 "
              "(γ = 0.3); Adv λ_adv = 1 with the discriminator conditioned on y (Chi's EO variant), DiverseAdv "
              "3 discriminators, λ_diff = 100; INLP 20 logistic-regression rounds on the CE-trained `Enc`.\n")
    for attr in ("gender", "age"):
        lines, means = summarise(hate[attr])
        hate_means[attr] = means
        md.append(f"\n## (a) English hate speech — attribute {attr}\n")
        md += lines
    md.append("\n## (b) λ sweep — hate speech, attribute age\n")
    md.append(f"{args.sweep_seeds} seed(s) per point. Plot: `{png.name}` (accuracy against the EO gap for "
              "TwoStageCL, against GAP for ConFair).\n")
    md.append(f"![trade-off]({png.name})\n")
    md.append("| method | λ | Acc | GAP | EO gap | Leak@h | Leak@ŷ |")
    md.append("|---|---|---|---|---|---|---|")
    for name, pts in sweep.items():
        for lam, m, s in pts:
            cells = " | ".join(f"{100 * m[k]:.1f} ± {100 * s[k]:.1f}" for k in
                               ("accuracy", "tpr_gap_rms", "eo_gap", "leakage_h", "leakage_yhat"))
            md.append(f"| {name} | {lam:g} | {cells} |")
    lines, bios_means = summarise(bios)
    md.append("\n## (c) Bias in Bios samples — frozen all-MiniLM-L6-v2 features, 28 professions, gender\n")
    md.append("280 real biographies (10 per profession), seeded stratified 55/15/30 split: a very small test set, "
              "so gaps are noisy. Features come from the on-disk feature cache (computed once).\n")
    md += lines
    md.append("\n## Do the papers' claims hold here?\n")
    md += verdicts(hate_means, sweep, bios_means)
    overhead = out.parent / "overhead.md"
    if overhead.is_file():  # figures of benchmarks/overhead.py (run separately)
        md.append("\n## Training overhead (from `benchmarks/overhead.py`)\n")
        md += [line for line in overhead.read_text().splitlines()[1:] if line.strip()]
    out.write_text("\n".join(md) + "\n")
    log(f"wrote {out} and {png} in {total / 60:.1f} min")


def verdicts(hate_means, sweep, bios_means) -> list[str]:
    """Plain statements computed from the measured numbers (the analysis paragraph is added by hand)."""
    lines = []
    for attr, means in hate_means.items():
        ce, cf = means["CE"], means["ConFair (Con_*)"]
        d_acc = 100 * (cf["accuracy"] - ce["accuracy"])
        d_gap = 100 * (cf["tpr_gap_rms"] - ce["tpr_gap_rms"])
        d_lh = 100 * (cf["leakage_h"] - ce["leakage_h"])
        holds = d_gap < 0 and d_lh < 0 and d_acc >= -2
        lines.append(f"- Hate speech / {attr}: ConFair vs CE: accuracy {d_acc:+.1f}, GAP {d_gap:+.1f}, "
                     f"Leak@h {d_lh:+.1f} points → the claim (lower GAP and leakage at ≤ 2 points accuracy loss) "
                     f"**{'holds' if holds else 'does not hold'}**.")
    pts = sweep["TwoStageCL"]
    eos = [m["eo_gap"] for _, m, _ in pts]
    mono = all(b <= a + 1e-9 for a, b in zip(eos, eos[1:]))
    lines.append(f"- TwoStageCL EO gap over λ = {', '.join(f'{lam:g}' for lam, _, _ in pts)}: "
                 f"{', '.join(f'{100 * e:.1f}' for e in eos)} → the claim (EO gap falls as λ grows) "
                 f"**{'holds' if mono else ('holds overall' if eos[-1] < eos[0] else 'does not hold')}**"
                 f"{'' if mono else ' (not monotone)'}.")
    ce, cf = bios_means["CE"], bios_means["ConFair (Con_*)"]
    lines.append(f"- Bias in Bios samples: ConFair vs CE: accuracy {100 * (cf['accuracy'] - ce['accuracy']):+.1f}, "
                 f"GAP {100 * (cf['tpr_gap_rms'] - ce['tpr_gap_rms']):+.1f}, "
                 f"Leak@h {100 * (cf['leakage_h'] - ce['leakage_h']):+.1f} points.")
    return lines


if __name__ == "__main__":
    main()
