"""Peak memory and time of `supcon_loss` forward+backward next to the `logsumexp(z zᵀ/τ)` floor, B up to 16,384.

Each (function, batch size) runs in a fresh child process: the child builds its inputs, runs a tiny warm-up
(so that lazily loaded kernels are resident), reads its resident set size, runs forward+backward once and reports
the growth of its peak resident set size (``ru_maxrss``) over that baseline; then it times ``--repeats`` more
runs (``--small-repeats`` for B ≤ 4,096; CPU time of the process, best of). ``tracemalloc`` does not see torch's
allocations, hence RSS.

    python benchmarks/performance/loss_memory.py                          # B = 512 … 16,384; d = 128; 1 thread
    python benchmarks/performance/loss_memory.py --sizes 1024 4096 --write benchmarks/performance/results/losses.md

Rows: the floor ``logsumexp(z @ z.T / τ, dim=1).sum()`` (what any softmax-contrastive loss must at least do),
``supcon_loss`` as users call it (dense up to ``DENSE_MAX_ROWS`` rows, streamed above), and the streamed path
forced (``block_size`` given) where ``supcon_loss`` is still dense, to show where the dense path is the faster one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing.py
import _timing as T

TAU = 0.1
CASES = ("floor logsumexp(z zᵀ/τ)", "supcon_loss", "supcon streamed (forced)")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(case: str, batch: int, dim: int, threads: int, repeats: int) -> dict:
    import torch

    from faircl.losses import supcon_loss
    from faircl.losses.streaming import supcon_streaming

    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)

    def make(b: int) -> tuple[torch.Tensor, torch.Tensor]:
        z = torch.nn.functional.normalize(torch.randn(b, dim, generator=g), dim=1)
        return z, torch.randint(0, 10, (b,), generator=g)

    def fn(z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if case == CASES[0]:
            return torch.logsumexp(z @ z.T / TAU, dim=1).sum()
        if case == CASES[1]:
            return supcon_loss(z, y, TAU)
        return supcon_streaming(z, y, TAU, True, "mean")

    def once(z0: torch.Tensor, y: torch.Tensor) -> float:
        z = z0.clone().requires_grad_(True)
        watch = T.Stopwatch()
        watch.start()
        fn(z, y).backward()
        return watch.stop()[1]

    once(*make(64))
    z0, y = make(batch)
    base = _rss_bytes()
    first = once(z0, y)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    times = [first] + [once(z0, y) for _ in range(repeats)]
    return {"growth": max(0, peak - base), "time": min(times), "load": T.load_sample()}


def measure(case: str, batch: int, dim: int, threads: int, repeats: int) -> dict:
    cmd = [sys.executable, __file__, "--child", case, str(batch), str(dim), str(threads), str(repeats)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _cell(row: dict | None) -> str:
    if row is None:
        return "= supcon_loss"
    return f"{row['growth'] / 1024**2:,.0f} MiB, {row['time']:.3f} s"


def to_markdown(rows: dict, sizes: list[int], dim: int, threads: int, repeats: tuple[int, int]) -> str:
    head = "| B | " + " | ".join(f"{c}: peak growth, time" for c in CASES) + " | supcon_loss / floor (memory, time) |"
    lines = [head, "|---|" + "---|" * (len(CASES) + 1)]
    for b in sizes:
        cells = [_cell(rows.get((c, b))) for c in CASES]
        floor, ours = rows[(CASES[0], b)], rows[(CASES[1], b)]
        ratio = f"{ours['growth'] / max(floor['growth'], 1):.2f}×, {ours['time'] / floor['time']:.2f}×"
        lines.append(f"| {b:,} | " + " | ".join(cells) + f" | {ratio} |")
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import torch

    from faircl.losses.streaming import DENSE_MAX_ROWS as dense_max

    meta = (
        f"d = {dim}, τ = {TAU}, 10 classes, float32 on CPU ({cpu}, {os.cpu_count()} cores, {threads} thread(s)), "
        f"torch {torch.__version__}. Peak growth = peak resident set size of a fresh child process during one "
        f"forward+backward minus its resident size just before (inputs excluded); time = CPU time, best of "
        f"{repeats[1] + 1} runs (B ≤ 4,096) or {repeats[0] + 1} runs (larger B) in that child. The streamed path was "
        f"forced only where `supcon_loss` is still dense (B ≤ {dense_max:,}); above, they are the same code. "
        + _load_note(rows)
    )
    return "\n".join(lines) + "\n\n" + meta + "\n"


def _load_note(rows: dict) -> str:
    """Highest load average / runnable tasks seen by the children (benchmarks/performance/_timing.py), and whether it was busy."""
    seen = [r.get("load", (float("nan"), -1)) for r in rows.values()]
    load, run = max(v[0] for v in seen), max(v[1] for v in seen)
    busy = run > T.cores() or load > T.cores()
    return (f"Highest load average / runnable tasks seen: {load:.1f} / {run} on {T.cores()} core(s)"
            + (" — **busy machine**: times are inflated." if busy else " (quiet)."))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        case, batch, dim, threads, repeats = sys.argv[2], *map(int, sys.argv[3:7])
        print(json.dumps(child(case, batch, dim, threads, repeats)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2, help="timed runs after the measured one")
    parser.add_argument("--small-repeats", type=int, default=12, help="timed runs after the measured one, B ≤ 4,096")
    parser.add_argument("--cases", type=int, nargs="+", default=list(range(len(CASES))), help="indices into CASES")
    parser.add_argument("--write", type=str, default=None, help="write the markdown section to this file")
    args = parser.parse_args()
    from faircl.losses.streaming import DENSE_MAX_ROWS

    rows = {}
    for b in args.sizes:
        repeats = args.small_repeats if b <= 4096 else args.repeats
        for i in args.cases:
            if i == 2 and b > DENSE_MAX_ROWS:
                continue  # supcon_loss already takes the streamed path
            rows[(CASES[i], b)] = r = measure(CASES[i], b, args.dim, args.threads, repeats)
            growth = r["growth"] / 2**20
            print(f"B={b:6d}  {CASES[i]:28s} peak growth {growth:8.0f} MiB   {r['time']:8.3f} s", flush=True)
    if len(args.cases) != len(CASES):
        return
    md = to_markdown(rows, args.sizes, args.dim, args.threads, (args.repeats, args.small_repeats))
    print()
    print(md)
    if args.write:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from gradient_cache import write_section

        command = "python benchmarks/performance/loss_memory.py " + " ".join(sys.argv[1:])
        write_section(
            args.write,
            "## Contrastive losses: peak memory up to B = 16,384",
            f"Generated by `{command}`.\n\n" + md,
        )


if __name__ == "__main__":
    main()
