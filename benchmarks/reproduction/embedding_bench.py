"""The embedding benchmark as ``faircl bench`` invocations: every method of the grid
(``faircl/bench/grids/embeddings.yaml``) on the ``embeddings`` suite's ``cda_minilm`` protocol against the untouched
encoder: CCD (β = 1), the paper's β ablation (β = 0, 0.5, 1.5: ``--method.init_args.beta``, one invocation each),
CCD with the paper's literal bandwidth (ρ = the variance of the distances), and the untouched encoder itself under
another name (a null method: no claim may read holds), then one results file of every claim's verdict.

    .venv/bin/python benchmarks/reproduction/embedding_bench.py            # every invocation (baseline cached)
    .venv/bin/python benchmarks/reproduction/embedding_bench.py --methods "CCD β=1,untouched"   # a subset
    .venv/bin/python benchmarks/reproduction/embedding_bench.py --render   # the results file from the bench outputs

Writes ``benchmarks/reproduction/results/embedding_bench.md``; the runs and each invocation's ``results.md`` /
``results.csv`` / ``tradeoff.png`` / ``bench.json`` stay under ``--work`` (default
``$FAIRCL_CACHE/bench-runs/embeddings``). Needs the corpora and the bias sets under ``$FAIRCL_DATA`` (default
``../shared/data``) and the offline all-MiniLM-L6-v2.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from _bench_grid import (bench_command, bench_cpu, bench_rows, bench_wall, carried as carried_row,  # noqa: E402
                         carried_open, fmt, grid_parser, open_start, listed, load_grid, open_claims, run_all, seeds_cell, shown,
                         slug, use_shared_data)

OUT = HERE / "results" / "embedding_bench.md"
GRID = load_grid("embeddings", ("protocols", "methods"))
#: label: the grid's entry of the method (class, init_args)
METHODS: dict[str, dict] = GRID["methods"]
#: the scores of a ``cda_minilm`` claim, in the order of the β ablation's table and picture
SCORES = ("cced_heldout", "cced_in", "seat", "bias_ir", "crows", "stereoset")


def beta_rows(work: Path) -> dict[float, dict[str, dict[str, str]]]:
    """β → {score → its bench row} of every CCD invocation that has run (β from its label ``CCD β=<β>``)."""
    out = {}
    for label, method in METHODS.items():
        args = method["init_args"]
        rows = bench_rows(work / slug(label)) if method["class"] == "CCD" and "rho_estimate" not in args else []
        if rows:
            out[float(args["beta"])] = {r["gap"]: r for r in rows}
    return dict(sorted(out.items()))


def plot_beta(work: Path, png: Path) -> bool:
    """The β ablation as a picture: each score's Δ against the untouched encoder (×100, 95% interval) over β, and
    the utility change; ``False`` (nothing written) with fewer than two values of β."""
    found = beta_rows(work)
    if len(found) < 2:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    betas = list(found)
    scores = [g for g in SCORES if all(g in found[b] for b in betas)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for i, g in enumerate(scores):
        mid = [100 * float(found[b][g]["effect"]) for b in betas]
        lo = [m - 100 * float(found[b][g]["effect_lo"]) for m, b in zip(mid, betas)]
        hi = [100 * float(found[b][g]["effect_hi"]) - m for m, b in zip(mid, betas)]
        x = [b + 0.02 * (i - len(scores) / 2) for b in betas]  # side by side, not on top of each other
        axes[0].errorbar(x, mid, yerr=[lo, hi], marker="o", capsize=3, label=g)
    axes[0].axhline(0, color="grey", lw=0.8)
    axes[0].set(xlabel="β (weight of L_rep)", ylabel="Δ vs the untouched encoder (×100)",
                title="Bias scores (lower: less bias)", xticks=betas)
    axes[0].legend(fontsize=7, ncol=2)
    first = scores[0] if scores else next(iter(found[betas[0]]))
    u = [100 * float(found[b][first]["utility_change"]) for b in betas]
    ulo = [m - 100 * float(found[b][first]["utility_lo"]) for m, b in zip(u, betas)]
    uhi = [100 * float(found[b][first]["utility_hi"]) - m for m, b in zip(u, betas)]
    axes[1].errorbar(betas, u, yerr=[ulo, uhi], marker="o", capsize=3, color="black")
    axes[1].axhline(0, color="grey", lw=0.8)
    axes[1].axhline(-2, color="red", lw=0.8, ls="--", label="−2 points: the utility limit of holds")
    axes[1].set(xlabel="β (weight of L_rep)", ylabel="Δ profession-probe accuracy (points)",
                title="Utility", xticks=betas)
    axes[1].legend(fontsize=7)
    fig.suptitle("CCD on cda_minilm: the β ablation through faircl bench (3 seeds, Δ paired by seed, 95% CI)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return True


def beta_table(work: Path) -> list[str]:
    """One row per β: each score's Δ and verdict (the ablation side by side)."""
    found = beta_rows(work)
    if len(found) < 2:
        return []
    scores = list(SCORES)
    lines = ["", "**The β ablation** (the paper's Table 7 values; β weighs the representation term L_rep; each β its "
             "own invocation and Holm family, against the same cached baseline runs). Δ ×100 [95% CI], verdict:", "",
             "| β | " + " | ".join(scores) + " | Δ utility |", "|---|" + "---|" * (len(scores) + 1)]
    for b, rows in found.items():
        cells = [f"{fmt(rows[g])} {rows[g]['verdict']}" if g in rows else "—" for g in scores]
        r = next(iter(rows.values()))
        du = f"{100 * float(r['utility_change']):+.1f} [{100 * float(r['utility_lo']):+.1f}, " \
             f"{100 * float(r['utility_hi']):+.1f}]"
        lines.append(f"| {b:g} | " + " | ".join(cells) + f" | {du} |")
    return lines


