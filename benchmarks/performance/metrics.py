"""Speed of the fairness metrics against their floors, measured side by side in one run.

1. ``GroupFairness`` update + compute on 1,000,000 predictions (4 groups, 2 classes) vs a bare ``torch.bincount``
   of the same (group, target, prediction) codes (target: <= 3x), next to the minimal work that reads the three id
   tensors (build the codes, then bincount), its update alone, without value checks, with unknown groups, from
   fp32 / bf16 scores, and torchmetrics' ``BinaryGroupStatRates`` and fairlearn's ``MetricFrame`` on the same data.
2. ``GroupRecallAtK`` (k = 1, all groups) at N = 20,000, d = 128 vs a chunked matmul + argmax with the same chunks
   (target: <= 1.3x).

Contenders run in turn within each repeat (A, B, A, B, ...); a ratio is the median over repeats of the time divided
by the floor's time in the same repeat (with its interquartile range), so load on the machine hits both sides alike.
Run: ``.venv/bin/python benchmarks/performance/metrics.py [--quick] [--no-fairlearn] [--plot benchmarks/performance/results/metrics.png]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing.py
import _timing as T

from faircl.metrics import GroupFairness, GroupRecallAtK


def interleaved(fns: dict, repeats: int, sync=None) -> dict[str, T.Timing]:
    """Every contender timed ``repeats`` times in rotated rounds after one warm-up round (:func:`_timing.measure`)."""
    return T.measure(fns, rounds=repeats, warmup=1, sync=sync)


def summarise(times: dict[str, T.Timing], floor: str) -> list[tuple[str, float, float, float, float]]:
    """``(name, median time, median ratio, 25th, 75th percentile ratio)``; a ratio divides each repeat's time by the
    floor's time in the same repeat, so a slow phase of the machine hits both sides of it."""
    rows = []
    base = times[floor].wall
    for name, t in times.items():
        ts = t.wall
        ratios = sorted(a / b for a, b in zip(ts, base)) if len(ts) == len(base) else [
            statistics.median(ts) / statistics.median(base)]
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        rows.append((name, statistics.median(ts), statistics.median(ratios), q[0], q[-1]))
    return rows


def load_summary(times: dict[str, T.Timing]) -> str:
    """The machine's load beside the figures (and whether any was taken on a busy machine)."""
    return T.busy_note(list(times.values()))


def bench_group_fairness(n: int, repeats: int, with_fairlearn: bool):
    gen = torch.Generator().manual_seed(0)
    num_groups, num_classes = 4, 2
    groups = torch.randint(num_groups, (n,), generator=gen)
    target = torch.randint(num_classes, (n,), generator=gen)
    preds = torch.randint(num_classes, (n,), generator=gen)
    scores = torch.randn(n, num_classes, generator=gen)
    scores_bf16 = scores.bfloat16()
    groups_unknown = groups.clone()
    groups_unknown[torch.rand(n, generator=gen) < 0.1] = -1
    codes = (groups * num_classes + target) * num_classes + preds
    size = num_groups * num_classes * num_classes

    def floor():
        return torch.bincount(codes, minlength=size)

    checked = GroupFairness(num_classes, num_groups)
    trusted = GroupFairness(num_classes, num_groups, validate_args=False)

    def run(metric, p, g=groups, compute=True):
        metric.reset()
        metric.update(p, target, g)
        return metric.compute() if compute else None

    code_buffer = torch.empty_like(codes)

    def codes_and_bincount():  # the least work that reads the three id tensors (no checks, no unknown groups)
        code = torch.add(preds, target, alpha=num_classes, out=code_buffer)
        code.add_(groups, alpha=num_classes * num_classes)
        return torch.bincount(code, minlength=size)

    fns = {"bincount floor": floor,
           "codes from the three id tensors + bincount": codes_and_bincount,
           "GroupFairness (class ids)": lambda: run(checked, preds),
           "  of which update": lambda: run(checked, preds, compute=False),
           "GroupFairness (class ids, validate_args=False)": lambda: run(trusted, preds),
           "GroupFairness (class ids, 10% unknown groups)": lambda: run(checked, preds, groups_unknown),
           "GroupFairness ([N, 2] fp32 scores)": lambda: run(checked, scores),
           "GroupFairness ([N, 2] bf16 scores)": lambda: run(checked, scores_bf16)}
    try:
        from torchmetrics.classification import BinaryGroupStatRates

        def tm():
            m = BinaryGroupStatRates(num_groups=num_groups)
            m.update(preds, target, groups)
            return m.compute()

        fns["torchmetrics BinaryGroupStatRates"] = tm
    except ImportError:
        pass
    times = interleaved(fns, repeats)
    print(load_summary(times))
    if with_fairlearn:
        from fairlearn.metrics import MetricFrame, false_positive_rate, selection_rate, true_positive_rate
        from sklearn.metrics import accuracy_score

        y, p, a = target.numpy(), preds.numpy(), groups.numpy()

        def fl():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return MetricFrame(metrics={"tpr": true_positive_rate, "fpr": false_positive_rate,
                                            "sel": selection_rate, "acc": accuracy_score},
                                   y_true=y, y_pred=p, sensitive_features=a).by_group

        times["fairlearn MetricFrame (tpr, fpr, selection, accuracy)"] = interleaved({"f": fl}, 1)["f"]
    return summarise(times, "bincount floor")


