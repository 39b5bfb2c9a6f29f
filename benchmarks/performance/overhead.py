"""What a faircl training epoch costs next to a plain PyTorch loop, for CE and every method, on three encoders.

    .venv/bin/python benchmarks/performance/overhead.py [--rounds 5] [--encoders mlp,tokens,timm] [--quick] [--out FILE]

For each encoder, one run times side by side (interleaved rounds through ``benchmarks/performance/_timing.py``):

* **plain loop**: the CE model (the same encoder and classifier modules, same initialisation) trained by a bare
  PyTorch loop: ``x[rows]`` → model → ``cross_entropy`` → Adam, over the same data in the same batch order (the
  datamodule's train sampler at epoch 0) with the same optimiser and learning rate;
* **faircl**: ``CE`` and every method trained by ``lightning.Trainer.fit`` on the datamodule, one epoch of the same
  steps (validation off), timed from the start to the end of the train epoch;
* **plain method**: the method's own ``forward`` + ``losses`` + Adam over its parameter groups in a bare loop on
  the same batches (two-view methods draw their views through the dataset's view transform, as in training).

Encoders: ``mlp`` — an MLP 2 × 300 (tanh) over 384-d features (``BiasedFeatures``, batch 1024, Adam lr 3e-3, Shen et
al.'s setting); ``tokens`` — embedding 100 + bi-GRU 2 × 128 over ``SynthBios`` token ids (batch 64); ``timm`` — a timm
``resnet18`` (``pretrained=False``) over a cached image set (UTKFace decoded once at 32 × 32 when the shared data is
present, else ``ColoredDigits`` at 32 × 32), batch 64.

Targets: faircl ``CE`` ≤ 1.2× the plain loop; each method's extra over ``CE`` (faircl method − faircl CE) no more
than its own measured cost (plain method − plain loop). Ratios use process CPU time with one torch thread (the work
done; other load on a shared machine disturbs it far less than wall time); wall medians are shown beside them. Each
method runs the first stage of its schedule (``FairSamplingSimCLR``: its fair phase, with fixed cluster ids). ``CCD``
trains on counterfactual text tuples, not on these datasets, and is left out. Writes ``benchmarks/performance/results/overhead.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import statistics
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback
from torch.nn import functional as F
from torch.utils.data import default_collate

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "performance"))  # _timing.py

import _timing as T  # noqa: E402

from faircl.testing import quiet_trainer_kwargs  # noqa: E402

#: method → (class name, keyword arguments, trains on two views)
METHODS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "CE": ("CE", {}, False),
    "ConFair": ("ConFair", {"lambda_fair": 1.0, "temperature": 0.01}, False),
    "TwoStageCL": ("TwoStageCL", {}, True),
    "OneStageCL": ("OneStageCL", {"lambda_cs": 1.0, "gamma": 0.3}, True),
    "Adversarial": ("Adversarial", {"lambda_adv": 1.0, "conditional": True}, False),
    "DiverseAdversarial": ("DiverseAdversarial", {"lambda_adv": 1.0, "conditional": True, "n_adv": 3}, False),
    "INLP": ("INLP", {}, False),
    "DML": ("DML", {}, False),
    "PARADE": ("PARADE", {"lambda_sa": 0.1, "lambda_sep": 500.0}, False),
    "SimCLR": ("SimCLR", {}, True),
    "FairSamplingSimCLR": ("FairSamplingSimCLR", {"stage1_epochs": 0}, True),
}
PLAIN_TARGET = 1.2


def _data_dir() -> Path:
    return Path(os.environ.get("FAIRCL_DATA", ROOT.parent / "shared" / "data"))


def encoders(quick: bool) -> dict[str, dict[str, Any]]:
    """The three encoder settings: datamodule factory, encoder, batch size, learning rate, steps per epoch."""
    from faircl.data import BiasedFeatures, ColoredDigits, SynthBios, UTKFace

    steps = {"mlp": 10, "tokens": 6, "timm": 3} if not quick else {"mlp": 3, "tokens": 3, "timm": 2}
    utk = _data_dir() / "utkface_subset"

    def image_dm(views: bool):
        if (utk / "labels.csv").is_file():
            return UTKFace(data_dir=str(utk), image_size=32, cache=True, batch_size=64, two_views=views, seed=0,
                           max_rows=64 * steps["timm"] + 200)
        return ColoredDigits(size=32, batch_size=64, two_views=views, seed=0)

    return {
        "mlp": {"label": "MLP 2 × 300 (tanh) over 384-d features (BiasedFeatures), batch 1024, Adam lr 3e-3",
                "dm": lambda views: BiasedFeatures(n_train=1024 * steps["mlp"], n_val=64, n_test=64, dim=384,
                                                   batch_size=1024, two_views=views, seed=0),
                "encoder": "mlp", "encoder_kwargs": {"hidden_dim": 300, "num_layers": 2, "activation": "tanh"},
                "lr": 3e-3, "steps": steps["mlp"],
                # distance-weighted mining over a 1024-row batch costs ~10 s a step (their own cost, measured equal in
                # faircl and in a plain loop): timed on the two batch-64 encoders only
                "skip": {"DML": "mining a 1024-row batch: ~10 s a step", "PARADE": "mining a 1024-row batch: ~20 s "
                         "a step"}},
        "tokens": {"label": "embedding 100 + bi-GRU 2 × 128 over SynthBios token ids, batch 64, Adam lr 1e-3",
                   "dm": lambda views: SynthBios(n_train=64 * steps["tokens"], n_val=64, n_test=64, batch_size=64,
                                                 two_views=views, eda_synonyms=False, seed=0),
                   "encoder": "tokens", "encoder_kwargs": {"embed_dim": 100, "hidden_dim": 128}, "lr": 1e-3,
                   "steps": steps["tokens"]},
        "timm": {"label": ("timm resnet18 (pretrained=False) over cached UTKFace images 32 × 32" if
                           (utk / "labels.csv").is_file() else "timm resnet18 (pretrained=False) over ColoredDigits "
                           "32 × 32") + ", batch 64, Adam lr 1e-3",
                 "dm": image_dm, "encoder": "timm", "encoder_kwargs": {"model_name": "resnet18"}, "lr": 1e-3,
                 "steps": steps["timm"]},
    }


class _EpochTimer(Callback):
    def __init__(self) -> None:
        self.watch = T.Stopwatch()

    def on_train_epoch_start(self, trainer, module) -> None:
        self.watch.start()

    def on_train_epoch_end(self, trainer, module) -> None:
        self.watch.stop()


def _build(name: str, dm: Any, spec: dict[str, Any]) -> torch.nn.Module:
    import faircl.methods as M

    cls_name, kwargs, _ = METHODS[name]
    L.seed_everything(0, verbose=False)
    model = getattr(M, cls_name)(num_classes=dm.num_classes, num_groups=dm.num_groups, input_dim=dm.input_dim,
                                 encoder=spec["encoder"], encoder_kwargs=spec["encoder_kwargs"], lr=spec["lr"],
                                 leakage=False, **kwargs)
    if name == "FairSamplingSimCLR":  # the fair phase from epoch 0, on fixed cluster ids (no clustering pass)
        k = model.hparams.num_clusters
        n = len(dm.splits["train"])
        model.cluster_ids = torch.arange(n) % k
        model.cluster_freq.copy_(torch.bincount(model.cluster_ids, minlength=k).float() / n)
        model.cluster_epoch.fill_(0)
    return model


def _batches(dm: Any, steps: int) -> list[torch.Tensor]:
    """Row ids of the first ``steps`` train batches at epoch 0, in the datamodule's order."""
    loader = dm.train_dataloader()
    sampler = loader.sampler
    if hasattr(sampler, "set_epoch"):
        sampler.set_epoch(0)
    out = []
    for rows in loader.batch_sampler:
        out.append(torch.as_tensor(rows, dtype=torch.long))
        if len(out) == steps:
            break
    return out


