"""The results file of ``benchmarks/vision_fairness.py``: summary table first, then the per-dataset details.

Everything here is computed from the raw per-seed results (the ``.json`` next to the markdown), so ``--render``
rebuilds the same file without training.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from _stats import RULE, paired_difference, summary_claim, summary_table, t_interval

COMMAND = ".venv/bin/python benchmarks/vision_fairness.py"
# SimCLR-family methods run by the benchmark: label -> FairSamplingSimCLR's ``negatives`` (None = plain SimCLR)
SSL_METHODS = {"SimCLR": None, "FairSampling (weighted)": "weighted", "FairSampling (sampled)": "sampled"}
GROUPS = {"utkface": ["White", "Black", "Asian", "Indian", "Others"], "digits": ["red", "green"]}
# Largest class share of each probe target on test, bounding a constant predictor's accuracy (UTKFace: gender,
# balanced by construction of the subset; digits: ten classes of 9.9-10.2% each).
CONSTANT_PROBE = {"utkface": 0.5, "digits": 0.11}


# ------------------------------------------------------------------------------------------------ raw results
def load_raw(path: Path, settings: Callable[[bool], dict]) -> dict:
    """Raw results of a previous run. Files written before the settings were stored in the JSON (3 seeds, green
    digits kept at 10 %, 12 DML epochs, FairSampling in the weighted mode only) get those settings back."""
    raw = json.loads(Path(path).read_text())
    for by_method in raw["ssl"].values():
        if "FairSamplingSimCLR" in by_method:
            by_method["FairSampling (weighted)"] = by_method.pop("FairSamplingSimCLR")
    if "cfg" not in raw:
        cfg = settings(raw["quick"])
        n = max([len(runs) for part in (raw["dml"], raw["ssl"]) for d in part.values() for runs in d.values()] or [1])
        cfg.update(seeds=list(range(n)), seeds_why=f"{n} seed(s), as recorded by an earlier version of the script",
                   digits_dml_epochs=1 if raw["quick"] else 12)
        cfg["digits"]["ratio"] = 0.9
        raw["cfg"] = cfg
    return raw


def _pct_kept(ratio: float) -> str:
    return f"{100 * (1 - ratio):.0f} %"


def titles(cfg: dict) -> dict[str, str]:
    return {"utkface": "UTKFace subset — target age bins (<20, 20–39, 40–59, ≥60), attribute race; train keeps "
                       f"{_pct_kept(cfg['utk']['imbalance_ratio'])} of Black and Indian rows",
            "digits": "ColoredDigits — target digit (10 classes), attribute colour (red / green, independent of the "
                      f"digit); train keeps {_pct_kept(cfg['digits']['ratio'])} of green rows"}


# ------------------------------------------------------------------------------------------------ tables
def _values(runs: list[dict[str, float]], key: str) -> np.ndarray:
    vals = np.array([r.get(key, float("nan")) for r in runs], dtype=np.float64)
    return vals[np.isfinite(vals)]


def _stat(runs: list[dict[str, float]], key: str) -> tuple[float, float]:
    vals = _values(runs, key)
    if not len(vals):
        return float("nan"), float("nan")
    return float(vals.mean()), float(vals.std(ddof=1)) if len(vals) > 1 else 0.0


def _fmt(mean: float, std: float) -> str:
    return "n/a" if math.isnan(mean) else f"{mean:.3f} ± {std:.3f}"


def _table(results: dict[str, list[dict[str, float]]], rows: list[tuple[str, str]]) -> str:
    methods = list(results)
    lines = ["| metric | " + " | ".join(methods) + " |", "|---|" + "---:|" * len(methods)]
    for label, key in rows:
        lines.append(f"| {label} | " + " | ".join(_fmt(*_stat(results[m], key)) for m in methods) + " |")
    return "\n".join(lines)


def _dml_rows(group_names: list[str]) -> list[tuple[str, str]]:
    rows = [("Recall@1 ↑", "recall@1"), ("NMI ↑", "nmi"), ("U_KL ↓", "ukl")]
    rows += [(f"Recall@1 {g}", f"recall@1/{g}") for g in group_names]
    rows += [(f"random-neighbour Recall@1 {g}", f"chance@1/{g}") for g in group_names]
    rows += [("Recall@1 gap minority ↓", "recall@1_gap_minority"),
             ("Recall@1 gap worst-vs-rest ↓", "recall@1_gap_worst_vs_rest"),
             ("NMI gap minority ↓", "nmi_gap_minority"), ("NMI gap worst-vs-rest ↓", "nmi_gap_worst_vs_rest"),
             ("U_KL gap minority ↓", "ukl_gap_minority"), ("U_KL gap worst-vs-rest ↓", "ukl_gap_worst_vs_rest"),
             ("LR accuracy ↑", "lr/accuracy"), ("LR accuracy gap minority ↓", "lr/accuracy_gap_minority"),
             ("LR accuracy gap worst-vs-rest ↓", "lr/accuracy_gap_worst_vs_rest"),
             ("LR macro precision gap minority ↓", "lr/precision_gap_minority"),
             ("LR macro recall gap minority ↓", "lr/recall_gap_minority"),
             ("mean abs corr(φ_targ, φ_SA)", "head_correlation")]
    return rows


# Arrows as in Martin & Ogbuokiri's Table 1: dominance ↓, representation entropy ↓, separation ↑ (a higher entropy
# of the cluster sizes means more even clusters; the paper's text reads its small entropy fall as a trade-off).
SSL_ROWS = [("cluster dominance ↓", "cluster_dominance"), ("cluster entropy ↓ (paper's Table 1)", "cluster_entropy"),
            ("cluster separation ↑", "cluster_separation"), ("probe accuracy ↑", "probe_accuracy"),
            ("probe F1 ↑", "probe_f1"), ("probe AUC ↑", "probe_auc"),
            ("online head accuracy ↑", "accuracy"), ("online head worst-group accuracy ↑", "worst_group_accuracy")]


def _paired(results: dict[str, list[dict[str, float]]], key: str, base: str, new: str, up_is_better: bool) -> str:
    """``key``: baseline mean, method mean and the seed-paired difference with its 95% t-interval."""
    pairs = [(b[key], m[key]) for b, m in zip(results[base], results[new])
             if math.isfinite(b.get(key, math.nan)) and math.isfinite(m.get(key, math.nan))]
    if not pairs:
        return f"`{key}`: not measured"
    b, m = np.array(pairs).T
    d = paired_difference(m, b)
    if d.n < 2:
        word = "one seed, no interval"
    elif not d.excludes_zero():
        word = "interval includes 0"
    else:
        word = "better" if (d.mean > 0) == up_is_better else "worse"
    return (f"`{key}`: {base} {b.mean():.3f} → {new} {m.mean():.3f}, paired Δ {d.fmt(scale=1.0, digits=3)} "
            f"({word}; n = {d.n})")


def _baseline_gap(runs: list[dict[str, float]], key: str) -> str:
    vals = _values(runs, key)
    if not len(vals):
        return "not measured"
    i = t_interval(vals)
    if i.n < 2:
        verdict = "one seed, no interval"
    else:
        verdict = "yes" if i.lo > 0 else ("not established (interval includes 0)" if i.hi >= 0 else "no (reversed)")
    return f"{verdict} ({i.fmt(scale=1.0, digits=3)}, 95% interval, n = {i.n})"


def _plot(results: dict[str, dict[str, list[dict[str, float]]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.2), squeeze=False)
    for ax, (dataset, by_method) in zip(axes[0], results.items()):
        names = GROUPS[dataset]
        width = 0.8 / len(by_method)
        for i, (method, runs) in enumerate(by_method.items()):
            stats = [_stat(runs, f"recall@1/{g}") for g in names]
            ax.bar(np.arange(len(names)) + i * width, [s[0] for s in stats], width, yerr=[s[1] for s in stats],
                   label=method, capsize=2)
        ax.set_xticks(np.arange(len(names)) + width * (len(by_method) - 1) / 2, names)
        ax.set_title(f"{dataset}: per-group Recall@1")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _timing_table(timings: dict[str, float]) -> list[str]:
    by: dict[str, list[float]] = {}
    for key, sec in timings.items():
        by.setdefault(key.rsplit("/", 1)[0], []).append(sec)
    lines = ["| dataset / method | seeds | seconds per seed (mean) | seconds (all seeds) |", "|---|---:|---:|---:|"]
    lines += [f"| {k} | {len(v)} | {np.mean(v):.0f} | {np.sum(v):.0f} |" for k, v in by.items()]
    return lines


# ------------------------------------------------------------------------------------------------ summary
PAPER = {"parade": -0.02, "cluster_dominance": -0.0171, "cluster_entropy": -0.0393}


def vision_summary(dml: dict, ssl: dict, cfg: dict, quick: bool) -> list[str]:
    """The summary table (claim — protocol — baseline gap — effect ± 95% CI — utility change — verdict)."""
    rows = []
    for dataset, results in dml.items():
        base, new = list(results)
        b, m = results[base], results[new]
        for key, util, what in (("recall@1_gap_minority", "recall@1", "Recall@1"), ("nmi_gap_minority", "nmi", "NMI")):
            rows.append((f"{dataset}, induced imbalance; utility = {util}", summary_claim(
                f"finDML: PARADE lowers the {what} gap of the shrunk groups ({dataset})", [r[key] for r in b],
                [r[key] for r in m], [r[util] for r in b], [r[util] for r in m], paper_effect=PAPER["parade"])))
    for dataset, results in ssl.items():
        b = results["SimCLR"]
        for variant in [k for k in results if k != "SimCLR"]:
            m = results[variant]
            for key, what in (("cluster_dominance", "cluster dominance"),
                              ("cluster_entropy", "cluster entropy (the paper's ↓)")):
                rows.append((f"{dataset}, induced imbalance; utility = probe accuracy", summary_claim(
                    f"Martin: {variant} lowers {what} vs SimCLR ({dataset})", [r[key] for r in b],
                    [r[key] for r in m], [r["probe_accuracy"] for r in b], [r["probe_accuracy"] for r in m],
                    paper_effect=PAPER[key])))
    if not rows:
        return []
    n = len(cfg["seeds"])
    return ["## Summary: do the papers' claims hold here?", "",
            f"Seeds: {n} ({cfg['seeds_why']}). Model selection, the same for every method: {cfg['selection']}. "
            "Every method of a comparison sees the same seeds (data split, imbalance draw, initialisation) and the "
            "same epoch budget.", "",
            RULE + " These runs saved per-seed summaries only (no per-row predictions or embeddings), so the "
            "baseline's bias is **not checked against a null** here and the changes are paired t-tests over the "
            "seeds (test-row sampling not included). Paper effects: finDML reports PARADE reducing gaps \"by up to "
            "2%\" (−2.0 used for both gaps); Martin & Ogbuokiri's CelebA row (cluster dominance 0.3569 → 0.3398: "
            "−1.7 points; entropy 1.9463 → 1.9070 bits: −3.9 ×100). Values ×100 (entropy in bits ×100)."
            + (" Smoke run: one seed, so no verdict can hold." if quick else ""),
            "", *summary_table(rows)]


# ------------------------------------------------------------------------------------------------ report
def write_report(out: Path, raw: dict) -> None:
    cfg, dml, ssl, quick, total = raw["cfg"], raw["dml"], raw["ssl"], raw["quick"], raw["seconds"]
    names = titles(cfg)
    d, u = cfg["digits"], cfg["utk"]
    md = [f"# Vision fairness benchmark{' (quick smoke run)' if quick else ''}", "",
          f"Regenerate: `{raw.get('command', COMMAND + (' --quick' if quick else ''))}` (from the repository root).",
          f"Wall time of this run: {total / 60:.1f} min on this machine (2 shared CPU cores, one torch thread).", "",
          *vision_summary(dml, ssl, cfg, quick), "",
          "## Scale and protocol", "",
          f"- Seeds: {cfg['seeds']} (model initialisation, data split and the imbalance draw); {cfg['seeds_why']}. "
          "Tables: mean ± sample std over the seeds; claims: seed-paired differences with 95% t-intervals.",
          f"- Model selection: {cfg['selection']}, for every method alike (as finDML and Martin & Ogbuokiri report "
          "fixed training budgets); the validation split is not used.",
          f"- ColoredDigits: scikit-learn's 8×8 digits upsampled to {d['size']}×{d['size']}, colour independent of "
          f"the digit (bias {d['bias']}), {_pct_kept(d['ratio'])} of the green train rows kept (green ≈ "
          f"{100 * (1 - d['ratio']) / (2 - d['ratio']):.0f} % of the train split; val/test balanced); "
          f"encoder `conv` (3 conv blocks, width {cfg['digits_encoder']['encoder_kwargs']['width']}, 128-d); "
          f"DML/PARADE {cfg['digits_dml_epochs']} epochs, SimCLR {cfg['digits_ssl_epochs']} epochs (FairSampling: "
          f"{cfg['digits_pretrain']} SimCLR epochs, then the fair phase).",
          f"- UTKFace subset (3,000 faces, 300 per gender × race cell): {u['image_size']}×{u['image_size']} px, "
          f"seeded 70/10/20 split stratified by (class, race), Black and Indian kept at "
          f"{_pct_kept(u['imbalance_ratio'])} in train; encoder `conv` (width "
          f"{cfg['utk_encoder']['encoder_kwargs']['width']}, 128-d) trained from scratch; DML/PARADE "
          f"{cfg['utk_dml_epochs']} epochs (target: age bins), SimCLR {cfg['utk_ssl_epochs']} epochs (probe target: "
          f"gender; FairSampling: {cfg['utk_pretrain']} SimCLR epochs first).",
          "- Not the papers' scale: both papers use a ResNet-50 backbone (finDML, from ImageNet weights; Martin & "
          "Ogbuokiri, SimCLR for 30 epochs at batch 256) on CelebA / CheXpert-size data. resnet18 at 32 px measured "
          "about 7 s per 64-image step on this shared machine (the small conv encoder 0.2 s), which does not fit "
          "the time budget; the configs in `configs/{dml,parade,simclr,fair_sampling_simclr}/utkface.yaml` use "
          "resnet18 at 64 px for real runs.",
          f"- DML: margin loss (β₀ = 1.2, γ = 0.2) + distance-weighted mining, SPC-n batches (UTKFace 4 classes × 16, "
          f"digits 10 × 6), embedding 128-d, Adam lr 1e-3. PARADE: same target objective, α_SA = "
          f"{cfg['parade']['lambda_sa']}, ρ = {cfg['parade']['lambda_sep']}.",
          "- finDML evaluation (`faircl.eval.findml.evaluate_embeddings`) on the test embeddings `z`: Recall@1, NMI "
          "(K-means, K = classes), U_KL; gaps: `minority` = size-weighted mean over the other groups − mean over the "
          "shrunk groups (positive = the minoritised groups are behind; for U_KL, lower is better so the sign is "
          "flipped), `worst-vs-rest` = rest − worst group. Downstream: logistic regression on frozen train "
          "embeddings, trained on the *balanced* train split (before the induced imbalance) embedded by the model "
          "trained on the imbalanced one (finDML §6.2). `random-neighbour Recall@1` = Σ_c p(c|group)·p(c) on the "
          "test split: the Recall@1 of an embedding that carries no information, per group.",
          "- SimCLR part: NT-Xent τ = 0.5, projection 128-d, K = 4, ε = 0.1, the same batches (128) for all three "
          "methods. FairSampling (weighted): the negatives of the NT-Xent denominator weighted by w(c)·distance (the "
          "in-batch expectation of the paper's draw); FairSampling (sampled): Algorithm 1 line 13 as written, one "
          "negative per anchor drawn ∝ w(c)·distance from the other clusters. `cluster_*` = K-means (K = 4) of the "
          "test embeddings `z`: dominance (largest cluster share; 0.25 is perfectly balanced), entropy of the "
          "cluster sizes (bits), separation (mean distance between centroids); `probe_*` = logistic regression on "
          "frozen `h`.", ""]
    if dml:
        md += ["## PARADE vs margin + distance-weighted DML (finDML)", ""]
        for dataset, results in dml.items():
            base, new = list(results)
            md += [f"### {names[dataset]}", "", _table(results, _dml_rows(GROUPS[dataset])), "",
                   f"- imbalance creates a Recall@1 gap against the shrunk groups under the baseline (finDML §6.1): "
                   f"{_baseline_gap(results[base], 'recall@1_gap_minority')}",
                   f"- the gap reaches a downstream LR trained on the *balanced* train split (finDML §6.2): "
                   f"{_baseline_gap(results[base], 'lr/accuracy_gap_minority')}",
                   f"- worst-served group under the baseline (mean Recall@1): "
                   f"{min(GROUPS[dataset], key=lambda g: _stat(results[base], f'recall@1/{g}')[0])}"]
            for key, up in (("recall@1_gap_minority", False), ("nmi_gap_minority", False),
                            ("ukl_gap_minority", False), ("lr/accuracy_gap_minority", False),
                            ("recall@1", True), ("nmi", True), ("lr/accuracy", True)):
                md.append(f"- {_paired(results, key, base, new, up)}")
            md.append("")
        plot = out.with_name(out.stem + "_recall.png")
        _plot(dml, plot)
        md += [f"![per-group Recall@1]({plot.name})", ""]
    if ssl:
        md += ["## FairSamplingSimCLR (weighted and sampled negatives) vs SimCLR", ""]
        for dataset, results in ssl.items():
            md += [f"### {names[dataset].split(' — ')[0]} — probe target "
                   f"{'gender' if dataset == 'utkface' else 'digit'}; train imbalance as above", "",
                   _table(results, SSL_ROWS), ""]
            for variant in [k for k in results if k != "SimCLR"]:
                md.append(f"- **{variant}** vs SimCLR, paired by seed:")
                for key, up in (("cluster_dominance", False), ("cluster_entropy", False),
                                ("cluster_separation", True), ("probe_accuracy", True), ("probe_f1", True),
                                ("probe_auc", True)):
                    md.append(f"  - {_paired(results, key, 'SimCLR', variant, up)}")
            md.append("")
    if raw.get("timings"):
        md += ["## Time per run", "", *_timing_table(raw["timings"]), ""]
    md += [ANALYSIS, ""]
    out.write_text("\n".join(md))


ANALYSIS = """## How to read the results

