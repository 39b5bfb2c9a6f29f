"""The results file of ``benchmarks/text_fairness.py``: summary of verdicts first, then the tables and the plot."""

from __future__ import annotations

import json
import math
import os
import platform
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from _stats import judge, summary_table

from faircl.metrics.tradeoff import tradeoff_score

COLUMNS = [("accuracy", "Acc"), ("balanced_accuracy", "BAcc"), ("f1", "F1"), ("tpr_gap_rms", "GAP"),
           ("eo_gap", "EO gap"), ("leakage_h", "Leak@h"), ("leakage_yhat", "Leak@ŷ")]
CONTROLLED = ("controlled stereotype (pooled English valid + test; train 80% a = y, balanced classes and groups; "
              "balanced val / test)")


def summarise(runs: dict[str, list[dict[str, float]]]) -> list[str]:
    """Markdown rows ``mean ± std`` (×100) per method, with Shen's Tradeoff over the methods of the table."""
    means = {m: {k: float(np.mean([r[k] for r in rs])) for k, _ in COLUMNS} for m, rs in runs.items()}
    stds = {m: {k: float(np.std([r[k] for r in rs])) for k, _ in COLUMNS} for m, rs in runs.items()}
    names = list(runs)
    trade = tradeoff_score([means[m] for m in names], accuracy="accuracy", gap="tpr_gap_rms",
                           leakage_h="leakage_h", leakage_y="leakage_yhat")
    lines = ["| method | " + " | ".join(c for _, c in COLUMNS) + " | top class | epoch | Tradeoff | fit s |",
             "|---|" + "---|" * (len(COLUMNS) + 4)]
    for m, t in zip(names, trade):
        cells = [f"{100 * means[m][k]:.1f} ± {100 * stds[m][k]:.1f}" for k, _ in COLUMNS]
        top = np.mean([r["majority_share"] for r in runs[m]])
        epoch = np.mean([r["selected_epoch"] for r in runs[m]])
        sec = np.mean([r["fit_seconds"] for r in runs[m]])
        lines.append(f"| {m} | " + " | ".join(cells) + f" | {100 * top:.0f} | {epoch:.1f} | {t:.3f} | {sec:.1f} |")
    return lines


