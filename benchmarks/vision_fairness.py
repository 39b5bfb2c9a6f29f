"""Fair image representations at CPU scale: ConFair, Chi's label-aware losses, PARADE and fairness-driven SimCLR
on protocols where the bias is real (Moji-style stereotype in train, balanced validation and test).

    .venv/bin/python benchmarks/vision_fairness.py            # full run (see the results file for its wall time)
    .venv/bin/python benchmarks/vision_fairness.py --quick    # smoke run (2 seeds, few epochs, small subsets)
    .venv/bin/python benchmarks/vision_fairness.py --render benchmarks/results/vision_fairness.json.gz  # no training

Writes ``benchmarks/results/vision_fairness.md`` (verdicts first), ``.json.gz`` (every per-seed report with its
per-row validation and test predictions) and ``vision_fairness_tradeoff.png``. Protocols
(``benchmarks/_vision_protocols.py``): ColoredDigits two-class (digit ≥ 5, colour stereotyped on the label) and the
UTKFace subset restricted to White / Black faces (task gender, attribute race, stereotype induced in train by
subsampling). Every fit keeps each epoch of its final stage; each claim is judged at its paper's selection rule and,
as a second family, at the epoch of lowest validation DTO. Verdicts: :mod:`faircl.eval.compare`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _vision_report import load_raw, save_raw, write_report  # noqa: E402

#: name → (family, class name, arguments, paper selection rule or embedding prediction)
#: families: "shen" (full-batch, fairlib's lr), "chi" (two views, batch 128), "dml", "ssl"
METHODS = {
    "CE (full batch)": ("shen", "CE", {}, "shen"),
    "Con_* (l2 h, Shen)": ("shen", "ConFair", {"alpha": 1.0, "beta": 0.1, "temperature": 0.01, "normalize": True},
                           "shen"),
    "Con_* (raw h, fairlib)": ("shen", "ConFair", {"alpha": 1.0, "beta": 0.1, "temperature": 0.01,
                                                   "normalize": False}, "shen"),
    "CE": ("chi", "CE", {}, "chi"),
    "TwoStageCL": ("chi", "TwoStageCL", {"lambda_cs": 1.0, "temperature": 0.1}, "chi"),
    "TwoStageCL λ=0": ("chi", "TwoStageCL", {"lambda_cs": 0.0, "temperature": 0.1}, "chi"),
    "OneStageCL": ("chi", "OneStageCL", {"lambda_cs": 1.0, "gamma": 0.3, "temperature": 0.1}, "chi"),
    "DML": ("dml", "DML", {}, "knn"),
    "PARADE": ("dml", "PARADE", {"lambda_sa": 0.1, "lambda_sep": 500.0}, "knn"),
    "SimCLR": ("ssl", "SimCLR", {}, "probe"),
    "FairSampling (weighted)": ("ssl", "FairSamplingSimCLR", {"negatives": "weighted"}, "probe"),
    "FairSampling (sampled)": ("ssl", "FairSamplingSimCLR", {"negatives": "sampled"}, "probe"),
}
ENCODER = {"digits": {"encoder": "conv", "encoder_kwargs": {"width": 16, "out_dim": 128}},
           "utkface": {"encoder": "conv", "encoder_kwargs": {"width": 16, "out_dim": 128}}}


def settings(args: argparse.Namespace) -> dict:
    """Scale of every experiment (stored in the raw results and printed in the report)."""
    return {"seeds": {"digits": list(range(args.seeds)), "utkface": list(range(args.seeds_utk))}, "bias": 0.8,
            "digits_size": 8, "utk_size": args.utk_size,
            "utk_fractions": (0.2, 0.25), "encoder": ENCODER,
            "epochs": {"digits": dict(args.epochs_digits), "utkface": dict(args.epochs_utk)},
            "ssl_pretrain": 0.5, "chi_stage1": 0.6,
            "batch": {"shen": 1024, "chi": 128, "dml": 64, "ssl": 128},
            "lr": {"shen": 3e-3, "chi": 3e-3, "dml": 1e-3, "ssl": 1e-3},
            "dml": {"loss": "margin", "miner": "distance", "embed_dim": 128, "samples_per_class": 32},
            "ssl": {"temperature": 0.5, "proj_dim": 128, "num_clusters": 4, "epsilon": 0.1},
            "max_train": args.max_train}


_DATA: dict = {}


def datamodule(dataset: str, cfg: dict, seed: int, family: str, data_dir: Path):
    """The protocol's datamodule of a method family (batches, views and sampler of the family). The rows (split,
    colours, stereotype subsample) are drawn once with data seed 0 and shared by every seed, so that all runs are
    scored on the same validation and test rows; ``seed`` sets the training order."""
    key = (dataset, family)
    if key not in _DATA:
        _DATA[key] = _build(dataset, cfg, family, data_dir)
    dm = _DATA[key]
    dm.seed = seed
    return dm


def _build(dataset: str, cfg: dict, family: str, data_dir: Path):
    from _vision_protocols import StereoDigits, StereoUTKFace

    batch = cfg["batch"][family]
    kw: dict = {"batch_size": batch, "seed": 0, "two_views": family in ("chi", "ssl")}
    if family == "dml":
        kw.update(sampler="samples_per_class", samples_per_class=cfg["dml"]["samples_per_class"], spc_by="class")
    if dataset == "digits":
        dm = StereoDigits(bias=cfg["bias"], size=cfg["digits_size"], max_train=cfg["max_train"], **kw)
    else:
        val, test = cfg["utk_fractions"]
        dm = StereoUTKFace(str(data_dir / "utkface_subset"), bias=cfg["bias"], image_size=cfg["utk_size"], cache=True,
                           val_fraction=val, test_fraction=test, max_rows=cfg.get("utk_max_rows"), **kw)
    dm._reported = True  # no count tables printed (the report prints the protocol)
    dm.setup("fit")
    return dm


def run_one(dataset: str, name: str, seed: int, cfg: dict, data_dir: Path) -> dict:
    """Train one method on one seed; ``{rule: report}`` (see :mod:`_vision_runs`)."""
    import faircl.methods as M
    from _vision_runs import fit_classifier, fit_embedding

    family, cls_name, kwargs, how = METHODS[name]
    cls = getattr(M, cls_name)
    dm = datamodule(dataset, cfg, seed, family, data_dir)
    epochs = cfg["epochs"][dataset][family]
    args = {**ENCODER[dataset], **kwargs}
    if family in ("shen", "chi"):
        if cls_name == "TwoStageCL":
            args["stage1_epochs"] = max(1, round(cfg["chi_stage1"] * epochs))
        return fit_classifier(cls, args, dm, epochs, seed, cfg["lr"][family], how)
    args.update(cfg["dml"] if family == "dml" else cfg["ssl"])
    args.pop("samples_per_class", None)
    args.update(lr=cfg["lr"][family], leakage=False)
    first = max(1, round(cfg["ssl_pretrain"] * epochs)) if family == "ssl" else 0
    if cls_name == "FairSamplingSimCLR":
        args["stage1_epochs"] = first
    return fit_embedding(cls, args, dm, epochs, seed, how, first)


def protocol_info(dataset: str, cfg: dict, data_dir: Path) -> dict:
    """Realised association and counts of seed 0's splits."""
    from _vision_protocols import describe

    dm = datamodule(dataset, cfg, 0, "shen", data_dir)
    return describe(dm.splits, dm.class_names, dm.group_names)


