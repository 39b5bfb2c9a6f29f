"""Forward+backward time of the contrastive losses against pytorch-metric-learning and the log-sum-exp floor.

The floor is ``logsumexp(z @ z.T / τ, dim=1).sum()`` forward+backward: every softmax-contrastive loss over a
``[B, d]`` batch must at least do this. Times are CPU time of the process (``time.process_time``; run with
``--threads 1`` so it is the work done, little disturbed by other load on the machine). As written it spends one extra ``[B, B]`` pass on the division; the
"tight floor" scales ``z`` first (``[B, d]``), which is what the faircl losses do, so both are shown. All functions run interleaved in the same process
(``benchmarks/performance/_timing.py``: rotated rounds, median of ``--repeats``, load average beside every figure) so the ratios
are measured side by side under the same machine load.

    python benchmarks/performance/losses.py                     # B = 512, 2048, 4096; d = 128
    python benchmarks/performance/losses.py --sizes 512 --repeats 3 --write benchmarks/performance/results/losses.md
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing.py
import _timing as T

from faircl.losses import cs_infonce_loss, fcl_loss, nt_xent_loss, supcon_loss
from faircl.mining import fair_negative_weights

TAU = 0.1


def make_cases(batch: int, dim: int) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 10, (batch,), generator=g)
    a = torch.randint(0, 2, (batch,), generator=g)
    half = batch // 2
    clusters = torch.randint(0, 4, (half,), generator=g)
    cases: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "floor logsumexp(z zᵀ/τ)": lambda z: torch.logsumexp(z @ z.T / TAU, dim=1).sum(),
        "tight floor logsumexp((z/τ) zᵀ)": lambda z: torch.logsumexp((z / TAU) @ z.T, dim=1).sum(),
        "supcon_loss": lambda z: supcon_loss(z, y, TAU),
        "cs_infonce_loss (2×B/2 views)": lambda z: cs_infonce_loss(z[:half], z[half:], y[:half], a[:half], TAU),
        "fcl_loss (none)": lambda z: fcl_loss(z, y, a, TAU),
        "fcl_loss (class)": lambda z: fcl_loss(z, y, a, TAU, conditioning="class"),
        "nt_xent_loss (2×B/2 views)": lambda z: nt_xent_loss(z[:half], z[half:], TAU),
        "nt_xent_loss + fair weights": lambda z: nt_xent_loss(
            z[:half], z[half:], TAU, negative_weights=fair_negative_weights(z[:half].detach(), clusters, 4)
        ),
    }
    try:
        from pytorch_metric_learning.losses import SupConLoss

        pml = SupConLoss(temperature=TAU)
        cases["PML SupConLoss"] = lambda z: pml(z, y)
    except ImportError:  # pragma: no cover - optional oracle
        pass
    return cases


def step(fn: Callable[[torch.Tensor], torch.Tensor], z0: torch.Tensor) -> Callable[[], None]:
    """One forward+backward of ``fn`` on a fresh leaf copy of ``z0`` (the copy is not timed)."""
    def run() -> tuple[float, float]:
        z = z0.clone().requires_grad_(True)
        watch = T.Stopwatch()
        watch.start()
        fn(z).backward()
        return watch.stop()

    return run


def run(sizes: list[int], dim: int, repeats: int) -> list[tuple[int, str, float, float]]:
    rows = []
    for batch in sizes:
        # Unit rows, as contrastive embeddings are: with raw N(0, 1) rows the floor's logits reach ±d/τ and
        # exp() underflows into subnormals, which slows the floor (not the losses, which normalise) several-fold.
        z0 = torch.nn.functional.normalize(torch.randn(batch, dim, generator=torch.Generator().manual_seed(1)), dim=1)
        cases = make_cases(batch, dim)
        timings = T.measure({name: step(fn, z0) for name, fn in cases.items()}, rounds=repeats, warmup=1)
        names = list(cases)
        floor = timings[names[0]]
        for name in names:
            t = timings[name]
            med = t.median("cpu")
            ratio = T.paired_ratio(t, floor, "cpu")[0]
            rows.append((batch, name, med * 1e3, ratio))
            print(f"B={batch:5d}  {name:32s} {med * 1e3:9.1f} ms   {ratio:5.2f}× floor   load {t.load_cell()}",
                  flush=True)
        BUSY.extend(timings.values())
    return rows


#: every timing of the run, for the load note under the table
BUSY: list[T.Timing] = []


def to_markdown(rows: list[tuple[int, str, float, float]], dim: int, repeats: int, threads: int) -> str:
    sizes = sorted({r[0] for r in rows})
    names = list(dict.fromkeys(r[1] for r in rows))
    table = {(b, n): (ms, ratio) for b, n, ms, ratio in rows}
    head = "| loss (forward+backward) | " + " | ".join(f"B={b}" for b in sizes) + " |"
    sep = "|---|" + "---|" * len(sizes)
    lines = [head, sep]
    for n in names:
        cells = [f"{table[(b, n)][0]:.0f} ms ({table[(b, n)][1]:.2f}×)" for b in sizes]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    meta = (
        f"d = {dim}, τ = {TAU}, 10 classes, 2 groups, float32 on CPU, torch {torch.__version__}, "
        f"{threads} thread(s); CPU time (process_time), median of {repeats} interleaved rounds after a warm-up round "
        "(benchmarks/performance/_timing.py); ratio = median over rounds of time / floor time in the same round. "
        f"{T.machine_line(T.machine())} {T.busy_note(BUSY)}"
    )
    notes = (
        "`cs_infonce_loss` and `fcl_loss(conditioning=\"class\")` only need the similarities inside each (class, "
        "group) cell or class: they compute only those diagonal blocks (one batched matmul up to 1,024 rows, block-sorted "
        "tiles above), hence below the floor. Above 1,024 rows every loss takes the linear-memory streamed path "
        "(`faircl.losses.streaming`; peak memory in the next section). "
        "The weighted NT-Xent time includes `fair_negative_weights` (4 clusters). PML = pytorch-metric-learning."
    )
    return "\n".join(lines) + "\n\n" + meta + "\n\n" + notes + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 2048, 4096])
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write", type=str, default=None, help="write the markdown table to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = run(args.sizes, args.dim, args.repeats)
    md = to_markdown(rows, args.dim, args.repeats, args.threads)
    print()
    print(md)
    if args.write:
        from gradient_cache import write_section  # same folder

        if not os.path.exists(args.write):
            with open(args.write, "w") as f:
                f.write("# Loss benchmarks\n")
        write_section(args.write, "## Contrastive losses: forward+backward time", "Generated by `python benchmarks/performance/losses.py`.\n\n" + md)


if __name__ == "__main__":
    main()
