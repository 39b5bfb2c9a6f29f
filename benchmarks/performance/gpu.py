"""The GPU path: mixed-precision training of the methods, loss and metric speed on the GPU, loss peak memory vs B.

1. ``bf16-mixed`` and ``16-mixed`` training of ConFair, SimCLR and PARADE (and ConFair with the gradient cache under
   ``16-mixed``) on a synthetic ``BiasedFeatures`` task: the train losses stay finite and the test metrics
   (accuracy, TPR-gap RMS) match the ``32-true`` run of the same seed within a tolerance.
2. The loss ratios of ``benchmarks/performance/losses.py`` (forward+backward time / log-sum-exp floor) and the metric ratios of
   ``benchmarks/performance/metrics.py`` (``GroupFairness`` vs a bincount floor, ``GroupRecallAtK`` vs a chunked matmul floor),
   on CUDA tensors, timed with device synchronisation, interleaved (``metrics.interleaved`` / ``metrics.summarise``).
3. Peak GPU memory (``torch.cuda.max_memory_allocated``) of one forward+backward of SupCon vs the batch size B:
   the dense ``[B, B]`` path, the block-wise path (``block_size``) and the log-sum-exp floor.
4. Every metric of ``faircl.metrics`` and every gap of ``faircl.metrics.gaps`` fed CUDA tensors gives what it gives
   on the CPU (a group missing and rows of unknown attribute included).
5. The console command: ``faircl fit`` then ``faircl test --ckpt_path best`` of shipped configs, each a new process,
   on the GPU and on the CPU; exit codes, times, the checkpoint and rows the test's ``report.json`` records.

Without CUDA it prints ``skipped: no CUDA`` and exits with 0. Sections 1-4 need no jsonargparse (5 does) and no nlpaug.

    python benchmarks/performance/gpu.py [--quick] [--write benchmarks/performance/results/gpu.md]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sibling benchmark scripts

PRECISIONS = ("32-true", "bf16-mixed", "16-mixed")


# ---------------------------------------------------------------------------------------------- 1. mixed precision
def train_and_test(method: str, precision: str, quick: bool, **extra: Any) -> dict[str, float]:
    """Fit ``method`` for a few epochs on BiasedFeatures at ``precision``; the test report and the train losses."""
    import lightning as L

    from faircl.data import BiasedFeatures
    from faircl.methods import METHODS
    from faircl.testing import quiet_trainer_kwargs

    L.seed_everything(0, verbose=False)
    two_views = method in ("SimCLR", "FairSamplingSimCLR", "TwoStageCL", "OneStageCL")
    n = 2048 if quick else 8192
    dm = BiasedFeatures(n_train=n, n_val=512, n_test=2048, dim=32, batch_size=256, seed=0, two_views=two_views)
    model = METHODS[method](num_classes=2, num_groups=2, input_dim=dm.input_dim, encoder_kwargs={"hidden_dim": 128},
                            leakage=False, **extra)
    losses: list[float] = []

    class Record(L.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            loss = outputs["loss"] if isinstance(outputs, dict) else outputs
            if loss is not None:
                losses.append(float(loss))

    kw = quiet_trainer_kwargs(accelerator="gpu", max_epochs=2 if quick else 4, precision=precision,
                              limit_val_batches=0, callbacks=[Record()])
    trainer = L.Trainer(**kw)
    start = time.perf_counter()
    trainer.fit(model, datamodule=dm)
    fit_s = time.perf_counter() - start
    trainer.test(model, datamodule=dm, verbose=False)
    report = {k: float(v) for k, v in model.test_report.items() if isinstance(v, float)}
    report["finite_losses"] = float(bool(losses) and all(math.isfinite(v) for v in losses))
    report["last_loss"] = losses[-1] if losses else float("nan")
    report["fit_s"] = fit_s
    rows = getattr(model, "test_rows", {}).get("test")  # the per-row predictions `faircl compare` reads
    report["rows_accuracy"] = float((rows["pred"] == rows["y"]).mean()) if rows else float("nan")
    report["rows"] = float(len(rows["pred"])) if rows else 0.0
    return report


def bench_precision(quick: bool, tol: float) -> list[dict[str, Any]]:
    configs = [("ConFair", {}), ("SimCLR", {}), ("PARADE", {}), ("ConFair", {"grad_cache_chunk": 64}),
               ("SimCLR", {"row_predictions": "knn"}), ("PARADE", {"row_predictions": "probe"})]
    rows = []
    for method, extra in configs:
        precisions = PRECISIONS if not extra else ("32-true", "16-mixed")
        ref = None
        for precision in precisions:
            rep = train_and_test(method, precision, quick, **extra)
            if ref is None:
                ref = rep
            d_acc = abs(rep.get("accuracy", float("nan")) - ref.get("accuracy", float("nan")))
            d_gap = abs(rep.get("tpr_gap_rms", float("nan")) - ref.get("tpr_gap_rms", float("nan")))
            ok = bool(rep["finite_losses"]) and d_acc <= tol and d_gap <= tol
            name = method + "".join(f" ({k}={v})" for k, v in extra.items())
            rows.append({"method": name, "precision": precision, "accuracy": rep.get("accuracy"),
                         "tpr_gap_rms": rep.get("tpr_gap_rms"), "last_loss": rep["last_loss"], "fit_s": rep["fit_s"],
                         "rows_accuracy": rep["rows_accuracy"], "rows": rep["rows"],
                         "d_acc": d_acc, "d_gap": d_gap, "ok": ok})
            print(f"{name:36s} {precision:10s} acc={rep.get('accuracy', float('nan')):.4f} "
                  f"gap={rep.get('tpr_gap_rms', float('nan')):.4f} loss={rep['last_loss']:.4f} "
                  f"fit={rep['fit_s']:.1f}s rows={rep['rows']:.0f} rows_acc={rep['rows_accuracy']:.4f} "
                  f"Δacc={d_acc:.4f} Δgap={d_gap:.4f} {'ok' if ok else 'MISMATCH'}",
                  flush=True)
    return rows


# ---------------------------------------------------------------------------------------------- 2. speed ratios
def synced(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        out = fn()
        torch.cuda.synchronize()
        return out
    return run


def loss_cases(batch: int, dim: int, device: torch.device) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    """The cases of ``benchmarks/performance/losses.py`` (same names, labels and τ) on ``device``."""
    from losses import TAU, make_cases

    # make_cases draws its ids on the CPU; rebuild the same closures with the ids moved to the device.
    from faircl.losses import cs_infonce_loss, fcl_loss, nt_xent_loss, supcon_loss
    from faircl.mining import fair_negative_weights

    names = [n for n in make_cases(8, dim) if not n.startswith("PML")]
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 10, (batch,), generator=g).to(device)
    a = torch.randint(0, 2, (batch,), generator=g).to(device)
    half = batch // 2
    clusters = torch.randint(0, 4, (half,), generator=g).to(device)
    fns = [
        lambda z: torch.logsumexp(z @ z.T / TAU, dim=1).sum(),
        lambda z: torch.logsumexp((z / TAU) @ z.T, dim=1).sum(),
        lambda z: supcon_loss(z, y, TAU),
        lambda z: cs_infonce_loss(z[:half], z[half:], y[:half], a[:half], TAU),
        lambda z: fcl_loss(z, y, a, TAU),
        lambda z: fcl_loss(z, y, a, TAU, conditioning="class"),
        lambda z: nt_xent_loss(z[:half], z[half:], TAU),
        lambda z: nt_xent_loss(z[:half], z[half:], TAU,
                               negative_weights=fair_negative_weights(z[:half].detach(), clusters, 4)),
    ]
    return dict(zip(names, fns))


def bench_losses(sizes: list[int], dim: int, repeats: int) -> list[tuple[int, str, float, float, float, float]]:
    from metrics import interleaved, summarise

    dev = torch.device("cuda")
    rows = []
    for batch in sizes:
        z0 = torch.nn.functional.normalize(torch.randn(batch, dim, device=dev), dim=1)
        cases = loss_cases(batch, dim, dev)

        def step(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[], None]:
            return synced(lambda: fn(z0.clone().requires_grad_(True)).backward())

        times = interleaved({name: step(fn) for name, fn in cases.items()}, repeats, sync=torch.cuda.synchronize)
        for name, med, ratio, lo, hi in summarise(times, next(iter(cases))):
            rows.append((batch, name, med * 1e3, ratio, lo, hi))
            print(f"B={batch:6d} {name:34s} {med * 1e3:8.2f} ms  {ratio:5.2f}× floor [{lo:.2f}, {hi:.2f}]", flush=True)
    return rows


def bench_metrics(n: int, n_recall: int, repeats: int) -> list[tuple[str, float, float, float, float]]:
    from metrics import interleaved, summarise

    from faircl.metrics import GroupFairness, GroupRecallAtK

    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(0)
    groups = torch.randint(4, (n,), generator=gen).to(dev)
    target = torch.randint(2, (n,), generator=gen).to(dev)
    preds = torch.randint(2, (n,), generator=gen).to(dev)
    metric = GroupFairness(2, 4).to(dev)

    def floor():
        return torch.bincount((groups * 2 + target) * 2 + preds, minlength=16)

    def ours():
        metric.reset()
        metric.update(preds, target, groups)
        return metric.compute()

    rows = summarise(interleaved({"bincount floor": synced(floor), "GroupFairness update+compute": synced(ours)},
                                 repeats), "bincount floor")
    x = torch.nn.functional.normalize(torch.randn(n_recall, 128, generator=gen), dim=1).to(dev)
    labels = torch.randint(100, (n_recall,), generator=gen).to(dev)
    grp = torch.randint(4, (n_recall,), generator=gen).to(dev)
    chunk = max(1, (1 << 24) // n_recall)

    def rfloor():
        xt = x.t()
        out = torch.empty(n_recall, dtype=torch.long, device=dev)
        for s in range(0, n_recall, chunk):
            out[s:s + chunk] = (x[s:s + chunk] @ xt).argmax(1)
        return out

    def recall():
        m = GroupRecallAtK(1, 4, chunk_size=chunk).to(dev)
        m.update(x, labels, grp)
        return m.compute()

    rows += summarise(interleaved({"chunked matmul + argmax floor": synced(rfloor),
                                   "GroupRecallAtK (euclidean)": synced(recall)}, repeats),
                      "chunked matmul + argmax floor")
    for name, med, ratio, lo, hi in rows:
        print(f"{name:36s} {med * 1e3:8.2f} ms  {ratio:5.2f}× floor [{lo:.2f}, {hi:.2f}]", flush=True)
    return rows


# ---------------------------------------------------------------------------------------------- 3. peak memory
def _median_time(fn: Callable[[], Any], repeats: int = 5) -> float:
    """Median wall time of ``fn`` over ``repeats`` synchronised calls (after the call that measured the peak)."""
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def peak_memory(sizes: list[int], dim: int, block: int) -> list[tuple[int, str, float, float]]:
    from faircl.losses import streaming, supcon_loss

    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(0)

    def dense(z, y):
        saved = streaming.DENSE_MAX_ROWS
        streaming.DENSE_MAX_ROWS = 1 << 62  # force the dense [B, B] path
        try:
            return supcon_loss(z, y, 0.1)
        finally:
            streaming.DENSE_MAX_ROWS = saved

    cases = {
        "floor logsumexp(z zᵀ/τ)": lambda z, y: torch.logsumexp(z @ z.T / 0.1, dim=1).sum(),
        "supcon_loss dense [B, B]": dense,
        "supcon_loss default (streamed above 1,024 rows)": lambda z, y: supcon_loss(z, y, 0.1),
        f"supcon_loss block-wise (block_size={block})": lambda z, y: supcon_loss(z, y, 0.1, block_size=block),
    }
    rows = []
    for batch in sizes:
        z0 = torch.nn.functional.normalize(torch.randn(batch, dim, generator=g), dim=1).to(dev)
        y = torch.randint(0, 10, (batch,), generator=g).to(dev)
        for name, fn in cases.items():
            z = z0.clone().requires_grad_(True)
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            try:
                fn(z, y).backward()
                torch.cuda.synchronize()
                mib = (torch.cuda.max_memory_allocated() - base) / 2**20
                ms = 1e3 * _median_time(lambda: fn(z0.clone().requires_grad_(True), y).backward())
            except torch.cuda.OutOfMemoryError:
                mib = ms = float("inf")
            del z
            torch.cuda.empty_cache()
            rows.append((batch, name, mib, ms))
            print(f"B={batch:6d} {name:40s} peak {mib:10.1f} MiB  {ms:9.2f} ms", flush=True)
    return rows


# ---------------------------------------------------------------------------------------------- 4. CUDA = CPU
def metric_cases() -> dict[str, tuple[Callable[[], Any], tuple[torch.Tensor, ...]]]:
    """Each metric (a factory) with its update's inputs: 3 of 4 groups present, unknown attribute rows, 3 classes."""
    from faircl.metrics import (CCEDGap, ClusterBalance, GroupFairness, GroupNMI, GroupRecallAtK, GroupUniformityKL,
                                LinearLeakage)

    g = torch.Generator().manual_seed(0)
    n = 600
    z = torch.nn.functional.normalize(torch.randn(n, 16, generator=g), dim=1)
    labels = torch.randint(3, (n,), generator=g)
    z = z + 0.5 * torch.nn.functional.one_hot(labels, 16).float()  # a class structure for recall and NMI
    groups = torch.randint(3, (n,), generator=g)  # group 3 of 4 never present
    groups[::17] = -1  # unknown attribute
    preds = torch.where(torch.rand(n, generator=g) < 0.7, labels, torch.randint(3, (n,), generator=g))
    attr, neutral = torch.randn(40, 2, 16, generator=g), torch.randn(40, 16, generator=g)
    return {
        "GroupFairness": (lambda: GroupFairness(3, 4), (preds, labels, groups)),
        "GroupRecallAtK (k=1)": (lambda: GroupRecallAtK(1, 4), (z, labels, groups)),
        "GroupRecallAtK (k=5, cosine)": (lambda: GroupRecallAtK(5, 4, distance="cosine"), (z, labels, groups)),
        "GroupNMI": (lambda: GroupNMI(3, 4), (z, labels, groups)),
        "GroupUniformityKL": (lambda: GroupUniformityKL(4), (z, groups)),
        "ClusterBalance": (lambda: ClusterBalance(4), (z,)),
        "CCEDGap": (lambda: CCEDGap(), (attr, neutral)),
        "LinearLeakage (probe fitted on the first half)": (lambda: LinearLeakage(), (z[300:], groups[300:])),
    }


