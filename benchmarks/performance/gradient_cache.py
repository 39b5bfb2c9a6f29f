"""Peak memory of a contrastive step: 64 examples plainly, 1024 examples with GradientCache, 1024 plainly.

Each configuration runs in a fresh subprocess (so allocator caches do not carry over) and reports the process's
peak resident memory (``ru_maxrss``) and its growth over the resident memory right before the step (model,
optimiser state and input batch already allocated). The loss is two-view CS-InfoNCE + SupCon on an MLP encoder
with enough activation memory per example for the difference to show.

    python benchmarks/performance/gradient_cache.py [--chunk 64] [--write benchmarks/performance/results/losses.md]  # adds a section
    python benchmarks/performance/gradient_cache.py --method [--write ...]  # a ConFair training step with grad_cache_chunk
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing.py
import _timing as T

IN_DIM, WIDTH, DEPTH, OUT_DIM = 256, 1024, 8, 128


def current_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("VmRSS not found in /proc/self/status")


def child(batch: int, chunk: int | None) -> None:
    import torch
    from torch import nn

    from faircl.losses import cs_infonce_loss, supcon_loss
    from faircl.utils import GradientCache

    torch.set_num_threads(1)  # stable timings on a shared machine (OpenMP barriers suffer under oversubscription)
    torch.manual_seed(0)
    layers: list[nn.Module] = [nn.Linear(IN_DIM, WIDTH), nn.GELU()]
    for _ in range(DEPTH - 1):
        layers += [nn.Linear(WIDTH, WIDTH), nn.GELU()]
    layers.append(nn.Linear(WIDTH, OUT_DIM))
    enc = nn.Sequential(*layers)
    for p in enc.parameters():  # allocate the gradients up front, as after the first step
        p.grad = torch.zeros_like(p)
    x1 = torch.randn(batch, IN_DIM)
    x2 = x1 + 0.1 * torch.randn(batch, IN_DIM)
    y = torch.randint(0, 4, (batch,))
    a = torch.randint(0, 2, (batch,))

    def loss_fn(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
        return supcon_loss(torch.cat([z1, z2]), torch.cat([y, y])) + cs_infonce_loss(z1, z2, y, a)

    before = current_rss_mb()
    watch = T.Stopwatch()
    watch.start()
    if chunk is None:
        loss = loss_fn(enc(x1), enc(x2))
        loss.backward()
    else:
        GradientCache(enc, loss_fn, chunk_size=chunk)(x1, x2)
    seconds = watch.stop()[0]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"before_mb": before, "peak_mb": peak, "seconds": seconds, "load": T.load_sample()}))


def method_child(batch: int, chunk: int | None) -> None:
    """One ConFair training step (Lightning, CPU) of ``batch`` rows, plain or with ``grad_cache_chunk=chunk``."""
    import lightning as L
    import torch
    from torch.utils.data import DataLoader

    from faircl.methods import ConFair
    from faircl.testing import quiet_trainer_kwargs

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = ConFair(num_classes=4, num_groups=2, input_dim=IN_DIM, temperature=0.1, leakage=False,
                    encoder_kwargs={"hidden_dim": WIDTH, "num_layers": DEPTH}, grad_cache_chunk=chunk)
    g = torch.Generator().manual_seed(1)
    data = {"x": torch.randn(batch, IN_DIM, generator=g), "y": torch.randint(0, 4, (batch,), generator=g),
            "a": torch.randint(0, 2, (batch,), generator=g), "idx": torch.arange(batch)}
    stats: dict[str, float] = {}

    class Probe(L.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            stats["before_mb"] = current_rss_mb()
            stats["watch"] = T.Stopwatch()
            stats["watch"].start()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            stats["seconds"] = stats.pop("watch").stop()[0]
            stats["load"] = T.load_sample()
            stats["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    trainer = L.Trainer(**quiet_trainer_kwargs(max_steps=2, limit_val_batches=0, callbacks=[Probe()]))
    trainer.fit(model, train_dataloaders=DataLoader([data, data], batch_size=None))  # 2nd step: optimiser state exists
    print(json.dumps(stats))


def method_table(chunk: int) -> str:
    configs = [("ConFair, 64 rows, plain step", 64, None),
               (f"ConFair, 1024 rows, grad_cache_chunk={chunk}", 1024, chunk),
               ("ConFair, 1024 rows, plain step", 1024, None)]
    results = [(name, measure(b, c, "--method-child")) for name, b, c in configs]
    base = results[0][1]
    base_growth = max(base["peak_mb"] - base["before_mb"], 1e-9)
    lines = ["| step | peak RSS (MB) | × 64-row peak | growth during step (MB) | × 64-row growth | time (s) | "
             "× 64-row time |", "|---|---|---|---|---|---|---|"]
    for name, r in results:
        growth = r["peak_mb"] - r["before_mb"]
        lines.append(f"| {name} | {r['peak_mb']:.0f} | {r['peak_mb'] / base['peak_mb']:.2f} | {growth:.0f} | "
                     f"{growth / base_growth:.2f} | {r['seconds']:.2f} | {r['seconds'] / base['seconds']:.1f} |")
    return "\n".join(lines) + (
        f"\n\nOne `training_step` + optimiser step of `ConFair` (SupCon − FCL + CE) through a Lightning `Trainer`, "
        f"MLP encoder {IN_DIM}→{WIDTH}×{DEPTH} (tanh), float32 CPU, 1 thread, the second of two steps (Adam state "
        "allocated). With `grad_cache_chunk` the module runs the gradient cache inside its step (manual "
        "optimisation): activation memory of one chunk, the loss over all 1,024 rows, about twice the encoder "
        "compute of a plain step on the same rows. " + _load_note(results) + "\n")


def _load_note(results: list[tuple[str, dict]]) -> str:
    """Load average and runnable tasks at the end of each step (benchmarks/performance/_timing.py), and whether any was busy."""
    seen = [r.get("load", (float("nan"), -1)) for _, r in results]
    busy = any(run > T.cores() or load > T.cores() for load, run in seen)
    cells = ", ".join(f"{load:.1f} / {run}" for load, run in seen)
    return (f"Load average / runnable tasks after each step: {cells} on {T.cores()} core(s)"
            + (" — **busy machine**: times are inflated." if busy else " (quiet)."))


def measure(batch: int, chunk: int | None, mode: str = "--child") -> dict:
    cmd = [sys.executable, __file__, mode, str(batch), str(chunk or 0)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk", type=int, default=64)
    parser.add_argument("--write", type=str, default=None)
    parser.add_argument("--method", action="store_true", help="only the method-step table (ConFair)")
    parser.add_argument("--child", nargs=2, type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--method-child", nargs=2, type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        batch, chunk = args.child
        child(batch, chunk or None)
        return
    if args.method_child:
        batch, chunk = args.method_child
        method_child(batch, chunk or None)
        return
    if args.method:
        md = method_table(args.chunk)
        print(md)
        if args.write:
            write_section(args.write, "## GradientCache in a method step (ConFair)",
                          "Generated by `python benchmarks/performance/gradient_cache.py --method`.\n\n" + md)
        return
    configs = [
        ("64 examples, plain backward", 64, None),
        (f"1024 examples, GradientCache (chunk {args.chunk})", 1024, args.chunk),
        ("1024 examples, plain backward", 1024, None),
    ]
    results = [(name, measure(b, c)) for name, b, c in configs]
    base = results[0][1]
    lines = [
        "| step | peak RSS (MB) | × 64-example peak | growth during step (MB) | × 64-example growth | time (s) |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in results:
        growth = r["peak_mb"] - r["before_mb"]
        base_growth = base["peak_mb"] - base["before_mb"]
        lines.append(
            f"| {name} | {r['peak_mb']:.0f} | {r['peak_mb'] / base['peak_mb']:.2f} | {growth:.0f} | "
            f"{growth / base_growth:.2f} | {r['seconds']:.2f} |"
        )
    md = "\n".join(lines) + (
        f"\n\nMLP {IN_DIM}→{WIDTH}×{DEPTH}→{OUT_DIM} (GELU), two views, loss = SupCon + CS-InfoNCE, float32 CPU, 1 thread. "
        "Peak RSS includes the interpreter, torch, weights, gradients and the inputs; growth is the peak minus the "
        "resident memory right before the step. GradientCache runs the encoder twice (once without graph), so about "
        "2× the compute of a plain step, plus small-chunk inefficiency on CPU. " + _load_note(results) + "\n"
    )
    print(md)
    if args.write:
        write_section(args.write, "## GradientCache peak memory", "Generated by `python benchmarks/performance/gradient_cache.py`.\n\n" + md)


def write_section(path: str, heading: str, body: str) -> None:
    """Replace (or append) the section under ``heading`` in a markdown file, keeping the rest."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    section = f"{heading}\n\n{body}"
    if heading in text:
        start = text.index(heading)
        nxt = text.find("\n## ", start + len(heading))
        text = text[:start] + section + (text[nxt + 1 :] if nxt >= 0 else "")
    else:
        text = text.rstrip() + ("\n\n" if text.strip() else "") + section
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