def _stored_x(ds: Any) -> tuple[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]]:
    """The split's inputs as one tensor and the per-batch transform a plain loop applies to ``x[rows]``."""
    x = ds.x
    if isinstance(x, torch.Tensor):
        return x, lambda b: b
    if hasattr(x, "data") and isinstance(x.data, torch.Tensor):  # cached images (uint8) + the input transform
        return x.data, ds.transform
    return torch.stack([ds.transform(t) for t in x]), lambda b: b  # texts tokenised once


def _fetch(ds: Any, rows: torch.Tensor) -> dict[str, Any]:
    """A two-view batch drawn through the dataset (its view transform), as training draws it."""
    if hasattr(ds, "fetch"):
        return ds.fetch(rows.tolist())
    return default_collate([ds[i] for i in rows.tolist()])


def plain_ce(dm: Any, spec: dict[str, Any], batches: list[torch.Tensor]) -> Callable[[], tuple[float, float]]:
    """The bare PyTorch loop over the CE model."""
    ds = dm.splits["train"]
    x, prep = _stored_x(ds)
    y = ds.y

    def run() -> tuple[float, float]:
        ce = _build("CE", dm, spec)
        model = torch.nn.Sequential(ce.encoder, ce.classifier).train()
        opt = torch.optim.Adam(model.parameters(), lr=spec["lr"])
        watch = T.Stopwatch()
        watch.start()
        for rows in batches:
            loss = F.cross_entropy(model(prep(x[rows])), y[rows])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return watch.stop()

    return run