def render(work: Path, out: Path, note: str = "") -> None:
    lines = ["# The embedding benchmark through `faircl bench`", "",
             "Regenerate: `.venv/bin/python benchmarks/reproduction/embedding_bench.py` "
             f"(runs under `{shown(work)}`; data in "
             "`$FAIRCL_DATA`). Protocol `embeddings/cda_minilm` (`faircl/bench/protocols/embeddings/`): CDA tuples "
             "of Bias-in-Bios, GAP and BUG (800 train, 48 validation, 120 test) and 60 test tuples of each held-out "
             "source (RedditBias, BEC-Pro, WinoBias, WinoGender); all-MiniLM-L6-v2 fine-tuned one epoch (Adam 5e-5, "
             "batch 16, validation every 10 steps, best validation loss kept); 3 seeds; baseline: the untouched "
             "encoder. Methods and arguments: `faircl/bench/grids/embeddings.yaml`. Values ×100 (CCED and SEAT |d| "
             "are not percentages); Δ = method − baseline paired by seed; [95% CI].", ""]
    lines += ["| claim | Δ [95% CI] | verdict | seeds | baseline → method | Δ utility | bench wall time |",
              "|---|---|---|---|---|---|---|"]
    total, cpu, carried = 0.0, 0.0, []
    previous = out.read_text().splitlines() if out.is_file() else []
    for label in METHODS:
        folder = work / slug(label)
        got = bench_rows(folder)
        if not got:  # not run here: keep its rows of the file as it stands (a partial regeneration keeps the rest)
            kept = [carried_row(line, 3, 7) for line in previous[:open_start(previous)] if line.startswith(f"| {label} lowers ")]
            lines += kept
            if kept:
                carried.append(label)
                total += 60 * float(kept[0].rstrip(" |").rsplit("|", 1)[1].split()[0])
            continue
        wall = bench_wall(folder)
        total += wall
        cpu += bench_cpu(folder)
        for r in got:
            values = f"{100 * float(r['baseline_gap']):.1f} → {100 * float(r['method_gap']):.1f}"
            du = f"{100 * float(r['utility_change']):+.1f} [{100 * float(r['utility_lo']):+.1f}, " \
                 f"{100 * float(r['utility_hi']):+.1f}]"
            lines.append(f"| {label} lowers {r['gap']} vs {r['baseline']} | {fmt(r)} | "
                         f"**{r['verdict']}** | {seeds_cell(r)} | {values} | {du} | {wall / 60:.1f} min |")
    lines += ["", f"Wall time of the bench invocations' own runs: {total / 60:.1f} min in all (each invocation's "
              "`bench.json`: a run it reused from the baseline cache counts 0 there)."
              + (f" CPU time of the runs of the invocations run this time: {cpu / 3600:.2f} h (reused runs included)."
                 if cpu else "") + (f" {note}" if note else "")
              + (f" Rows of {', '.join(carried)} are those of the previous regeneration (not run again this time)."
                 if carried else ""),
              "", "The reason behind each verdict, the baseline's bias against its null and the utility interval are "
              "in each invocation's `results.md`; the rows below repeat the reasons.", ""]
    for label in METHODS:
        got = bench_rows(work / slug(label))
        lines += [f"- {label} · {r['gap']}: {r['verdict']}: {r['reason']}" for r in got] or [
            ln for ln in previous if ln.startswith(f"- {label} · ")]  # not run here: its reasons as they stood
    lines += open_claims({label: work / slug(label) for label in METHODS
                          if (work / slug(label) / "bench.json").is_file()},
                         carried_open(previous, [(label, list(GRID["protocols"])) for label in carried]))
    png = out.with_name("embedding_beta.png")
    if beta_table(work):
        lines += beta_table(work)
        if plot_beta(work, png):
            lines += ["", f"![The β ablation: each score's change and the utility change over β]({png.name})"]
    else:  # fewer than two β run here: the ablation (table and picture) of the previous regeneration stands
        start = next((i for i, ln in enumerate(previous) if ln.startswith("**The β ablation**")), None)
        if start is not None:
            end = next((i for i, ln in enumerate(previous) if ln.startswith("![The β ablation")), len(previous) - 1)
            lines += ["", "(The β ablation below is the previous regeneration's: fewer than two values of β ran "
                      "this time.)", "", *previous[start:end + 1]]
    out.write_text("\n".join(lines) + "\n")


def chosen(label: str, names: list[str]) -> bool:
    """Whether ``--methods`` selects ``label``: a name that is a label selects that label only; another selects the
    labels it starts, word by word (``CCD``: every CCD invocation; ``CCD β=1``: β = 1 alone)."""
    return not names or any(label == n or (n not in METHODS and label.startswith(n + " ")) for n in names)


def main() -> None:
    p = grid_parser(__doc__, "embeddings")
    p.add_argument("--out", default=str(OUT))
    opts = p.parse_args()
    use_shared_data(ROOT)
    work = Path(opts.work)
    names = listed(opts.methods)
    if not opts.render:
        run_all({label: bench_command("embeddings", list(GRID["protocols"]), label, method["class"],
                                      method["init_args"], work / slug(label), opts.quick, opts.seeds,
                                      opts.max_seeds)
                 for label, method in METHODS.items() if chosen(label, names)})
    render(work, Path(opts.out), opts.note)
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
