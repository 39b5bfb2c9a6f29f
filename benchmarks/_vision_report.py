"""The results file of ``benchmarks/vision_fairness.py``: verdicts first (each paper's selection rule, then DTO), then
the protocol with its realised association, the tables with the selected epoch per seed, the papers' own metrics,
a GAP-vs-accuracy plot and the time per method. Everything is computed from the raw results (``.json.gz``), so
``--render`` rebuilds the same file without training."""

from __future__ import annotations

import gzip
import json
import math
import os
import platform
import shlex
from pathlib import Path
from typing import Any

import numpy as np
from _stats import RULE, SUMMARY_HEADER, decide_rows

from faircl.eval.compare import (ClaimEvidence, SplitPredictions, Verdict, claim_from_predictions,
                                 confusion_from_rows, degenerate_by_seed, gap_from_confusion, leakage_bias_tests,
                                 paired_bootstrap, paired_seed_comparison)

COMMAND = ".venv/bin/python benchmarks/vision_fairness.py"
CON, RAW = "Con_* (l2 h, Shen)", "Con_* (raw h, fairlib)"
# (who, method, baseline, metric, paper effect as a fraction, how the row is judged)
# Shen et al. 2021, Table 1, Moji (the 80%-stereotype binary protocol copied here): Con_* GAP 39.2 → 12.9 (−26.3),
# Leakage@h 86.0 → 56.0 (−30.0). Chi et al. report effects in figures only (—). finDML: PARADE lowers the gaps "by
# up to 2%" (−2.0). Martin & Ogbuokiri, CelebA: cluster dominance 0.3569 → 0.3398 (−1.7 points).
CLAIMS = [
    ("Shen", CON, "CE (full batch)", "tpr_gap_rms", -0.2629),
    ("Shen", CON, "CE (full batch)", "leakage_h", -0.3000),
    ("Shen (fairlib's variant)", RAW, "CE (full batch)", "tpr_gap_rms", -0.2629),
    ("Shen (fairlib's variant)", RAW, "CE (full batch)", "leakage_h", -0.3000),
    ("Chi", "TwoStageCL", "CE", "eo_gap", None),
    ("Chi", "OneStageCL", "CE", "eo_gap", None),
    ("Chi (λ = 0 control of the fair term)", "TwoStageCL", "TwoStageCL λ=0", "eo_gap", None),
    ("finDML", "PARADE", "DML", "tpr_gap_rms", -0.02),
    ("Martin", "FairSampling (weighted)", "SimCLR", "cluster_dominance", -0.0171),
    ("Martin", "FairSampling (weighted)", "SimCLR", "tpr_gap_rms", None),
    ("Martin", "FairSampling (sampled)", "SimCLR", "cluster_dominance", -0.0171),
    ("Martin", "FairSampling (sampled)", "SimCLR", "tpr_gap_rms", None),
]
EMBEDDING = {"DML": "1-NN", "PARADE": "1-NN", "SimCLR": "probe", "FairSampling (weighted)": "probe",
             "FairSampling (sampled)": "probe"}
WHAT = {"tpr_gap_rms": "GAP", "eo_gap": "the EO gap", "leakage_h": "Leak@h", "cluster_dominance": "cluster dominance"}
NAMES = {"digits": "ColoredDigits two-class", "utkface": "UTKFace White/Black, gender"}
RULE_WORDS = {"paper": "paper's rule", "dto": "DTO"}


# ------------------------------------------------------------------------------------------ claims
def _split(raw: dict, dataset: str, split: str, runs: list[dict[str, Any]]) -> SplitPredictions:
    y, a = raw["labels"][dataset][split]
    return SplitPredictions(y, a, [r[f"{split}_pred"] for r in runs])


def _claim_name(who: str, method: str, base: str, metric: str) -> str:
    what = WHAT[metric]
    if method in EMBEDDING and metric == "tpr_gap_rms":
        what = "the per-(class, group) Recall@1 gap (GAP of the 1-NN label)" if EMBEDDING[method] == "1-NN" else \
            "the linear probe's GAP"
    return f"{who}: {method} lowers {what} vs {base}"