The claims under test: (finDML) DML trained on imbalanced data has subgroup gaps in Recall@1 / NMI / U_KL that carry
over to downstream classifiers even when these are trained on balanced data, and PARADE narrows the gaps at a small
cost in overall performance; (Martin & Ogbuokiri) fairness-driven negative sampling makes the K-means clusters of the
representation more balanced (Table 1: dominance ↓, entropy ↓, separation ↑) at equal linear-probe utility. Every
number and verdict above is recomputed from the per-seed JSON; the notes below say what the comparisons can and
cannot show, not what a particular run found.

- **ColoredDigits** is the controlled test of finDML's diagnosis: the colour carries no information about the digit,
  so any Recall@1 gap of the green rows comes from their scarcity in train (the conv filters are learned almost only
  on red inputs, and a green digit lights a different input channel). PARADE de-correlates its two heads; it does not
  give the backbone more green examples. finDML gives the same reason for PARADE widening the gap of its rarest group
  (skin tone VI, < 1 % of CelebA): too few examples to learn similarity from anything but the de-correlated attribute.
- **UTKFace**: the subset balances gender × race, not age, so each group's Recall@1 also depends on its age mix; the
  random-neighbour rows give each group's floor. A gap against the shrunk races is evidence of the imbalance only when
  it exceeds the difference of these floors.
- **Fairness-driven sampling**: the weights w(c) = max(0, 1/K − p(c)) + ε push anchors away from members of
  under-represented clusters, which can spread the centroids (separation) without moving rows between clusters, so a
  fresh K-means may find clusters of similar sizes. The sampled mode contrasts each anchor with a single drawn
  negative (the paper's Algorithm 1); the weighted mode uses the whole weighted batch, its in-batch expectation, with
  a much lower-variance gradient. Both variants and SimCLR share the seed, the epoch budget and the number of SimCLR
  epochs before the fair phase.
- Scale: small conv encoders trained from scratch for a few epochs on CPU, not the papers' ResNet-50; a claim that
  does not hold here is not refuted at the papers' scale."""
