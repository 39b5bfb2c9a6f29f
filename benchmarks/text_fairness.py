"""Fair text classification at CPU scale: the claims of Shen et al. (2021) and Chi et al. (2022) where the bias is
real and strongly encoded.

    .venv/bin/python benchmarks/text_fairness.py            # full run (see the results file for its wall time)
    .venv/bin/python benchmarks/text_fairness.py --quick    # smoke run (2 seeds, few epochs, small subsets)
    .venv/bin/python benchmarks/text_fairness.py --render benchmarks/results/text_fairness.json.gz  # no training

Writes ``benchmarks/results/text_fairness.md`` (verdicts first), ``.json.gz`` (every per-seed report with its per-row
test and validation predictions) and ``text_fairness_tradeoff.png``. Every fit keeps each epoch of its final stage;
each claim is judged on the epoch its paper's selection rule picks (Shen: lowest validation GAP within 1 point of
the best validation accuracy; Chi: best validation F1) and, as a second family, on the epoch of lowest validation
DTO. Verdicts: :mod:`faircl.eval.compare` (through ``benchmarks/_stats.py``).

(a) Main: SynthBios two-class (the 8 professions grouped by their stereotyped gender; train 80% attribute = label,
    val / test balanced), frozen all-MiniLM-L6-v2 features (Shen's Embed) and a 2 × 300 tanh ``Enc``; every text
    method, ConFair with the L2-normalised (Shen) and the raw tanh hidden layer (fairlib), at fairlib's batch of
    1,024 (paired with CE at that batch and the same number of optimiser steps).
(b) Control: (a) with the attribute permuted in every split: every claim must read untestable.
(c) Chi's λ and τ grids for TwoStageCL on (a), with λ = 0 as the control of the fair term.
(d) English hate speech under the controlled stereotype, attribute age (Shen's only hate-speech claim).
(e) The real Bias in Bios samples (280 bios, 28 professions, gender) on the same frozen features: every method, its
    rows labelled by what the rule calls them (the bias may not exceed the attribute-permuted null there).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _text_report import load_raw, save_raw, write_report  # noqa: E402
from _text_runs import RULES, Spec, run_methods  # noqa: E402


BIG_BATCH = 1024  # fairlib's batch for ConFair over frozen features


def steps_per_epoch(n_train: int, batch: int) -> int:
    """Optimiser steps of one epoch (the train loader drops the last partial batch when the split is larger)."""
    return n_train // batch if n_train > batch else 1


def method_grid(epochs: int, names: list[str] | None = None, n_train: int = 1200, batch: int = 256
                ) -> dict[str, Spec]:
    """Name → :class:`Spec`. Two-step methods spend 60% of the epochs in their first stage.

    ConFair runs as fairlib runs it: batch 1,024 (the whole train split when it is smaller), for as many optimiser
    steps as the other methods take at the protocol's ``batch`` in ``epochs`` epochs; its baseline is CE at the same
    batch and steps, ``CE (batch 1024)`` (left out when that is the protocol's own CE)."""
    import faircl.methods as M

    big = min(BIG_BATCH, n_train)
    e_big = max(1, round(epochs * steps_per_epoch(n_train, batch) / steps_per_epoch(n_train, big)))
    first, first_big = max(1, int(round(epochs * 0.6))), max(1, int(round(e_big * 0.6)))
    fair = {"alpha": 1.0, "beta": 0.1, "temperature": 0.01}  # fairlib: CE + 0.1·SCL(h, y) − 0.1·SCL(h, a), τ 0.01
    grid = {"CE": Spec(M.CE, {})}
    if min(batch, n_train) != big:
        grid[f"CE (batch {BIG_BATCH})"] = Spec(M.CE, {}, False, BIG_BATCH, e_big)
    grid.update({
        "Con_* (l2 h, Shen)": Spec(M.ConFair, {**fair, "normalize": True}, False, BIG_BATCH, e_big),
        "Con_* (raw tanh h, fairlib)": Spec(M.ConFair, {**fair, "normalize": False}, False, BIG_BATCH, e_big),
        "Con_*^ft": Spec(M.ConFair, {"temperature": 0.01, "pipeline": True, "stage1_epochs": first_big}, False,
                         BIG_BATCH, e_big),
        "TwoStageCL": Spec(M.TwoStageCL, {"lambda_cs": 1.0, "temperature": 0.1, "stage1_epochs": first}, True),
        "OneStageCL": Spec(M.OneStageCL, {"lambda_cs": 1.0, "gamma": 0.3, "temperature": 0.1}, True),
        "Adv": Spec(M.Adversarial, {"lambda_adv": 1.0, "conditional": True}),
        "DiverseAdv": Spec(M.DiverseAdversarial, {"lambda_adv": 1.0, "conditional": True, "n_adv": 3,
                                                  "lambda_diff": 100.0}),
        "INLP": Spec(M.INLP, {"stage1_epochs": first, "n_clf": 20, "probe": "logistic", "per_class": True}),
    })
    # a name selects itself and its variants ("Con_*" selects both Con_* rows, not Con_*^ft; "CE" also CE (batch …))
    return {k: v for k, v in grid.items() if not names or any(k == n or k.startswith(n + " ") for n in names)}


def chi_grid(epochs: int, lams: list[float], taus: list[float]) -> dict[str, Spec]:
    """TwoStageCL over Chi's λ grid (τ 0.1) and τ grid (λ 1)."""
    import faircl.methods as M

    first = max(1, int(round(epochs * 0.6)))
    grid = {f"TwoStageCL λ={lam:g} τ=0.1": Spec(M.TwoStageCL, {"lambda_cs": lam, "temperature": 0.1,
                                                               "stage1_epochs": first}, True) for lam in lams}
    grid.update({f"TwoStageCL λ=1 τ={tau:g}": Spec(M.TwoStageCL, {"lambda_cs": 1.0, "temperature": tau,
                                                                  "stage1_epochs": first}, True)
                 for tau in taus if tau != 0.1})
    return grid


def data_folder(args: argparse.Namespace, name: str) -> Path:
    """``<--data>/<name>``, or exit naming the folder and how to point to the data."""
    data = Path(args.data) / name
    if not data.is_dir():
        raise SystemExit(f"data folder {data} not found: pass --data <folder> or set FAIRCL_DATA")
    return data


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run: 2 seeds, 4 epochs, small subsets")
    p.add_argument("--data", default=os.environ.get("FAIRCL_DATA", str(ROOT.parent / "shared" / "data")))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "text_fairness.md"))
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--epochs", type=int, default=15, help="epochs of every method on the frozen features")
    p.add_argument("--rows", default="1200,400,800", help="SynthBios train,val,test rows")
    p.add_argument("--copies", type=int, default=4, help="distinct augmented copies of every training bio")
    p.add_argument("--control-seeds", type=int, default=5)
    p.add_argument("--sweep-seeds", type=int, default=5)
    p.add_argument("--lambdas", default="0,0.1,0.5,1,2,5,10", help="Chi's λ grid for TwoStageCL ('' = skip)")
    p.add_argument("--taus", default="0.1,0.5,1,2", help="Chi's τ grid for TwoStageCL at λ = 1")
    p.add_argument("--hate-seeds", type=int, default=5)
    p.add_argument("--hate-epochs", type=int, default=6)
    p.add_argument("--embed-epochs", type=int, default=2)
    p.add_argument("--hate-max-train", type=int, default=0, help="hate-speech train tweets (0 = all)")
    p.add_argument("--no-hate", action="store_true", help="skip part (d)")
    p.add_argument("--bios-seeds", type=int, default=10)
    p.add_argument("--bios-epochs", type=int, default=30, help="epochs at batch 64 on the Bias in Bios samples")
    p.add_argument("--no-bios", action="store_true", help="skip part (e)")
    p.add_argument("--methods", default="", help="comma-separated subset of the main methods ('' = all; 'Con_*' = "
                   "both Con_* variants)")
    p.add_argument("--bootstrap", type=int, default=2000, help="test-row bootstrap replicates of the verdicts")
    p.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate over frozen features (fairlib)")
    p.add_argument("--render", metavar="JSON",
                   help="rewrite the results file from a saved .json / .json.gz (no training)")
    args = p.parse_args(argv)
    if args.render:
        write_report(Path(args.out), load_raw(Path(args.render)))
        print(f"wrote {args.out} from {args.render}")
        return
    warnings.filterwarnings("ignore")
    for name in ("lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)
    torch.set_num_threads(int(os.environ.get("FAIRCL_BENCH_THREADS", "1")))
    if args.quick:
        args.seeds, args.epochs, args.control_seeds, args.sweep_seeds, args.hate_seeds = 2, 4, 2, 2, 2
        args.rows, args.copies, args.hate_epochs, args.embed_epochs = "200,100,200", 2, 2, 1
        args.lambdas, args.taus, args.hate_max_train = "0,1", "0.1", 800
        args.bios_seeds, args.bios_epochs, args.bootstrap = 2, 4, 300
    started = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{(time.perf_counter() - started) / 60:5.1f} min] {msg}", flush=True)

    from _text_protocols import bios_features, hate_features, synthbios_features

    n_train, n_val, n_test = (int(v) for v in args.rows.split(","))
    seeds = list(range(args.seeds))
    methods = [m.strip() for m in args.methods.split(",") if m.strip()] or None
    raw: dict = {"args": vars(args), "argv": sys.argv[1:] if argv is None else argv, "rules": list(RULES),
                 "when": time.strftime("%Y-%m-%d"), "parts": {}, "info": {}, "seconds": {}}
    log("(a) SynthBios two-class, frozen MiniLM features")
    feats, info = synthbios_features(n_train, n_val, n_test, args.copies, log)
    raw["info"]["main"] = info
    log(f"  train agreement a = y: {100 * info['train_agreement']:.1f}%; identical pairs among the "
        f"{args.copies + 1} copies of a training row: {100 * info['identical_view_pairs']:.2f}%")
    t0 = time.perf_counter()
    grid = method_grid(args.epochs, methods, n_train, feats.batch_size)
    raw["parts"]["main"] = run_methods(grid, feats, args.epochs, seeds, log, args.lr)
    raw["seconds"]["main"] = time.perf_counter() - t0
    raw["labels"] = {"main": {s: [v.tolist() for v in feats.labels[s]] for s in ("val", "test")}}

    log("(b) control: attribute permuted in every split")
    control = feats.permuted(seed=1)
    t0 = time.perf_counter()
    raw["parts"]["control"] = run_methods(grid, control, args.epochs,
                                          list(range(args.control_seeds)), log, args.lr, "control ")
    raw["seconds"]["control"] = time.perf_counter() - t0
    raw["labels"]["control"] = {s: [v.tolist() for v in control.labels[s]] for s in ("val", "test")}

    lams = [float(v) for v in args.lambdas.split(",") if v.strip()]
    if lams:
        log("(c) Chi's λ and τ grids for TwoStageCL")
        t0 = time.perf_counter()
        taus = [float(v) for v in args.taus.split(",") if v.strip()]
        raw["parts"]["chi_grid"] = run_methods(chi_grid(args.epochs, lams, taus), feats, args.epochs,
                                               list(range(args.sweep_seeds)), log, args.lr)
        raw["seconds"]["chi_grid"] = time.perf_counter() - t0
    if not args.no_hate:
        log("(d) English hate speech, controlled stereotype, attribute age")
        t0 = time.perf_counter()
        data = data_folder(args, "multilingual_hate_speech_demographics")
        hate, hinfo = hate_features(data, "age", args.embed_epochs, args.hate_max_train or None, 0, log)
        raw["info"]["hate"] = hinfo
        grid = method_grid(args.hate_epochs, ["CE", "Con_* (l2 h, Shen)", "Con_* (raw tanh h, fairlib)"],
                           len(hate.labels["train"][0]), hate.batch_size)
        raw["parts"]["hate"] = run_methods(grid, hate, args.hate_epochs, list(range(args.hate_seeds)), log, args.lr)
        raw["labels"]["hate"] = {s: [np.asarray(v).tolist() for v in hate.labels[s]] for s in ("val", "test")}
        raw["seconds"]["hate"] = time.perf_counter() - t0
    if not args.no_bios:
        log("(e) Bias in Bios samples (real bios, 28 professions), frozen MiniLM features")
        t0 = time.perf_counter()
        data = data_folder(args, "bias_in_bios_samples")
        bios, binfo = bios_features(data, args.copies, log)
        raw["info"]["bios"] = binfo
        grid = method_grid(args.bios_epochs, methods, len(bios.labels["train"][0]), bios.batch_size)
        raw["parts"]["bios"] = run_methods(grid, bios, args.bios_epochs, list(range(args.bios_seeds)), log, args.lr)
        raw["labels"]["bios"] = {s: [np.asarray(v).tolist() for v in bios.labels[s]] for s in ("val", "test")}
        raw["seconds"]["bios"] = time.perf_counter() - t0
    raw["total"] = time.perf_counter() - started
    out = Path(args.out)
    raw_path = out.with_name(out.stem + ".json.gz")
    save_raw(raw_path, raw)
    write_report(out, load_raw(raw_path))
    log(f"wrote {out} (+ .json.gz, _tradeoff.png) in {raw['total'] / 60:.1f} min")


if __name__ == "__main__":
    main()