def _flat(out: Any) -> dict[str, float]:
    out = out if isinstance(out, dict) else {"value": out}
    flat = {}
    for key, value in out.items():
        if isinstance(value, torch.Tensor):
            for i, v in enumerate(value.detach().double().cpu().flatten().tolist()):
                flat[f"{key}[{i}]" if value.numel() > 1 else key] = v
    return flat


def _same(a: float, b: float, tol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= tol * max(1.0, abs(a))


def cuda_equals_cpu(tol: float = 1e-5, device: str = "cuda") -> list[tuple[str, int, float, bool, str]]:
    """(name, values compared, largest |CUDA − CPU|, all equal within ``tol``, error) per metric and gap helper."""
    from faircl.metrics import gaps as G

    dev = torch.device(device)
    rows = []

    def compare(name: str, run: Callable[[torch.device], Any]) -> None:
        try:
            cpu, gpu_ = _flat(run(torch.device("cpu"))), _flat(run(dev))
        except Exception as exc:  # a device mix-up raises: report it as a failure, go on with the rest
            rows.append((name, 0, float("nan"), False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"))
            print(f"{name:36s} FAILED {rows[-1][-1]}", flush=True)
            return
        keys = sorted(set(cpu) | set(gpu_))
        ok = set(cpu) == set(gpu_) and all(_same(cpu[k], gpu_[k], tol) for k in keys)
        diffs = [abs(cpu[k] - gpu_[k]) for k in keys if k in cpu and k in gpu_ and math.isfinite(cpu[k] - gpu_[k])]
        worst = max(diffs, default=0.0)
        rows.append((name, len(keys), worst, ok, ""))
        print(f"{name:36s} {len(keys):3d} values  max |Δ| {worst:.2e}  {'ok' if ok else 'MISMATCH'}", flush=True)

    for name, (make, inputs) in metric_cases().items():
        def run(d: torch.device, make=make, inputs=inputs) -> Any:
            metric = make().to(d)
            if hasattr(metric, "fit"):  # a probe metric: fitted on the other half of the rows
                metric.fit(inputs[0][:300].to(d), inputs[1][:300].to(d))
            metric.update(*(t.to(d) for t in inputs))
            return metric.compute()
        compare(name, run)
    values, sizes = torch.tensor([0.9, float("nan"), 0.6, 0.5, 0.7]), torch.tensor([10, 0, 30, 5, 20])
    compare("gaps.all_gaps (a group empty)",
            lambda d: G.all_gaps(values.to(d), sizes.to(d), minority=[3]))
    compare("gaps.top_vs_bottom_half (by=id)",
            lambda d: G.top_vs_bottom_half(values.to(d), sizes.to(d), by="id"))
    compare("gaps.top_vs_bottom_half (by=order)",
            lambda d: G.top_vs_bottom_half(values.to(d), sizes.to(d), by=[4, 3, 2, 1, 0]))
    return rows


# ---------------------------------------------------------------------------------------------- 5. the console command
CLI_CONFIGS = ("configs/confair/biased_features.yaml", "configs/ce/biased_features.yaml")


def cli_fit_test(config: str, accelerator: str, root: Path, epochs: int = 2) -> dict[str, Any]:
    """``faircl fit`` then ``faircl test --ckpt_path best`` of ``config`` under ``root``, each a new process; what the
    test's ``report.json`` and ``config.yaml`` record, and the checks that failed."""
    common = ["--config", config, "--trainer.accelerator", accelerator, "--trainer.devices", "1",
              "--trainer.default_root_dir", str(root)]
    r: dict[str, Any] = dict(config=config, accelerator=accelerator, test_rc=None, test_s=math.nan, checkpoint="",
                             rows=0, size=None, accuracy=math.nan, tpr_gap_rms=math.nan, checks=[])
    for step, extra in (("fit", ["--trainer.max_epochs", str(epochs)]), ("test", ["--ckpt_path", "best"])):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "faircl.cli", step, *common, *extra],  # the repository's faircl
                              cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True)
        r[f"{step}_s"], r[f"{step}_rc"] = time.perf_counter() - start, proc.returncode
        if proc.returncode:
            print("\n".join(proc.stderr.splitlines()[-8:]), flush=True)
            r["checks"].append(f"{step} exit {proc.returncode}: " + (proc.stderr.splitlines() or [""])[-1][:120])
            return r
    reports = sorted(root.glob("**/report.json"))
    if len(reports) != 1:
        return {**r, "checks": [f"{len(reports)} report.json files"]}
    data = json.loads(reports[0].read_text())
    meta, metrics = data.get("meta", {}), data.get("metrics", {})
    ckpt, fit = Path(str(meta.get("checkpoint"))), meta.get("fit") if isinstance(meta.get("fit"), dict) else {}
    rows = (meta.get("rows") or {}).get("test") or {}
    r.update(checkpoint=ckpt.name, rows=int(rows.get("rows", 0)), size=rows.get("split_size"),
             **{k: math.nan if metrics.get(k) is None else float(metrics[k]) for k in ("accuracy", "tpr_gap_rms")})
    test_cfg = yaml.safe_load((reports[0].parent / "config.yaml").read_text()) or {}
    checks = {f"checkpoint {str(ckpt)!r} is not a best checkpoint of this fit":
              ckpt.is_file() and ckpt.name.startswith("best") and root.resolve() in ckpt.resolve().parents,
              "the test does not say which checkpoint it loaded": f"faircl: test with {ckpt}" in proc.stderr,
              "the checkpoint's fit record is not this fit's": fit.get("source") == "faircl fit"
              and (fit.get("config") or {}).get("trainer.accelerator") == accelerator,
              "the test ran on another accelerator": (test_cfg.get("trainer") or {}).get("accelerator") == accelerator,
              f"test rows {r['rows']} of {r['size']}": r["rows"] > 0 and r["rows"] == r["size"]}
    r["checks"] += [what for what, good in checks.items() if not good]
    return r


def bench_cli(tol: float, accelerators: tuple[str, ...] = ("gpu", "cpu")) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="faircl-cli-") as tmp:
        for config in CLI_CONFIGS:
            runs = [cli_fit_test(config, acc, Path(tempfile.mkdtemp(dir=tmp))) for acc in accelerators]
            for r in runs:  # |Δ| against the last accelerator's run
                r["d_acc"], r["d_gap"] = (abs(r[k] - runs[-1][k]) for k in ("accuracy", "tpr_gap_rms"))
                r["ok"] = not r["checks"] and r["d_acc"] <= tol and r["d_gap"] <= tol  # NaN compares False
                r["checks"] += [] if r["ok"] or r["checks"] else [f"|Δ| above {tol}"]
                print(f"{config:40s} {r['accelerator']:4s} rc={r['fit_rc']},{r['test_rc']} fit={r['fit_s']:.1f}s "
                      f"test={r['test_s']:.1f}s {r['checkpoint']} rows={r['rows']} acc={r['accuracy']:.4f} "
                      f"gap={r['tpr_gap_rms']:.4f} Δacc={r['d_acc']:.4f} Δgap={r['d_gap']:.4f} "
                      f"{'ok' if r['ok'] else 'NO: ' + '; '.join(r['checks'])}", flush=True)
            rows += runs
    return rows