def claim(raw: dict, dataset: str, rule: str, who: str, method: str, base: str, metric: str,
          paper: float | None) -> ClaimEvidence | None:
    """One claim's evidence from the per-seed runs at ``rule`` (``paper`` or ``dto``)."""
    runs = raw["parts"].get(dataset, {}).get(rule, {})
    if method not in runs or base not in runs:
        return None
    b, m = runs[base], runs[method]
    name = f"{_claim_name(who, method, base, metric)} ({dataset})"
    bt, mt, bv = (_split(raw, dataset, "test", b), _split(raw, dataset, "test", m), _split(raw, dataset, "val", b))
    if metric in ("tpr_gap_rms", "eo_gap"):
        return claim_from_predictions(name, bt, mt, bv, metric=metric, paper_effect=paper, num_classes=2,
                                      num_groups=2)
    utility = paired_bootstrap(bt.y, bt.a, bt.preds, mt.preds, "accuracy", num_classes=2, num_groups=2)
    lb, lm = [r[metric] for r in b], [r[metric] for r in m]
    bias: tuple = ()
    if metric == "leakage_h":  # on test and validation where the runs scored the probe on both
        val = [r.get("val_leakage_h") for r in b]
        bias = leakage_bias_tests(lb, bt.a, None if None in val else val, bv.a)
    return ClaimEvidence(name, paired_seed_comparison(lb, lm), utility, paper, bias, degenerate_by_seed(bt, 2),
                         degenerate_by_seed(mt, 2))


def claim_rows(raw: dict, rule: str) -> list[tuple[str, ClaimEvidence]]:
    rows = []
    for dataset in raw["parts"]:
        for who, method, base, metric, paper in CLAIMS:
            ev = claim(raw, dataset, rule, who, method, base, metric, paper)
            if ev is not None:
                how = _rule_of(raw, dataset, rule, method)
                rows.append((f"{NAMES[dataset]}; {how} selection", ev))
    return rows


def _rule_of(raw: dict, dataset: str, rule: str, method: str) -> str:
    runs = raw["parts"][dataset][rule][method]
    return {"shen": "Shen's", "chi": "Chi's", "fixed": "fixed-budget (last epoch)", "dto": "DTO"}[runs[0]["rule"]]


def _row(protocol: str, v: Verdict) -> str:
    paper = "—" if v.paper_effect is None else f"{100 * v.paper_effect:+.1f}"
    bias = "; ".join(t.describe() for t in v.bias) or (
        "no null (the statistic does not involve the attribute); seed-paired t-test")
    cells = [v.name, protocol, paper, v.effect.fmt(), "—" if math.isnan(v.p_holm) else f"{v.p_holm:.3g}",
             f"{100 * v.mde:.1f}" if math.isfinite(v.mde) else "∞",
             f"{100 * v.mde_holds:.1f}" if math.isfinite(v.mde_holds) else "∞", v.utility.fmt(), bias,
             f"**{v.verdict}** ({v.reason}; {v.effect.n_seeds} seeds)"]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def verdict_table(rows: list[tuple[str, ClaimEvidence]]) -> list[str]:
    return SUMMARY_HEADER + [_row(p, v) for p, v in decide_rows(rows)]


# ------------------------------------------------------------------------------------------ tables
def test_metrics(raw: dict, dataset: str, rep: dict[str, Any]) -> dict[str, float]:
    """Accuracy, GAP and EO gap of a run's per-row test predictions (the same numbers the claims use)."""
    y, a = raw["labels"][dataset]["test"]
    counts = confusion_from_rows(y, np.asarray(rep["test_pred"]), a, 2, 2)
    out = {m: float(gap_from_confusion(counts, m)) for m in ("accuracy", "tpr_gap_rms", "eo_gap")}
    out["leakage_h"] = rep.get("leakage_h", math.nan)
    return out


def _ms(values: list[float], scale: float = 100.0) -> str:
    v = np.asarray(values, dtype=float)
    if not np.isfinite(v).any():
        return "—"
    return f"{scale * np.nanmean(v):.1f} ± {scale * np.nanstd(v):.1f}"


def means_table(raw: dict, dataset: str, rule: str) -> list[str]:
    lines = ["| method | prediction | Acc | GAP | EO gap | Leak@h | selected epoch per seed | fit s |",
             "|---|---|---|---|---|---|---|---|"]
    for m, rs in raw["parts"][dataset][rule].items():
        ms = [test_metrics(raw, dataset, r) for r in rs]
        cells = [_ms([x[k] for x in ms]) for k in ("accuracy", "tpr_gap_rms", "eo_gap", "leakage_h")]
        epochs = ", ".join(f"{r['selected_epoch']:.0f}" for r in rs)
        pred = {"1-NN": "1-NN over train z", "probe": "logistic probe on h"}.get(EMBEDDING.get(m, ""), "own head")
        lines.append(f"| {m} | {pred} | " + " | ".join(cells) + f" | {epochs} ({rs[0]['rule']}) | "
                     f"{np.mean([r['fit_seconds'] for r in rs]):.1f} |")
    return lines