def merge_runs(saved: dict, new: dict, log) -> dict:
    """``saved`` with the runs of ``new`` (same datasets, rules, methods, seeds) put in place of its own; the re-run
    is recorded under ``reruns`` with how many of its runs reproduce the saved test predictions."""
    same = total = 0
    for dataset, rules in new["parts"].items():
        for rule, methods in rules.items():
            for name, reps in methods.items():
                old = saved["parts"].get(dataset, {}).get(rule, {}).get(name)
                if old is None or len(old) != len(reps):
                    raise SystemExit(f"--merge-into: the saved results have no {len(reps)} runs of {name!r} on "
                                     f"{dataset} ({rule} rule) to replace")
                same += sum(a["test_pred"] == b["test_pred"] for a, b in zip(old, reps))
                total += len(reps)
                saved["parts"][dataset][rule][name] = reps
    methods = sorted({m for rules in new["parts"].values() for ms in rules.values() for m in ms})
    saved.setdefault("reruns", []).append({"when": new["when"], "argv": new["argv"], "methods": methods,
                                           "datasets": sorted(new["parts"]), "same_test_predictions": same,
                                           "runs": total, "minutes": new["total"] / 60})
    log(f"merged {total} runs of {methods}; {same} reproduce the saved test predictions")
    return saved


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run: 2 seeds, 2-3 epochs, small subsets")
    p.add_argument("--data-dir", default=os.environ.get("FAIRCL_DATA", str(ROOT.parent / "shared" / "data")))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "vision_fairness.md"))
    p.add_argument("--seeds", type=int, default=8, help="seeds of ColoredDigits (fast)")
    p.add_argument("--seeds-utk", type=int, default=8, help="seeds of UTKFace")
    p.add_argument("--epochs-digits", default="shen=100,chi=20,dml=20,ssl=20",
                   help="ColoredDigits epochs per method family (shen: CE / ConFair at full batch; chi: CE and Chi's "
                        "two-view methods at batch 128; dml: DML / PARADE; ssl: SimCLR / FairSampling)")
    p.add_argument("--epochs-utk", default="shen=100,chi=30,dml=30,ssl=20", help="UTKFace epochs per method family")
    p.add_argument("--utk-size", type=int, default=32, help="UTKFace image side in pixels")
    p.add_argument("--max-train", type=int, default=None, help="ColoredDigits train rows (default: all)")
    p.add_argument("--datasets", default="digits,utkface")
    p.add_argument("--methods", default="", help="semicolon-separated subset of the methods ('' = all), e.g. "
                   "'CE;TwoStageCL'")
    p.add_argument("--render", metavar="JSON", help="rewrite the results file from a saved .json.gz (no training)")
    p.add_argument("--merge-into", metavar="JSON", help="re-run only --datasets / --methods and put their runs into "
                   "this saved .json.gz (the others kept; how many re-runs reproduce the saved test predictions is "
                   "recorded and printed in the results file), then rewrite the results file from it")
    args = p.parse_args(argv)
    if args.render:
        write_report(Path(args.out), load_raw(Path(args.render)))
        print(f"wrote {args.out} from {args.render}")
        return
    warnings.filterwarnings("ignore")
    for name in ("lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)
    torch.set_num_threads(int(os.environ.get("FAIRCL_BENCH_THREADS", "1")))
    for key in ("epochs_digits", "epochs_utk"):
        setattr(args, key, {k: int(v) for k, v in (kv.split("=") for kv in getattr(args, key).split(","))})
    if args.quick:
        args.seeds, args.seeds_utk, args.max_train = 2, 2, 300
        args.epochs_digits = args.epochs_utk = {"shen": 4, "chi": 3, "dml": 2, "ssl": 3}
    cfg = settings(args)
    if args.quick:
        cfg["utk_max_rows"] = 900
    data_dir = Path(args.data_dir)
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    if "utkface" in datasets and not (data_dir / "utkface_subset" / "labels.csv").is_file():
        print(f"UTKFace subset not found at {data_dir / 'utkface_subset'}: skipped")
        datasets.remove("utkface")
    chosen = [m.strip() for m in args.methods.split(";") if m.strip()] or list(METHODS)
    unknown = [m for m in chosen if m not in METHODS]
    if unknown:
        raise SystemExit(f"unknown method(s) {unknown}; choose among {list(METHODS)}")
    started = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{(time.perf_counter() - started) / 60:5.1f} min] {msg}", flush=True)

    raw: dict = {"argv": sys.argv[1:] if argv is None else list(argv), "quick": args.quick, "cfg": cfg,
                 "when": time.strftime("%Y-%m-%d"), "info": {}, "labels": {}, "parts": {}, "seconds": {}}
    for dataset in datasets:
        info = protocol_info(dataset, cfg, data_dir)
        raw["info"][dataset] = info
        log(f"{dataset}: train P(a = y) {info['train']['p_a_eq_y']:.3f}, counts {info['train']['counts']}; "
            f"test P(a = y) {info['test']['p_a_eq_y']:.3f}")
        runs: dict = {}
        dm = datamodule(dataset, cfg, 0, "shen", data_dir)
        raw["labels"][dataset] = {s: [dm.splits[s].y.tolist(), dm.splits[s].a.tolist()] for s in ("val", "test")}
        raw["parts"][dataset] = runs
        t0 = time.perf_counter()
        for seed in cfg["seeds"][dataset]:
            for name in chosen:
                res = run_one(dataset, name, seed, cfg, data_dir)
                for rule, rep in res.items():
                    runs.setdefault(rule, {}).setdefault(name, []).append(rep)
                d, q = res["dto"], res["paper"]
                log(f"  {dataset} {name:24s} seed {seed}: paper-rule epoch {q['selected_epoch']:.0f} "
                    f"({q['rule']}), DTO epoch {d['selected_epoch']:.0f} ({q['fit_seconds']:.0f}s)")
            # everything so far, so that an interrupted run can still be rendered (--render)
            raw["seconds"][dataset] = time.perf_counter() - t0
            raw["total"] = time.perf_counter() - started
            save_raw(Path(args.out).with_name(Path(args.out).stem + ".partial.json.gz"), raw)
        raw["seconds"][dataset] = time.perf_counter() - t0
    raw["total"] = time.perf_counter() - started
    out = Path(args.out)
    if args.merge_into:
        raw = merge_runs(load_raw(Path(args.merge_into)), raw, log)
    raw_path = out.with_name(out.stem + ".json.gz")
    save_raw(raw_path, raw)
    out.with_name(out.stem + ".partial.json.gz").unlink(missing_ok=True)
    write_report(out, load_raw(raw_path))
    log(f"wrote {out} (+ .json.gz, _tradeoff.png) in {raw['total'] / 60:.1f} min")


if __name__ == "__main__":
    main()
