"""Is the pool's per-run overhead a fixed cost or a slowdown per epoch? ``ce/biased_features`` at 1, 5 and 20 epochs,
forked from the bench's worker against the same run in this process (``startup.py``'s contenders), in alternating
rounds; then an empty forked child and the fork server's resident memory.

    python benchmarks/startup_epochs.py --rounds 5     # writes benchmarks/results/startup_epochs.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import startup  # noqa: E402
from _timing import machine, machine_line, measure  # noqa: E402

from faircl.bench.runner import BENCH_PRELOAD  # noqa: E402
from faircl.cli.workers import RunPool  # noqa: E402

EPOCHS = (1, 5, 20)


def server_rss_mb() -> float:
    """Resident memory of the pool's fork server (MiB), or NaN when it cannot be read."""
    import multiprocessing.forkserver as fs

    pid = getattr(fs._forkserver, "_forkserver_pid", None)
    try:
        line = next(ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines() if ln.startswith("VmRSS"))
    except (OSError, StopIteration, TypeError):
        return float("nan")
    return int(line.split()[1]) / 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", default=str(HERE / "results" / "startup_epochs.md"))
    opts = p.parse_args()
    start = machine()
    pool = RunPool(BENCH_PRELOAD)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for ep in EPOCHS:
            work = Path(tmp) / f"e{ep}"
            work.mkdir()
            racers = startup.contenders(["--config", "ce/biased_features", "--trainer.max_epochs", str(ep)], work, pool)
            racers.pop("fresh processes")
            t = measure(racers, rounds=opts.rounds, warmup=1)
            pool_s, floor_s = t["pool (forked)"].wall, t["in-process (floor)"].wall
            diff = [a - b for a, b in zip(pool_s, floor_s)]
            rows.append(f"| {ep} | {statistics.median(pool_s):.3f} | {statistics.median(floor_s):.3f} | "
                        f"{1e3 * statistics.median(diff):+.0f} [{1e3 * min(diff):+.0f}, {1e3 * max(diff):+.0f}] | "
                        f"{100 * statistics.median(diff) / statistics.median(floor_s):+.0f}% |")
            print(rows[-1], flush=True)
    empty = startup.empty_child(pool)
    rss = server_rss_mb()
    lines = ["# Pool overhead against the number of epochs", "",
             f"`python benchmarks/startup_epochs.py --rounds {opts.rounds}`. `ce/biased_features`, fit + test: forked "
             "from the bench's worker (`RunPool(BENCH_PRELOAD)`) against the same run in this process, in rotated "
             "rounds after one warm-up round. A fixed cost per run stays level down the difference column; a "
             "slowdown per step grows with the epochs.", "", machine_line(start, machine()), "",
             "| epochs | pool (s) | in-process (s) | pool − in-process, ms: median [min, max] | as a share |",
             "|---|---|---|---|---|", *rows, "",
             f"An empty forked child: {1e3 * statistics.median(empty):.0f} ms (median of {len(empty)}). The fork "
             f"server's resident memory: {rss:.0f} MiB."]
    Path(opts.out).write_text("\n".join(lines) + "\n")
    print(f"written to {opts.out}")


if __name__ == "__main__":
    main()