def papers_metrics(raw: dict, dataset: str, rule: str) -> list[str]:
    """finDML's and Martin & Ogbuokiri's own numbers (from the models' test reports), paired by seed."""
    runs = raw["parts"][dataset][rule]
    groups = [k.split("/", 1)[1] for k in runs.get("DML", [{}])[0] if k.startswith("recall@1/")]
    out = []
    spec = [("DML", "PARADE", [("recall@1", "Recall@1 (within test)")] +
             [(f"recall@1/{g}", f"Recall@1 {g}") for g in groups] +
             [("recall@1_gap_worst_vs_rest", "Recall@1 gap, worst group vs rest"), ("nmi", "NMI"),
              ("nmi_gap_worst_vs_rest", "NMI gap, worst vs rest")]),
            ("SimCLR", "FairSampling (weighted)", [("cluster_dominance", "cluster dominance"),
                                                   ("cluster_entropy", "cluster entropy (bits)"),
                                                   ("cluster_separation", "cluster separation"),
                                                   ("probe_accuracy", "probe accuracy"), ("probe_auc", "probe AUC")]),
            ("SimCLR", "FairSampling (sampled)", None)]
    last = None
    for base, method, keys in spec:
        keys = keys or last
        last = keys
        if base not in runs or method not in runs:
            continue
        out += [f"| {base} → {method} | {base} | {method} | paired Δ [95% CI] (seeds) |", "|---|---|---|---|"]
        for key, label in keys:
            b = [r.get(key, math.nan) for r in runs[base]]
            m = [r.get(key, math.nan) for r in runs[method]]
            ok = [i for i in range(len(b)) if math.isfinite(b[i]) and math.isfinite(m[i])]
            diff = paired_seed_comparison([b[i] for i in ok], [m[i] for i in ok]).fmt() if len(ok) else "—"
            out.append(f"| {label} | {_ms(b)} | {_ms(m)} | {diff} |")
        out.append("")
    return out