def plain_method(name: str, dm: Any, spec: dict[str, Any], batches: list[torch.Tensor]
                 ) -> Callable[[], tuple[float, float]]:
    """The method's own forward + losses + Adam in a bare loop (its cost without any training machinery)."""
    ds = dm.splits["train"]
    x, prep = _stored_x(ds)
    views = METHODS[name][2]

    def run() -> tuple[float, float]:
        model = _build(name, dm, spec).train()
        opt = torch.optim.Adam(model.param_groups(), lr=spec["lr"])
        watch = T.Stopwatch()
        watch.start()
        for rows in batches:
            batch = _fetch(ds, rows) if views else {"y": ds.y[rows], "a": ds.a[rows], "idx": rows,
                                                     "x": prep(x[rows])}
            loss = model.losses(batch, model(batch["x"]))["loss"]
            opt.zero_grad()
            loss.backward()
            opt.step()
        return watch.stop()

    return run


def faircl_fit(name: str, dm: Any, spec: dict[str, Any]) -> Callable[[], tuple[float, float]]:
    """One ``Trainer.fit`` epoch of the method on the datamodule; the train epoch is timed."""
    def run() -> tuple[float, float]:
        model = _build(name, dm, spec)
        timer = _EpochTimer()
        trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=1, limit_train_batches=spec["steps"],
                                                   limit_val_batches=0, num_sanity_val_steps=0,
                                                   callbacks=[timer]))
        with contextlib.redirect_stdout(io.StringIO()):
            trainer.fit(model, datamodule=dm)
        return timer.watch.result

    return run


def run_encoder(key: str, spec: dict[str, Any], methods: list[str], rounds: int) -> dict[str, Any]:
    """Time the plain loop, faircl CE and every method (faircl and plain) for one encoder."""
    dms = {}
    for views in (False, True):
        dm = spec["dm"](views)
        dm._reported = True
        with contextlib.redirect_stdout(io.StringIO()):
            dm.setup()
        dms[views] = dm
    batches = _batches(dms[False], spec["steps"])
    contenders: dict[str, Callable[[], Any]] = {"plain loop": plain_ce(dms[False], spec, batches)}
    for name in [m for m in methods if m not in spec.get("skip", {})]:
        views = METHODS[name][2]
        contenders[f"faircl {name}"] = faircl_fit(name, dms[views], spec)
        if name != "CE":
            contenders[f"plain {name}"] = plain_method(name, dms[views], spec,
                                                       _batches(dms[views], spec["steps"]))
    timings = T.measure(contenders, rounds=rounds, warmup=1)
    return {"key": key, "label": spec["label"], "steps": spec["steps"], "timings": timings,
            "skip": dict(spec.get("skip", {}))}


def _diff(a: T.Timing, b: T.Timing, clock: str = "cpu") -> float:
    """Median over rounds of ``a − b`` (same round)."""
    return statistics.median(x - y for x, y in zip(a.values(clock), b.values(clock)))