def plot_sweep(sweep, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (name, key, label) in zip(axes, (("TwoStageCL", "eo_gap", "EO gap (Chi)"),
                                             ("ConFair", "tpr_gap_rms", "GAP (Shen)"))):
        pts = sweep[name]
        xs = [100 * m[key] for _, m, _ in pts]
        ys = [100 * m["accuracy"] for _, m, _ in pts]
        ax.errorbar(xs, ys, xerr=[100 * s[key] for _, _, s in pts], yerr=[100 * s["accuracy"] for _, _, s in pts],
                    marker="o", capsize=3)
        for (lam, _, _), x, y in zip(pts, xs, ys):
            ax.annotate(f"λ={lam:g}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xlabel(f"{label} ×100 (lower is fairer)")
        ax.set_ylabel("accuracy ×100")
        ax.set_title(f"{name}: accuracy vs fairness over λ")
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _judge_pair(runs_m, runs_b, key: str, reference: float = 0.0, utility: str = "accuracy"):
    const = "constant_accuracy" if utility == "accuracy" else "constant_balanced_accuracy"
    return judge([r[key] for r in runs_b], [r[key] for r in runs_m], [r[utility] for r in runs_b],
                 [r[utility] for r in runs_m], constant_acc=float(np.mean([r[const] for r in runs_b])),
                 method_majority_share=[r["majority_share"] for r in runs_m], reference=reference,
                 baseline_majority_share=[r["majority_share"] for r in runs_b])


CLAIMS = [("ConFair (Con_*)", "tpr_gap_rms", 0.0, "Shen: ConFair lowers GAP vs CE"),
          ("ConFair (Con_*)", "leakage_h", 0.5, "Shen: ConFair lowers Leak@h vs CE (above chance)"),
          ("TwoStageCL", "eo_gap", 0.0, "Chi: TwoStageCL lowers the EO gap vs CE"),
          ("OneStageCL", "eo_gap", 0.0, "Chi: OneStageCL lowers the EO gap vs CE"),
          ("DiverseAdv", "eo_gap", 0.0, "Chi (baseline): DiverseAdv lowers the EO gap vs CE"),
          ("INLP", "eo_gap", 0.0, "Chi (baseline): per-class INLP lowers the EO gap vs CE")]


def claim_rows(hate, sweep_runs, sweep_attr, bios, polish) -> list[tuple[str, str, Any]]:
    """The papers' claims, each judged on seed-paired runs (method against its baseline)."""
    rows = []
    for tables, protocol, utility in ((hate, "English hate speech, controlled stereotype", "accuracy"),
                                      (polish, "Polish hate speech (published split, class-balanced); utility = "
                                               "balanced accuracy", "balanced_accuracy")):
        for attr, runs in tables.items():
            for method, key, ref, claim in CLAIMS:
                if method in runs and "CE" in runs:
                    rows.append((f"{claim} ({attr})", protocol, _judge_pair(runs[method], runs["CE"], key, ref,
                                                                           utility)))
    two = sweep_runs.get("TwoStageCL", {})
    if len(two) >= 2:
        lo, hi = min(two), max(two)
        rows.append((f"Chi: TwoStageCL's EO gap falls from λ = {lo:g} to λ = {hi:g} ({sweep_attr})",
                     "English controlled stereotype, λ sweep", _judge_pair(two[hi], two[lo], "eo_gap")))
    if bios and "ConFair (Con_*)" in bios and "CE" in bios:
        for method, key, ref, claim in CLAIMS:
            if method in bios and key != "leakage_h":
                rows.append((f"{claim} (Bias in Bios)".replace("EO gap", "GAP"),
                             "Bios samples, frozen MiniLM (small-data stress test)",
                             _judge_pair(bios[method], bios["CE"], "tpr_gap_rms")))
    return rows


def save_raw(path: Path, raw: dict[str, Any]) -> None:
    """Every per-seed report and setting the results file is made from (λ keys as strings)."""
    raw = dict(raw, sweep_runs={m: {repr(lam): r for lam, r in runs.items()} for m, runs in raw["sweep_runs"].items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(raw, indent=1, allow_nan=True))


def load_raw(path: Path) -> dict[str, Any]:
    """The keyword arguments of :func:`write_report` from a file written by :func:`save_raw`."""
    raw = json.loads(Path(path).read_text())
    raw["args"] = SimpleNamespace(**raw["args"])
    raw["sweep_runs"] = {m: {float(lam): r for lam, r in runs.items()} for m, runs in raw["sweep_runs"].items()}
    raw["sweep"] = {m: [(lam, mean, std) for lam, mean, std in pts] for m, pts in raw["sweep"].items()}
    return raw


def write_report(out: Path, *, args, argv, seeds, hate, sweep, sweep_runs, sweep_attr, sweep_seeds, bios, polish,
                 counts, total, views, when) -> None:
    png = out.with_name(out.stem + "_tradeoff.png")
    out.parent.mkdir(parents=True, exist_ok=True)
    plot_sweep(sweep, png, f"English hate speech (controlled stereotype), attribute {sweep_attr}")
    machine = ("--out", "--render", "--data")  # paths of this machine: not part of the regenerating command
    shown = [a for i, a in enumerate(argv) if not (a.startswith(machine) or (i and argv[i - 1] in machine))]
    cmd = " ".join([".venv/bin/python benchmarks/text_fairness.py", *shown])
    first = max(1, math.ceil(args.epochs * 0.6))
    sel = {"dto": "the epoch with the lowest validation DTO (fairlib's distance to the optimum over accuracy and "
                  "1 − GAP; balanced accuracy in place of accuracy for Polish), the same rule for every method, "
                  "chosen among the epochs of a two-step method's final stage (`faircl.cli.runs.FairCheckpoint`)",
           "last": "the last epoch for every method"}[args.select]
    md = ["# Fair text classification at CPU scale\n",
          f"Regenerate: `{cmd}` (from the repository root; data in `../shared/data` or `--data`). "
          f"Measured wall time: **{total / 60:.1f} min** on {when} ({os.cpu_count()} CPU cores, "
          f"one torch thread, {platform.machine()}).\n"]
    md.append("## Summary: do the papers' claims hold here?\n")
    md.append(f"Paired by seed ({len(seeds)} seed(s); the λ row: {len(sweep_seeds)}): CE and the method share the "
              "split, the data order and the initialisation of every seed. Effects are method − baseline, ×100, with "
              "95% t-intervals. Verdict rule (`benchmarks/_stats.py`): *untestable* when the baseline's gap "
              "interval includes 0, its utility is not above a constant predictor's, or it predicts one class for "
              "≥ 95% of test rows itself (a near-constant baseline's small gaps are no bias level to lower); "
              "*degenerate* when the method predicts one class for ≥ 95% of test rows; *holds* when the gap falls with an interval excluding 0 and utility "
              "falls by ≤ 2 points; *does not hold* otherwise. Utility: accuracy on the balanced English test sets, "
              "balanced accuracy on Polish (90% non-hate), accuracy on Bios."
              + (" **Smoke run (`--quick`): one seed, so every verdict is untestable by construction.**"
                 if args.quick else "") + "\n")
    md += summary_table(claim_rows(hate, sweep_runs, sweep_attr, bios, polish))
    md.append("")
    md.append("## Protocol\n")
    md.append(f"- Model selection: {sel}. Every method trains {args.epochs} epochs on the English features, "
              f"{args.polish_epochs} on the (twice as large, oversampled) Polish ones, {args.bios_epochs} on Bios; "
              "two-step methods spend 60% of the epochs in their first stage (English: "
              f"{first}). Methods: {args.methods} (Adv and Con_*^ft, which carry no claim here, with `--methods all`).")
    md.append("- English hate speech, " + CONTROLLED + ". The tweets are released as token ids (the words are "
              "withheld), so no sentence encoder such as MiniLM can read them: every English and Polish run uses "
              f"Shen's frozen bi-GRU `Embed` (`TokenEncoder`, embedding 100, 2 × 128 GRU → 256-d; Shen used "
              f"2 × 200), trained {args.embed_epochs} CE epoch(s) on the train split and frozen; each method trains "
              "`Enc` (2 × 300 tanh) and its heads on the frozen features (batch 256, Adam 1e-3). Two-view methods "
              f"draw their views from {views} EDA copies of every training tweet encoded once.")
    md.append("- Polish hate speech: its own train / valid / test files; the train split is class-balanced by "
              "random oversampling of the hate tweets (for the `Embed` and every method), valid and test are left "
              "as published; tweets with an unknown attribute are left out of every fairness measure.")
    md.append(f"- Bias in Bios samples: 280 real biographies (10 per profession), seeded stratified 55/15/30 split, "
              f"frozen all-MiniLM-L6-v2 features, batch {args.bios_batch}: a **small-data stress test** (84 test "
              "rows over 28 professions), not a replication of the paper's scale.")
    md.append("- Rows per split and (y, a) cell (a = -1: unknown attribute):")
    md += [f"  - {name}: {text}" for name, text in counts.items()]
    md.append("- Hyper-parameters (the papers' defaults, no tuning): ConFair λ = 1 (α = β = ½), τ = 0.01; Con_*^ft "
              "the same contrastive loss, then a logistic-regression head; One/TwoStageCL λ = 1, τ = 0.1 (γ = 0.3), "
              "`L_CS` reduced as in the authors' code (mean over the 2N anchors); Adv λ_adv = 1 with the "
              "discriminator conditioned on y (Chi's EO variant), DiverseAdv 3 discriminators, λ_diff = 100 (the "
              "authors' difference loss, training only the discriminators); INLP 20 per-class logistic-regression "
              "rounds (the equalized-odds variant) on the CE-trained `Enc`.")
    md.append("- Columns are ×100, mean ± std over seeds. GAP = `tpr_gap_rms` (Shen), EO gap = Σ over groups of "
              "|TPR_a − TPR| + |FPR_a − FPR| (positive class only for binary tasks; Chi's code sums both classes: "
              "2× this), Leak@h / Leak@ŷ = linear-SVM accuracy for the attribute on the hidden layer / logits (50 = "
              "chance for balanced groups). `top class` = share of test rows given the most predicted class (a "
              "constant predictor: 100); `epoch` = mean selected epoch (0-based). Tradeoff = Shen's ½N(Acc) + "
              "¼N(1−GAP) + ⅛N(1−Leak@h) + ⅛N(1−Leak@ŷ) over the method means of each table.\n")
    for attr, runs in hate.items():
        md.append(f"\n## (a) English hate speech, controlled stereotype — attribute {attr}\n")
        md += summarise(runs)
    md.append(f"\n## (b) λ sweep — English controlled stereotype, attribute {sweep_attr}\n")
    md.append(f"{len(sweep_seeds)} seed(s) per point. Plot: `{png.name}` (accuracy against the EO gap for "
              "TwoStageCL, against GAP for ConFair).\n")
    md.append(f"![trade-off]({png.name})\n")
    md.append("| method | λ | Acc | GAP | EO gap | Leak@h | Leak@ŷ |")
    md.append("|---|---|---|---|---|---|---|")
    for name, pts in sweep.items():
        for lam, m, s in pts:
            cells = " | ".join(f"{100 * m[k]:.1f} ± {100 * s[k]:.1f}" for k in
                               ("accuracy", "tpr_gap_rms", "eo_gap", "leakage_h", "leakage_yhat"))
            md.append(f"| {name} | {lam:g} | {cells} |")
    if bios:
        md.append("\n## (c) Bias in Bios samples — frozen all-MiniLM-L6-v2 features, 28 professions, gender\n")
        md += summarise(bios)
    for attr, runs in polish.items():
        md.append(f"\n## (d) Polish hate speech (class-balanced training) — attribute {attr}\n")
        md += summarise(runs)
    out.write_text("\n".join(md) + "\n")