def plot(raw: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(raw["parts"])
    fig, axes = plt.subplots(1, len(datasets), figsize=(6.5 * len(datasets), 4.5), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        for i, (m, rs) in enumerate(raw["parts"][dataset]["paper"].items()):
            ms = [test_metrics(raw, dataset, r) for r in rs]
            x, y = (100 * np.array([v[k] for v in ms]) for k in ("tpr_gap_rms", "accuracy"))
            ax.errorbar(x.mean(), y.mean(), xerr=x.std(), yerr=y.std(), fmt="os^vD"[i // 10], color=f"C{i % 10}",
                        capsize=2, label=m)
        ax.set_xlabel("test GAP ×100 (lower is fairer)")
        ax.set_ylabel("test accuracy ×100")
        ax.set_title(f"{NAMES[dataset]} (each paper's selection; mean ± std over seeds)", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ------------------------------------------------------------------------------------------ raw results
def save_raw(path: Path, raw: dict[str, Any]) -> None:
    """Write the raw results as gzip-compressed JSON (the per-row predictions of every seed make it large)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps(raw, allow_nan=True, separators=(",", ":")).encode(), mtime=0))


def load_raw(path: Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise SystemExit(f"raw results {path} not found (written by a run of benchmarks/vision_fairness.py)")
    return json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())


def command(raw: dict) -> str:
    argv = raw.get("argv", [])
    machine = ("--out", "--render", "--data-dir")
    shown = [a for i, a in enumerate(argv) if not (a.startswith(machine) or (i and argv[i - 1] in machine))]
    return " ".join([COMMAND, *(shlex.quote(a) for a in shown)])


# ------------------------------------------------------------------------------------------ report
def reruns_line(raw: dict) -> str:
    """What was re-run into these results after the main run (``--merge-into``), and whether it reproduced it."""
    return "".join(f" Re-run on {r['when']} (`{command(r)}`, {r['minutes']:.1f} min): "
                   f"{', '.join(r['methods'])} on {', '.join(r['datasets'])}; "
                   f"{r['same_test_predictions']} of {r['runs']} runs reproduce the saved test predictions exactly, "
                   "and the re-run replaces them." for r in raw.get("reruns", []))


def _seeds(raw: dict) -> str:
    seeds = raw["cfg"]["seeds"]
    if isinstance(seeds, list):
        seeds = {d: seeds for d in raw["parts"]}
    return ", ".join(f"{NAMES[d]} {len(seeds[d])}" for d in raw["parts"])


def write_report(out: Path, raw: dict[str, Any]) -> None:
    from _vision_text import ANALYSIS, protocol_lines

    cfg = raw["cfg"]
    secs = raw.get("seconds", {})
    png = out.with_name(out.stem + "_tradeoff.png")
    md = [f"# Fair image representations at CPU scale{' (quick smoke run)' if raw.get('quick') else ''}", "",
          f"Regenerate: `{command(raw)}` (from the repository root; data in `../shared/data` or `--data-dir`).",
          f"Wall time of this run: **{raw['total'] / 60:.1f} min** on {raw['when']} ({os.cpu_count()} CPU cores "
          f"shared with other jobs, one torch thread, {platform.machine()}; "
          + ", ".join(f"{k} {v / 60:.1f} min" for k, v in secs.items()) + ")." + reruns_line(raw), "",
          "## Summary: do the papers' claims hold here? (each paper's own model selection)", "",
          f"Seeds per method: {_seeds(raw)} (training order and initialisation; every seed is scored on the same "
          f"validation and test rows). {RULE} Selection: Shen's claims at Shen's rule (lowest validation GAP "
          "among the epochs within 1 point of the best validation accuracy), Chi's at Chi's (best validation F1), "
          "finDML's and Martin & Ogbuokiri's at their fixed training budget (the last epoch); each baseline at the "
          "same rule as its method. Per-row predictions of the embedding methods: DML / PARADE — the label of the "
          "nearest training embedding (its per-(class, group) accuracy is the per-(class, group) Recall@1 against "
          "the training gallery); SimCLR / FairSampling — a logistic-regression probe on the frozen training "
          "representation. Leakage (Leak@h, a linear SVM for the attribute on the hidden layer, fit on train) is "
          "tested against the majority-group rate on the test and the validation split and its change is a paired "
          "t-test over seeds; cluster "
          "dominance does not involve the attribute, so it has no null and its change is a paired t-test over "
          "seeds (the utility column of those rows is the probe's accuracy, bootstrapped over rows). Paper effects: "
          "Shen's Table 1 (Moji, the 80%-stereotype protocol copied here), finDML's \"up to 2%\", Martin & "
          "Ogbuokiri's CelebA cluster dominance; Chi et al. and Martin & Ogbuokiri give no GAP effect (—). "
          "Values ×100." + (" **Smoke run (`--quick`)**: tiny sizes, not evidence." if raw.get("quick") else ""),
          "", *verdict_table(claim_rows(raw, "paper")), "",
          "## The same claims at the epoch of lowest validation DTO (a second family)", "",
          "DTO (distance of (validation accuracy, 1 − validation GAP) to (1, 1)) picks one epoch per run for every "
          "method, baselines included; Holm runs over this table's claims separately.", "",
          *verdict_table(claim_rows(raw, "dto")), "", *protocol_lines(raw), ""]
    for dataset in raw["parts"]:
        for rule in ("paper", "dto"):
            md += [f"## {NAMES[dataset]} — {RULE_WORDS[rule]} selection", "",
                   "Test split, ×100, mean ± std over seeds; every number is computed from the saved per-row "
                   "predictions. Selected epoch per seed (0-based, final stage), then the rule that chose it.", "",
                   *means_table(raw, dataset, rule), ""]
        md += [f"### {NAMES[dataset]} — the papers' own metrics (fixed budget)", "",
               "finDML: Recall@1 within the test split (self excluded) and NMI of K-means (K = 2) per group, "
               "from `DML.extra_test_metrics`; Martin & Ogbuokiri: K-means (K = 4) cluster balance of the test "
               "embeddings and the probe's accuracy / AUC. Fractions ×100 (entropy, separation ×100 too).", "",
               *papers_metrics(raw, dataset, "paper")]
    png.parent.mkdir(parents=True, exist_ok=True)
    plot(raw, png)
    md += [f"![test GAP vs accuracy]({png.name})", ""]
    if secs:
        md += ["## Time", "", "| method | " + " | ".join(raw["parts"]) + " |", "|---|" + "---|" * len(raw["parts"])]
        methods = list(dict.fromkeys(m for d in raw["parts"].values() for m in d["paper"]))
        for m in methods:
            cells = []
            for d in raw["parts"].values():
                rs = d["paper"].get(m, [])
                cells.append(f"{np.sum([r['fit_seconds'] for r in rs]):.0f} s" if rs else "—")
            md.append(f"| {m} (fit, all seeds) | " + " | ".join(cells) + " |")
        md.append("")
    md += [ANALYSIS, ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(md))