def excess_by_round(fm: T.Timing, ce: T.Timing, pm: T.Timing, plain: T.Timing, clock: str = "cpu") -> list[float]:
    """Per round: (faircl method − faircl CE) − (plain method − plain loop), the machinery's cost beyond the method's
    own, all four taken in the same round."""
    return [(a - c) - (b - p) for a, c, b, p in zip(fm.values(clock), ce.values(clock), pm.values(clock),
                                                     plain.values(clock))]


def excess_verdict(excess: list[float]) -> bool | str:
    """``True`` when the median excess is ≤ 0; ``"within noise"`` when it is positive but at least one round shows
    none (a sign test cannot tell it from 0); ``False`` when every round shows an excess (with 5 rounds, one-sided
    sign-test p = 1/32 under no excess)."""
    if statistics.median(excess) <= 0:
        return True
    return "within noise" if min(excess) <= 0 else False


def encoder_rows(res: dict[str, Any], methods: list[str]) -> list[dict[str, Any]]:
    """One row per contender: times, ratio to the plain loop, extra over CE, the method's own cost, target met."""
    t = res["timings"]
    plain, ce = t["plain loop"], t["faircl CE"]
    rows = [{"contender": "plain loop (CE model)", "timing": plain, "x_plain": 1.0}]
    ratio = T.paired_ratio(ce, plain, "cpu")
    rows.append({"contender": "CE", "timing": ce, "x_plain": ratio[0], "x_ce": 1.0,
                 "target": f"≤ {PLAIN_TARGET:g}× plain", "met": bool(ratio[0] <= PLAIN_TARGET)})
    for name in methods:
        if name == "CE" or f"faircl {name}" not in t:
            continue
        fm, pm = t[f"faircl {name}"], t[f"plain {name}"]
        excess = excess_by_round(fm, ce, pm, plain)
        rows.append({"contender": name, "timing": fm, "x_plain": T.paired_ratio(fm, plain, "cpu")[0],
                     "x_ce": T.paired_ratio(fm, ce, "cpu")[0], "extra": _diff(fm, ce), "own": _diff(pm, plain),
                     "excess": excess, "target": "extra ≤ own cost", "met": excess_verdict(excess)})
        rows.append({"contender": f"plain loop: {name}", "timing": pm,
                     "x_plain": T.paired_ratio(pm, plain, "cpu")[0]})
    return rows


