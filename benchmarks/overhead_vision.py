"""Training-step throughput of PARADE and SimCLR (plain and fairness-driven) relative to a plain CE step.

    .venv/bin/python benchmarks/overhead_vision.py [--image-size 32] [--batch-size 64] [--steps 10]

Every method uses the same backbone (timm ``resnet18``, random init, small images) and the same batch; a step is
forward + loss + backward + Adam update. The steps are interleaved round-robin (CE, PARADE, SimCLR, ...) in one
process, so machine load affects all of them alike. The ratio uses each method's *fastest* step in CPU time of this
process (``time.process_time``, one torch thread by default): on a shared machine other processes inflate wall time
unpredictably but hardly the CPU time spent by this one; the median wall time is printed too.

* images/s counts the rows of the batch (``B``). SimCLR's step necessarily encodes two augmented views (``2B``
  images) — its *per-view* ratio (time per encoded image relative to CE) is reported too; the per-row ratio of a
  two-view method cannot be below ~2.
* Target: a PARADE step ≤ 1.3× a CE step; SimCLR ≤ 1.3× CE per encoded view.

Figures are printed and written to ``benchmarks/results/overhead_vision.md``. ``main(argv)`` returns them as a list
of dicts; ``main()`` without arguments uses the defaults (``benchmarks/overhead.py`` calls it so).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from faircl.methods.ce import CE  # noqa: E402
from faircl.methods.fair_sampling_simclr import FairSamplingSimCLR, SimCLR  # noqa: E402
from faircl.methods.parade import PARADE  # noqa: E402

NUM_CLASSES, NUM_GROUPS = 8, 2


def _batch(batch_size: int, image_size: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """An SPC-2-style batch: every class present with ``batch_size / NUM_CLASSES`` rows, two views."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(batch_size, 3, image_size, image_size, generator=g)
    return {
        "x": x,
        "x2": (x + 0.05 * torch.randn(x.shape, generator=g)).clamp(0, 1),
        "y": torch.arange(batch_size) % NUM_CLASSES,
        "a": torch.randint(0, NUM_GROUPS, (batch_size,), generator=g),
        "idx": torch.arange(batch_size),
    }


def _models(backbone: str) -> dict[str, torch.nn.Module]:
    common = dict(num_classes=NUM_CLASSES, num_groups=NUM_GROUPS, input_dim=3, encoder="timm",
                  encoder_kwargs={"model_name": backbone}, leakage=False)
    torch.manual_seed(0)
    fair = FairSamplingSimCLR(stage1_epochs=0, **common)  # epoch 0 is already the fair phase
    fair.cluster_ids = torch.arange(4096) % fair.hparams.num_clusters
    fair.cluster_freq.copy_(torch.tensor([0.4, 0.3, 0.2, 0.1]))
    return {
        "CE": CE(**common),
        "PARADE": PARADE(lambda_sa=0.1, lambda_sep=500.0, **common),
        "SimCLR": SimCLR(**common),
        "FairSamplingSimCLR": fair,
    }


def _step_fn(model: torch.nn.Module, batch: dict[str, torch.Tensor]):
    opt = torch.optim.Adam(model.param_groups(), lr=1e-4)
    model.train()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        out = model(batch["x"])
        loss = model.losses(batch, out)["loss"]
        loss.backward()
        opt.step()

    return step


def measure(backbone: str = "resnet18", image_size: int = 32, batch_size: int = 64, steps: int = 10,
            warmup: int = 2) -> list[dict[str, Any]]:
    """Median step time of each method, interleaved; returns one row per method with its ratio to CE."""
    batch = _batch(batch_size, image_size)
    models = _models(backbone)
    steps_fn = {name: _step_fn(m, batch) for name, m in models.items()}
    cpu: dict[str, list[float]] = {name: [] for name in models}
    wall: dict[str, list[float]] = {name: [] for name in models}
    for i in range(warmup + steps):
        for name, fn in steps_fn.items():
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            if i >= warmup:
                cpu[name].append(time.process_time() - c0)
                wall[name].append(time.perf_counter() - t0)
    base = min(cpu["CE"])
    rows = []
    for name in models:
        best = min(cpu[name])
        views = 2 if "SimCLR" in name else 1
        rows.append({
            "method": name, "step_ms": 1000 * best, "wall_ms": 1000 * statistics.median(wall[name]),
            "images_per_s": batch_size / best, "views": views,
            "ratio_per_row": best / base, "ratio_per_view": best / base / views,
        })
    return rows


def to_markdown(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "# Vision training-step overhead vs cross-entropy",
        "",
        "Regenerate: `.venv/bin/python benchmarks/overhead_vision.py "
        f"--image-size {args.image_size} --batch-size {args.batch_size} --steps {args.steps} "
        f"--threads {args.threads}`",
        "",
        f"Backbone timm `{args.backbone}` (random init), batch {args.batch_size} × 3×{args.image_size}×{args.image_size}, "
        f"CPU, {torch.get_num_threads()} torch thread(s), fastest of {args.steps} interleaved steps in process CPU "
        f"time (forward + loss + backward + Adam). Load average at the start: {args.load}.",
        "",
        "| method | CPU ms / step | images/s (rows, CPU time) | × CE per row | encoded views | × CE per encoded view "
        "| median wall ms / step |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['method']} | {r['step_ms']:.1f} | {r['images_per_s']:.1f} | {r['ratio_per_row']:.2f} | "
                     f"{r['views']} | {r['ratio_per_view']:.2f} | {r['wall_ms']:.1f} |")
    lines += [
        "",
        "Target: PARADE ≤ 1.3× CE; the SimCLR variants ≤ 1.3× CE per encoded view (a two-view step encodes 2B "
        "images, so per row it cannot be below ~2× CE).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backbone", default="resnet18")
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "overhead_vision.md"))
    args = parser.parse_args([] if argv is None else argv)  # called from benchmarks/overhead.py: defaults
    torch.set_num_threads(args.threads)
    args.load = " / ".join(f"{v:.1f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    rows = measure(args.backbone, args.image_size, args.batch_size, args.steps, args.warmup)
    text = to_markdown(rows, args)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"written to {out}")
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