# ---------------------------------------------------------------------------------------------- report
def to_markdown(prec, loss_rows, metric_rows, mem_rows, tol: float, same_rows=(), cli_rows=()) -> str:
    props = torch.cuda.get_device_properties(0)
    out = [f"# The GPU path\n\n{props.name}, {props.total_memory / 2**30:.0f} GiB; torch {torch.__version__}. "
           "Produced by `python benchmarks/performance/gpu.py`.\n",
           "## Mixed-precision training\n",
           f"BiasedFeatures (d = 32), MLP encoder (128), batch 256, seed 0; test metrics vs the `32-true` run "
           f"(tolerance {tol}).\n",
           "| method | precision | accuracy | TPR-gap RMS | last train loss | fit (s) | test rows: n, accuracy | Δacc "
           "| Δgap | ok |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in prec:
        out.append(f"| {r['method']} | {r['precision']} | {r['accuracy']:.4f} | {r['tpr_gap_rms']:.4f} | "
                   f"{r['last_loss']:.4f} | {r['fit_s']:.1f} | {r['rows']:.0f}, {r['rows_accuracy']:.4f} | "
                   f"{r['d_acc']:.4f} | {r['d_gap']:.4f} | {'yes' if r['ok'] else 'NO'} |")
    out.append("\nTest rows: the per-row predictions that `faircl compare` and `faircl bench` read (`test_rows`), "
               "from the logits, or from a 1-NN (`knn`) or a logistic probe (`probe`) fitted on the training "
               "embeddings.\n")
    sizes = sorted({r[0] for r in loss_rows})
    out += ["\n## Losses on the GPU (forward+backward, ratio to the log-sum-exp floor)\n",
            "| loss | " + " | ".join(f"B={b}" for b in sizes) + " |", "|---|" + "---|" * len(sizes)]
    table = {(b, n): (ms, ratio) for b, n, ms, ratio, _, _ in loss_rows}
    for name in dict.fromkeys(r[1] for r in loss_rows):
        out.append(f"| {name} | " + " | ".join(f"{table[(b, name)][0]:.2f} ms ({table[(b, name)][1]:.2f}×)"
                                               for b in sizes) + " |")
    out += ["\nd = 128, τ = 0.1, float32; median over interleaved repeats of the time / the floor's time in the "
            "same repeat (device synchronised).\n",
            "## Metrics on the GPU\n", "| metric | median time | ratio to floor (IQR) |", "|---|---|---|"]
    for name, med, ratio, lo, hi in metric_rows:
        out.append(f"| {name} | {med * 1e3:.2f} ms | {ratio:.2f}× [{lo:.2f}, {hi:.2f}] |")
    msizes = sorted({r[0] for r in mem_rows})
    out += ["\n## Peak GPU memory and time of one SupCon forward+backward\n",
            "| path | " + " | ".join(f"B={b}" for b in msizes) + " |", "|---|" + "---|" * len(msizes)]
    mem = {(b, n): (m, ms) for b, n, m, ms in mem_rows}
    for name in dict.fromkeys(r[1] for r in mem_rows):
        out.append(f"| {name} | " + " | ".join("OOM" if math.isinf(mem[(b, name)][0])
                                               else f"{mem[(b, name)][0]:.0f} MiB, {mem[(b, name)][1]:.1f} ms"
                                               for b in msizes) + " |")
    out.append("\n`torch.cuda.max_memory_allocated` above the memory held before the call (embeddings d = 128, "
               "10 classes, τ = 0.1, float32); time = median of 5 synchronised calls after that one.\n")
    if same_rows:
        out += ["## Metrics on CUDA against the CPU\n",
                "Each metric updated once with the same inputs on both devices (3 of 4 groups present, every 17th row "
                "of unknown attribute); every scalar it returns compared (relative tolerance 1e-5, NaN = NaN).\n",
                "| metric | values | largest abs. difference | equal |", "|---|---|---|---|"]
        for name, count, worst, ok, err in same_rows:
            out.append(f"| {name} | {count} | {worst:.1e} | {'yes' if ok else 'NO: ' + err if err else 'NO'} |")
    if cli_rows:
        out += ["\n## The console command on the GPU\n", "`python -m faircl.cli fit --config C --trainer.accelerator "
                "A --trainer.devices 1 --trainer.max_epochs 2 --trainer.default_root_dir D` then `... test ... "
                f"--ckpt_path best`, each a new process; figures: the test's `report.json`; Δ vs CPU (tol. {tol}).\n",
                "| config | accelerator | exit codes (fit, test) | fit (s) | test (s) | checkpoint tested | test rows "
                "| accuracy | TPR-gap RMS | Δacc | Δgap | ok |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in cli_rows:
            out.append(f"| {r['config']} | {r['accelerator']} | {r['fit_rc']}, {r['test_rc']} | {r['fit_s']:.1f} | "
                       f"{r['test_s']:.1f} | {r['checkpoint'] or '-'} | {r['rows']} of {r['size']} | "
                       f"{r['accuracy']:.4f} | {r['tpr_gap_rms']:.4f} | {r['d_acc']:.4f} | {r['d_gap']:.4f} | "
                       f"{'yes' if r['ok'] else 'NO: ' + '; '.join(r['checks'])} |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller data, sizes and repeats")
    parser.add_argument("--tol", type=float, default=0.03, help="tolerance on |Δaccuracy| and |ΔTPR-gap| vs fp32")
    parser.add_argument("--write", default=None, help="write the markdown report to this file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("skipped: no CUDA")
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.backends.cuda.matmul.allow_tf32 = False
    same_rows = cuda_equals_cpu()
    prec = bench_precision(args.quick, args.tol)
    loss_rows = bench_losses([1024, 4096] if args.quick else [1024, 4096, 16384], 128, 5 if args.quick else 15)
    metric_rows = bench_metrics(200_000 if args.quick else 1_000_000, 5000 if args.quick else 20_000,
                                5 if args.quick else 15)
    mem_rows = peak_memory([1024, 4096] if args.quick else [1024, 2048, 4096, 8192, 16384, 32768, 65536], 128, 1024)
    cli_rows = bench_cli(args.tol)
    report = to_markdown(prec, loss_rows, metric_rows, mem_rows, args.tol, same_rows, cli_rows)
    if args.write:
        Path(args.write).parent.mkdir(parents=True, exist_ok=True)
        Path(args.write).write_text(report)
        print(f"wrote {args.write}")
    return 0 if all(r["ok"] for r in prec + cli_rows) and all(r[3] for r in same_rows) else 1


if __name__ == "__main__":
    sys.exit(main())
