"""Fair text classification at CPU scale on real data: the claims of Shen et al. (2021) and Chi et al. (2022).

    .venv/bin/python benchmarks/text_fairness.py            # full run (5 seeds, ~55 min on a shared 2-core CPU)
    .venv/bin/python benchmarks/text_fairness.py --quick    # smoke run (1 seed, 3 epochs, small subsets)
    .venv/bin/python benchmarks/text_fairness.py --render benchmarks/results/text_fairness.json  # no training

Writes ``benchmarks/results/text_fairness.md`` (summary of verdicts first), ``.json`` (every per-seed report) and
``text_fairness_tradeoff.png`` (``--out`` to change). CE and every method are paired by seed; each is tested at the
epoch of lowest validation DTO (balanced DTO on Polish), among the epochs of a two-step method's final stage.

(a) Huang et al. English hate speech, attributes gender and age, under the controlled-stereotype protocol
    (``HateSpeech(split_protocol="controlled")``: ``English_valid`` and ``English_test`` pooled; train with balanced
    classes and groups where the attribute agrees with the label for 80% of rows; balanced val / test), or with
    ``--protocol published`` the published split. Shen's protocol: ``Embed`` is a bi-GRU (``TokenEncoder``) trained
    with cross-entropy and then frozen; its outputs (plus two EDA views of every training tweet, for the two-view
    methods) are computed once, and every method trains ``Enc`` (2 × 300 tanh MLP) + its heads on them.
    CE, ConFair (``Con_*``), OneStageCL, TwoStageCL, DiverseAdv, per-class INLP (``--methods all`` adds Adv and
    ``Con_*^ft``).
(b) λ sweep of TwoStageCL and ConFair on (a) with attribute age, and the accuracy–fairness plot.
(c) Bias in Bios samples (28 professions × 10 bios) on frozen all-MiniLM-L6-v2 features: a small-data stress test.
(d) Polish hate speech (its own train / valid / test files), attributes gender and age, train class-balanced by
    oversampling, utility = balanced accuracy.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _text_report import COLUMNS, load_raw, save_raw, write_report  # noqa: E402

from faircl.checkpoints import FairCheckpoint  # noqa: E402
from faircl.data.base import FairDataModule, FairDataset  # noqa: E402
from faircl.testing import quiet_trainer_kwargs  # noqa: E402

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
             lr: float = 1e-3, select: str = "dto") -> tuple[dict[str, float], float]:
    """Train ``cls(**kwargs)`` for ``epochs``, test the epoch chosen by ``select``; returns (test report, fit s).

    ``select``: ``dto`` / ``balanced_dto`` — validate after every epoch and test the checkpoint with the lowest
    ``val/<select>`` (fairlib's distance to the optimum over accuracy, or balanced accuracy, and 1 − GAP; the same
    rule for every method, among the epochs of a staged method's final stage); ``last`` — test the last epoch.
    """
    L.seed_everything(seed, verbose=False)
    dm.seed = seed
    model = cls(num_classes=dm.num_classes, num_groups=dm.num_groups, input_dim=dm.input_dim, lr=lr,
                **{**ENC, **kwargs})
    with tempfile.TemporaryDirectory(prefix="faircl-text-") as tmp:
        if select == "last":
            kw = dict(limit_val_batches=0, num_sanity_val_steps=0)
        else:
            # the library's checkpoint rule: best by the monitored metric among the final stage's epochs
            best = FairCheckpoint(monitor=f"val/{select}", mode="min", dirpath=tmp, save_weights_only=True)
            kw = dict(num_sanity_val_steps=0, enable_checkpointing=True, callbacks=[best])
        trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=epochs, **kw))
        with contextlib.redirect_stdout(io.StringIO()):
            t0 = time.perf_counter()
            trainer.fit(model, datamodule=dm)
            seconds = time.perf_counter() - t0
            if select != "last":
                if not best.best_model_path:
                    raise RuntimeError(f"{cls.__name__}: no epoch logged a finite val/{select}")
                state = torch.load(best.best_model_path, map_location="cpu", weights_only=True)
                model.load_state_dict(state["state_dict"])
            trainer.test(model, datamodule=dm, verbose=False)
    report = dict(model.test_report)
    report["selected_epoch"] = float(state["epoch"]) if select != "last" else float(epochs - 1)
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
            "constant_accuracy": float(torch.bincount(y).max()) / len(y),
            "constant_balanced_accuracy": 1.0 / dm.num_classes}


CLAIMED = ("CE", "ConFair (Con_*)", "OneStageCL", "TwoStageCL", "DiverseAdv", "INLP")


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


def run_table(make_dm, epochs: int, seeds: list[int], log, methods: list[str] | None = None,
              select: str = "dto") -> dict[str, list[dict[str, float]]]:
    import faircl.methods as M

    grid = method_grid(epochs)
    out: dict[str, list[dict[str, float]]] = {}
    for name, (cls_name, kwargs, views) in grid.items():
        if methods and name not in methods:
            continue
        cls = getattr(M, cls_name)
        out[name] = []
        for seed in seeds:
            report, sec = fit_test(cls, kwargs, make_dm(views), epochs, seed, select=select)
            report["fit_seconds"] = sec
            out[name].append(report)
            log(f"  {name:16s} seed {seed}: acc {report['accuracy']:.3f} bacc {report['balanced_accuracy']:.3f} "
                f"GAP {report['tpr_gap_rms']:.3f} EO {report['eo_gap']:.3f} "
                f"leak@h {report.get('leakage_h', float('nan')):.3f} top-class {report['majority_share']:.2f} "
                f"epoch {report['selected_epoch']:.0f} ({sec:.1f}s)")
    return out


# ------------------------------------------------------------------------------------------ (a) hate speech
@torch.no_grad()
def encode_ids(encoder: torch.nn.Module, ids: torch.Tensor, batch: int = 512) -> torch.Tensor:
    encoder.eval()
    return torch.cat([encoder(ids[i:i + batch]) for i in range(0, len(ids), batch)]).float()


def class_balanced(ds: FairDataset, seed: int = 0) -> FairDataset:
    """Every row once plus seeded duplicates of the rarer classes' rows until each class has as many rows as the
    largest (random oversampling: the expected gradient of a class-balanced loss)."""
    y = ds.y.numpy()
    rng = np.random.default_rng(seed)
    counts = np.bincount(y)
    keep = [np.concatenate([rows, rng.choice(rows, counts.max() - len(rows))])
            for rows in (np.flatnonzero(y == c) for c in range(len(counts)))]
    order = rng.permutation(np.concatenate(keep))
    return FairDataset(ds.x[order], y[order], ds.a.numpy()[order], num_classes=ds.num_classes,
                       num_groups=ds.num_groups, source=f"{ds.source} (class-balanced by oversampling)")


def hate_features(data_dir: Path, attribute: str, embed_epochs: int, max_train: int | None, views: int,
                  log, embed: Any = None, protocol: str = "controlled", language: str = "English",
                  balance: bool = False) -> tuple[FrozenFeatures, Any]:
    """Train the bi-GRU ``Embed`` with CE (seed 0) unless given, freeze it, and return its features of every split.

    ``protocol``: ``controlled`` (English, see ``HateSpeech``), ``published`` (English: train on ``English_valid``)
    or ``standard`` (a language's own train / valid / test files). ``balance``: oversample the train split to
    balanced classes (for the Embed and every method). An Embed given is reused (same train rows and labels).
    """
    from faircl.data.text import HateSpeech
    from faircl.methods import CE

    split = {"published": "valid_as_train", "controlled": "controlled", "standard": "standard"}[protocol]
    dm = HateSpeech(data_dir=str(data_dir), language=language, attribute=attribute, split_protocol=split,
                    batch_size=128, seed=0,
                    controlled_eval=400 if max_train is not None and max_train < 2000 else 2000)
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
    if balance:
        before = np.bincount(splits["train"].y.numpy(), minlength=2).tolist()
        splits["train"] = class_balanced(splits["train"])
        log(f"  {language} train classes {before} → {np.bincount(splits['train'].y.numpy()).tolist()} "
            "(oversampled)")
    if embed is None:
        L.seed_everything(0, verbose=False)
        embed = CE(num_classes=2, num_groups=dm.num_groups, input_dim=dm.input_dim, encoder="tokens",
                   encoder_kwargs=EMBED, lr=2e-3, leakage=False)
        trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=embed_epochs, limit_val_batches=0,
                                                   num_sanity_val_steps=0))
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            trainer.fit(embed, datamodule=dm)
        log(f"  bi-GRU Embed: {embed_epochs} CE epoch(s) on {len(splits['train'])} {language} tweets in "
            f"{time.perf_counter() - t0:.0f}s")
    eda = dm.view_transform()
    tables, labels = {}, {}
    for name, ds in splits.items():
        ids = torch.as_tensor(ds.x) if not isinstance(ds.x, torch.Tensor) else ds.x
        t = [encode_ids(embed.encoder, ids)]
        if name == "train":
            torch.manual_seed(0)
            for _ in range(views):
                t.append(encode_ids(embed.encoder, torch.stack([eda(r) for r in ids])))
        tables[name] = t
        labels[name] = (ds.y.numpy(), ds.a.numpy())
    return FrozenFeatures(tables, labels, 2, list(dm.group_names), batch_size=256), embed


def partnerless_share(y: np.ndarray, a: np.ndarray, batch: int, draws: int = 200, seed: int = 0) -> float:
    """Mean share of the rows of a random training batch (drawn as the random sampler does, ``drop_last``) that are
    alone in their (class, group) cell: CS-InfoNCE gives such an anchor exactly 0 (its only positive is its other
    view), and ConFair's fair term has no same-class other-group pair for it. Unknown attributes count as alone."""
    rng = np.random.default_rng(seed)
    n, shares = len(y), []
    for _ in range(draws):
        order = rng.permutation(n)
        for start in range(0, n - batch + 1, batch):
            idx = order[start:start + batch]
            cell = y[idx] * (int(a.max()) + 2) + a[idx]
            _, inverse, counts = np.unique(cell, return_inverse=True, return_counts=True)
            shares.append(float(np.mean((counts[inverse] == 1) | (a[idx] < 0))))
            break  # one batch per permutation
    return float(np.mean(shares))


def split_counts(feats: FrozenFeatures) -> str:
    """``split: n rows, (y, a) cell counts`` of every split (unknown attribute as a = -1)."""
    parts = []
    for name, (y, a) in feats.labels.items():
        cells = {f"y{yy}a{aa}": int(((y == yy) & (a == aa)).sum()) for yy in (0, 1) for aa in (-1, 0, 1)}
        parts.append(f"{name} {len(y)} ({', '.join(f'{k} {v}' for k, v in cells.items() if v)})")
    y, a = feats.labels["train"]
    alone = partnerless_share(y, a, feats.batch_size)
    return "; ".join(parts) + f"; train anchors alone in their (y, a) cell at batch {feats.batch_size}: " \
                              f"{100 * alone:.1f}%"


def with_views(base: FrozenFeatures, views: bool) -> FrozenFeatures:
    return FrozenFeatures(base.tables, base.labels, base._nc, base.group_names, batch_size=base.batch_size,
                          two_views=views)


# ------------------------------------------------------------------------------------------ (b) λ sweep
def lambda_sweep(feats: FrozenFeatures, epochs: int, seeds: list[int], lams: dict[str, list[float]], log,
                 select: str = "dto") -> tuple[dict[str, list[tuple[float, dict[str, float], dict[str, float]]]],
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
            reps = [fit_test(cls, {key: lam, **extra}, with_views(feats, views), epochs, s, select=select)[0]
                    for s in seeds]
            mean = {k: float(np.mean([r[k] for r in reps])) for k, _ in COLUMNS}
            std = {k: float(np.std([r[k] for r in reps])) for k, _ in COLUMNS}
            out[name].append((lam, mean, std))
            runs[name][lam] = reps
            log(f"  {name} λ={lam:g}: acc {mean['accuracy']:.3f} GAP {mean['tpr_gap_rms']:.3f} "
                f"EO {mean['eo_gap']:.3f} leak@h {mean['leakage_h']:.3f}")
    return out, runs


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
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 seed, 3 epochs, small subsets")
    parser.add_argument("--data", default=os.environ.get("FAIRCL_DATA", str(ROOT.parent / "shared" / "data")))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "text_fairness.md"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=6, help="epochs of every method on the English features")
    parser.add_argument("--polish-epochs", type=int, default=4,
                        help="epochs on the Polish features (the oversampled train split is ~2x larger)")
    parser.add_argument("--embed-epochs", type=int, default=2, help="CE epochs of the bi-GRU Embed")
    parser.add_argument("--sweep-seeds", type=int, default=3)
    parser.add_argument("--bios-epochs", type=int, default=30)
    parser.add_argument("--bios-batch", type=int, default=64)
    parser.add_argument("--max-train", type=int, default=0,
                        help="seeded subset of the hate-speech train tweets (0 = all)")
    parser.add_argument("--protocol", choices=("controlled", "published"), default="controlled",
                        help="English split: controlled stereotype (80%% a = y in train) or the published one")
    parser.add_argument("--select", choices=("dto", "last"), default="dto",
                        help="model selection: lowest validation DTO (balanced DTO for Polish) or the last epoch")
    parser.add_argument("--methods", default=",".join(CLAIMED),
                        help="comma-separated methods (default: those with a claim; 'all' adds Adv and Con_*^ft)")
    parser.add_argument("--attributes", default="gender,age", help="English hate-speech attributes to run")
    parser.add_argument("--polish-attributes", default="gender,age", help="Polish attributes ('' = skip part d)")
    parser.add_argument("--no-bios", action="store_true", help="skip part (c)")
    parser.add_argument("--tiny", action="store_true", help="with --quick: 400 train tweets (for the test suite)")
    parser.add_argument("--render", metavar="JSON", help="rewrite the results file from a saved .json (no training)")
    args = parser.parse_args(argv)
    if args.render:
        write_report(Path(args.out), **load_raw(Path(args.render)))
        print(f"wrote {args.out} from {args.render}")
        return
    warnings.filterwarnings("ignore")
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    logging.getLogger("lightning.fabric").setLevel(logging.ERROR)
    torch.set_num_threads(int(os.environ.get("FAIRCL_BENCH_THREADS", "1")))
    data = Path(args.data)
    hate_dir, bios_dir = data / "multilingual_hate_speech_demographics", data / "bias_in_bios_samples"
    for d in (hate_dir,) + (() if args.no_bios else (bios_dir,)):
        if not d.is_dir():
            raise SystemExit(f"data folder {d} not found: pass --data <folder> or set FAIRCL_DATA")
    if args.quick:
        args.seeds, args.epochs, args.embed_epochs, args.sweep_seeds, args.bios_epochs = 1, 3, 1, 1, 3
        args.polish_epochs = 2
    seeds = list(range(args.seeds))
    max_train = (400 if args.tiny else 1500) if args.quick else (args.max_train or None)
    methods = None if args.methods == "all" else [m.strip() for m in args.methods.split(",") if m.strip()] or None
    attributes = [a.strip() for a in args.attributes.split(",") if a.strip()]
    polish = [a.strip() for a in args.polish_attributes.split(",") if a.strip()]
    select = args.select
    views = 2
    started = time.perf_counter()

    def log(msg: str) -> None:
        print(msg, flush=True)

    # (a)
    hate: dict[str, dict[str, list[dict[str, float]]]] = {}
    feats_by_attr: dict[str, FrozenFeatures] = {}
    counts: dict[str, str] = {}
    embed = None
    for attr in attributes:
        log(f"(a) English hate speech, attribute {attr}")
        # controlled protocol: one Embed per attribute (the pooled rows of one attribute's test set may be
        # another attribute's train rows)
        feats, embed = hate_features(hate_dir, attr, args.embed_epochs, max_train, views, log,
                                     embed if args.protocol == "published" else None, args.protocol)
        feats_by_attr[attr], counts[f"English {attr}"] = feats, split_counts(feats)
        hate[attr] = run_table(lambda v, f=feats: with_views(f, v), args.epochs, seeds, log, methods, select)
    # (b)
    sweep_attr = "age" if "age" in feats_by_attr else attributes[0]
    log(f"(b) λ sweep, hate speech / {sweep_attr}")
    # Chi et al.'s grid (λ on the scale of their code's per-anchor-mean L_CS, TwoStageCL's default reduction)
    lams = {"TwoStageCL": [0.0, 0.1, 1.0, 10.0], "ConFair": [0.0, 0.25, 1.0, 4.0]}
    if args.quick:
        lams = {"TwoStageCL": [0.0, 1.0], "ConFair": [0.0, 1.0]}
    sweep_seeds = list(range(max(args.sweep_seeds, 1)))
    sweep, sweep_runs = lambda_sweep(feats_by_attr[sweep_attr], args.epochs, sweep_seeds, lams, log, select)
    # (c)
    bios: dict[str, list[dict[str, float]]] = {}
    if not args.no_bios:
        log("(c) Bias in Bios samples, frozen MiniLM features (small-data stress test)")
        bios = run_table(bios_factory(bios_dir, args.bios_batch), args.bios_epochs, seeds, log, methods, select)
        tr = bios_factory(bios_dir, args.bios_batch)(False).splits["train"]
        y, a = tr.y.numpy(), tr.a.numpy()
        alone = partnerless_share(y, a, args.bios_batch)
        counts["Bias in Bios"] = (f"train {len(y)}, 28 professions × 2 genders; train anchors alone in their (y, a) "
                                  f"cell at batch {args.bios_batch}: {100 * alone:.1f}% "
                                  f"(at batch 16: {100 * partnerless_share(y, a, 16):.1f}%)")
    # (d)
    pl: dict[str, dict[str, list[dict[str, float]]]] = {}
    embed = None
    for attr in polish:
        log(f"(d) Polish hate speech, attribute {attr}")
        feats, embed = hate_features(hate_dir, attr, args.embed_epochs, max_train, views, log, embed, "standard",
                                     language="Polish", balance=True)
        counts[f"Polish {attr}"] = split_counts(feats)
        pl[attr] = run_table(lambda v, f=feats: with_views(f, v), args.polish_epochs, seeds, log, methods,
                             "balanced_dto" if select == "dto" else select)
    total = time.perf_counter() - started
    out = Path(args.out)
    raw = dict(args=vars(args), argv=sys.argv[1:] if argv is None else argv, seeds=seeds, hate=hate, sweep=sweep,
               sweep_runs=sweep_runs, sweep_attr=sweep_attr, sweep_seeds=sweep_seeds, bios=bios, polish=pl,
               counts=counts, total=total, views=views, when=time.strftime("%Y-%m-%d"))
    save_raw(out.with_suffix(".json"), raw)
    write_report(out, **load_raw(out.with_suffix(".json")))
    log(f"wrote {out} (+ .json, _tradeoff.png) in {total / 60:.1f} min")


if __name__ == "__main__":
    main()