def bench_recall(n: int, d: int, repeats: int) -> list[tuple[str, float]]:
    gen = torch.Generator().manual_seed(1)
    x = torch.nn.functional.normalize(torch.randn(n, d, generator=gen), dim=1)
    labels = torch.randint(100, (n,), generator=gen)
    groups = torch.randint(4, (n,), generator=gen)
    chunk = max(1, (1 << 24) // n)

    def floor():
        xt = x.t()
        out = torch.empty(n, dtype=torch.long)
        for s in range(0, n, chunk):
            out[s:s + chunk] = (x[s:s + chunk] @ xt).argmax(1)
        return out

    def ours():
        m = GroupRecallAtK(1, 4, chunk_size=chunk)
        m.update(x, labels, groups)
        return m.compute()

    def ours_cos():
        m = GroupRecallAtK(1, 4, distance="cosine", chunk_size=chunk)
        m.update(x, labels, groups)
        return m.compute()

    times = interleaved({"chunked matmul + argmax floor": floor, "GroupRecallAtK (euclidean)": ours,
                         "GroupRecallAtK (cosine)": ours_cos}, repeats)
    print(load_summary(times))
    return summarise(times, "chunked matmul + argmax floor")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats (smoke run)")
    parser.add_argument("--no-fairlearn", action="store_true", help="skip the (slow) fairlearn reference")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads for every contender (default 1: stable on a shared machine)")
    parser.add_argument("--plot", default=None,
                        help="write a bar chart of the GroupFairness ratios to this PNG (e.g. benchmarks/results/"
                             "metrics.png)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    n_pred, n_emb, reps = (100_000, 4_000, 5) if args.quick else (1_000_000, 20_000, 41)
    print(T.machine_line(T.machine()))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; ratio = median over repeats of "
          "(time / floor time in the same repeat), [25th, 75th percentile]")
    print(f"\nGroupFairness update + compute, N = {n_pred:,}, 4 groups, 2 classes (target <= 3x the floor)")
    rows = bench_group_fairness(n_pred, reps, not args.no_fairlearn)
    for row in rows:
        print_row(*row)
    if args.plot:
        plot_ratios(rows, args.plot, f"GroupFairness update + compute, N = {n_pred:,}, 4 groups, 2 classes")
    print(f"\nGroupRecallAtK k=1, all groups, N = {n_emb:,}, d = 128 (target <= 1.3x the floor)")
    for row in bench_recall(n_emb, 128, 3 if args.quick else 5):
        print_row(*row)


def plot_ratios(rows, path: str, title: str, target: float = 3.0) -> None:
    """Horizontal bars of the ratios to the floor (log scale) with their interquartile ranges and the target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    rows = [r for r in rows if r[0] != "bincount floor"][::-1]
    names = [r[0].strip() for r in rows]
    ratio = [r[2] for r in rows]
    err = [[r[2] - r[3] for r in rows], [r[4] - r[2] for r in rows]]
    colors = ["tab:blue" if n.startswith(("GroupFairness", "of which")) else "tab:gray" for n in names]
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(rows) + 1.6))
    ax.barh(names, ratio, xerr=err, color=colors, capsize=3, left=0)
    ax.axvline(target, color="tab:red", linestyle="--", label=f"target {target:g}x")
    ax.set_xscale("log")
    ticks = [t for t in (1, 2, 3, 5, 10, 30, 100, 1000, 10000, 100000) if t <= 3 * max(r[4] for r in rows)]
    ax.set_xlim(1, ticks[-1] * 1.5)
    ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("time / bare torch.bincount of the codes (median of paired repeats; 25th-75th percentile)")
    ax.set_title(title, fontsize=10)
    for y, (r, hi) in enumerate(zip(ratio, (r[4] for r in rows))):
        ax.text(hi * 1.06, y, f"{r:.2f}x", va="center", fontsize=8)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"  (chart written to {path})")


def print_row(name: str, t: float, ratio: float, lo: float, hi: float) -> None:
    print(f"  {name:<52s} {t * 1e3:10.2f} ms  {ratio:8.2f}x  [{lo:.2f}, {hi:.2f}]")


if __name__ == "__main__":
    main()