def to_markdown(results: list[dict[str, Any]], methods: list[str], args: argparse.Namespace,
                start: dict[str, Any], end: dict[str, Any], command: str) -> str:
    lines = ["# Training overhead: faircl next to a plain PyTorch loop\n",
             f"Regenerate: `{command}`. {T.machine_line(start, end)}\n",
             "Times are per train epoch (process CPU time, median of "
             f"{args.rounds} interleaved rounds after one warm-up round, [min–max]; wall median beside). A method's "
             "name is its faircl run (`Trainer.fit`); *plain loop* rows are bare PyTorch loops. × plain (× CE) = "
             "median over rounds of the time / the plain loop's (faircl CE's) time in the same round. *Extra over CE* = faircl "
             "method − faircl CE; *own cost* = plain method − plain loop (the method's heads, loss, second view and "
             "extra parameters, without any training machinery). Load = highest 1-minute load average / most "
             "runnable tasks seen around the figure's calls.\n"]
    every = []
    for res in results:
        rows = encoder_rows(res, methods)
        every += [r["timing"] for r in rows]
        lines += [f"## {res['label']}, {res['steps']} steps an epoch\n",
                  "| contender | CPU s / epoch [min–max] | wall s (median) | × plain | × CE | extra over CE (s) | own cost "
                  "(s) | excess (s) [min–max] | target | met | load / runnable |", "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|"]
        for r in rows:
            tm = r["timing"]
            extra = f"{r['extra']:+.3f}" if "extra" in r else ""
            own = f"{r['own']:+.3f}" if "own" in r else ""
            exc = ""
            if "excess" in r:
                exc = f"{statistics.median(r['excess']):+.3f} [{min(r['excess']):+.3f}, {max(r['excess']):+.3f}]"
            met = "" if "met" not in r else (r["met"] if isinstance(r["met"], str) else "yes" if r["met"] else "**no**")
            x_ce = f"{r['x_ce']:.2f}" if "x_ce" in r else ""
            lines.append(f"| {r['contender']} | {T.fmt_s(tm, 'cpu')} | {tm.median('wall'):.3f} | "
                         f"{r['x_plain']:.2f} | {x_ce} | {extra} | {own} | {exc} | {r.get('target', '')} | {met} | "
                         f"{tm.load_cell()} |")
        for name, why in res.get("skip", {}).items():
            lines.append(f"{name} is not timed on this encoder: {why}.")
        lines.append("")
    lines += ["*Excess* = (faircl method − faircl CE) − (plain method − plain loop), per round (all four timed in the "
              "same round): what faircl's machinery costs a method beyond what it costs CE; median [min–max] over "
              "the rounds. The target is met (*yes*) when the median excess is ≤ 0; *within noise* when it is "
              "positive but some round shows none (a sign test cannot tell it from 0); **no** when every round shows "
              "an excess (with 5 rounds the one-sided sign-test p is 1/32 when there is none). *Extra over CE* and "
              "*own cost* are medians of their own per-round differences.\n", T.busy_note(every), ""]
    lines += ["These figures are the CPU's; the GPU's (mixed precision, losses, metrics) are in "
              "`benchmarks/performance/results/gpu.md`.\n"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--encoders", default="mlp,tokens,timm")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--quick", action="store_true", help="1 round of 2-3 steps (a smoke run)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "performance" / "results" / "overhead.md"))
    parser.add_argument("--json", default=None, help="also write the raw timings here")
    parser.add_argument("--render", default=None, help="only rebuild the Markdown from raw timings saved by --json")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    logging.getLogger("lightning.fabric").setLevel(logging.ERROR)
    torch.set_num_threads(args.threads)
    if args.quick:
        args.rounds = 1
    methods = [m for m in args.methods.split(",") if m]
    if "CE" not in methods:
        methods.insert(0, "CE")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        parser.error(f"unknown method(s) {unknown}; choose from {list(METHODS)}")
    specs = encoders(args.quick)
    if args.render:
        raw = json.loads(Path(args.render).read_text())
        results = []
        for r in raw["results"]:
            timings = {n: T.Timing(n, wall=d["wall"], cpu=d["cpu"], load=[d["load_max"]], runnable=[d["runnable_max"]],
                                   cores=d["cores"], threads=d["threads"]) for n, d in r["timings"].items()}
            results.append({"key": r["encoder"], "label": r["label"], "steps": r["steps"], "timings": timings,
                            "skip": dict(specs[r["encoder"]].get("skip", {}))})
        args.rounds = len(next(iter(results[0]["timings"].values())).wall)
        text = to_markdown(results, methods, args, raw["start"], raw["end"], "python benchmarks/performance/overhead.py")
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
        return results
    keys = [k for k in args.encoders.split(",") if k]
    start = T.machine()
    results = []
    for key in keys:
        res = run_encoder(key, specs[key], methods, args.rounds)
        results.append(res)
        for r in encoder_rows(res, methods):
            print(f"{key:6s} {r['contender']:28s} {T.fmt_s(r['timing'], 'cpu')} s  {r['x_plain']:.2f}× plain  "
                  f"{r['timing'].load_cell()}", flush=True)
    end = T.machine()
    given, shown = list(argv if argv is not None else sys.argv[1:]), []
    while given:  # the command as run, less the machine paths (--out, --json)
        a = given.pop(0)
        if a in ("--out", "--json"):
            given = given[1:]
        elif not a.startswith(("--out=", "--json=")):
            shown.append(a)
    command = "python benchmarks/performance/overhead.py" + "".join(f" {a}" for a in shown)
    text = to_markdown(results, methods, args, start, end, command)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    if args.json:
        raw = [{"encoder": r["key"], "label": r["label"], "steps": r["steps"],
                "timings": {n: {**t.as_dict(), "wall": t.wall, "cpu": t.cpu} for n, t in r["timings"].items()}}
               for r in results]
        Path(args.json).write_text(json.dumps({"start": start, "end": end, "results": raw}, indent=1))
    return results


if __name__ == "__main__":
    main()
