"""Results file of ``benchmarks/embedding_fairness.py``: the verdict table first, then the original encoder's bias
against its item-level null (:mod:`faircl.eval.embedding_claims`), the per-source CCED, every metric over seeds, SEAT / Bias-IR
details, CCD's bandwidth under the median and the literal variance rule, training."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from _stats import RULE as SHARED_RULE
from _stats import SUMMARY_HEADER, decide_rows, summary_claim

from faircl.eval.embedding_claims import SPLIT_SEED, evidence, null_table

# (claim, metric key, ideal value or None (lower is better), protocol)
CLAIMS = (
    ("CCD lowers CCED on held-out sources", "cced_heldout", None,
     "CCED ×100 on CDA tuples of {heldout} (sources never trained on)"),
    ("CCD lowers CCED in distribution", "cced_in", None,
     "CCED ×100 on unseen tuples of the training sources {train}"),
    ("CCD lowers the mean SEAT |effect size|", "seat_mean_abs_effect_size", None,
     "mean |d| ×100 over the 6 gender SEAT tests (weat6/6b/7/7b/8/8b), {seat}"),
    ("CCD lowers the Bias-IR deviation", "bias_ir_deviation", None,
     "Grep-BiasIR, {bias_ir}: mean over categories of |male share of the top 10 − 0.5|, ×100"),
    ("CCD moves the CrowS-Pairs score toward 50", "crows_pairs_embedding_stereo_score", 50.0,
     "|score − 50| in points, embedding-similarity variant, {crows}"),
    ("CCD moves the StereoSet ss toward 50", "stereoset_embedding_ss", 50.0,
     "|ss − 50| in points, embedding-similarity variant, {stereoset}"),
)
METRICS = (("cced_heldout", "↓"), ("cced_in", "↓"), ("seat_mean_abs_effect_size", "↓"), ("bias_ir_deviation", "↓"),
           ("bias_ir_male_ratio", "→0.5"), ("crows_pairs_embedding_stereo_score", "→50"),
           ("stereoset_embedding_ss", "→50"), ("stereoset_embedding_lms", "↑"), ("stereoset_embedding_icat", "↑"),
           ("utility_accuracy", "↑ (kept)"), ("rep_distance", "neutral drift"))
MAX_DROP = 0.02

# the paper's change for CCD-CDA on RoBERTa (Tables 3, 5, 6; ×100 in the table): SEAT avg |d| 0.94 → 0.60, StereoSet
# gender |ss − 50| 16.17 → 10.29, CrowS-Pairs |ss − 50| 10.15 → 0.57, Bias-IR AVG-DEV 0.16 → 0.16, CCED 0.438 → 0.166
# (GLUE average 76.9 → 76.7); fractions here
PAPER = {"cced_heldout": -0.272, "cced_in": -0.272, "seat_mean_abs_effect_size": -0.34, "bias_ir_deviation": 0.0,
         "crows_pairs_embedding_stereo_score": -0.0958, "stereoset_embedding_ss": -0.0588}

RULE = [
    SHARED_RULE,
    "Here the baseline is the original encoder and the method CCD, paired by seed. **Is there a bias to remove?** "
    "The original's score is compared with an item-level null (`faircl.eval.item_nulls`; the section after the "
    "summary gives every number): CrowS-Pairs and StereoSet ss, the exact binomial null of no preference "
    "(|share − 50| against the 95th percentile of |K/n − 50| with K ~ Binomial(n, ½)); SEAT, the permutation of "
    "each test's target *words* between X and Y (all sentences of a word move together: template sentences of one "
    "word are not exchangeable), mean |d| over the 6 tests; Bias-IR, the gender labels permuted within each "
    "document's three wordings (a retriever that ranks a document's male and female wording at random). It must be "
    "real on the test items **and** on a second sample: SEAT's word-level tests of the same names; for CrowS-Pairs, "
    "StereoSet and Bias-IR, whose items are one set each, a validation half split off once "
    f"(seed {SPLIT_SEED}; Bias-IR within categories) — these claims are judged on the test half only. CCED has no "
    "null (the row says why) and is decided on the change alone. **The change** is paired by seed with the "
    "benchmark items' bootstrap nested inside (seeds × items, 2,000 resamples of the items shared by every seed and "
    "both models; SEAT resamples target words), except CCED, whose tuples every seed draws anew (the seeds' spread "
    "already holds their sampling: paired t-test over seeds). Paper effects: CCD-CDA on RoBERTa (the paper's "
    "Tables 3, 5, 6), the variant closest to the offline CDA tuples used here. For the scores whose ideal is 50 "
    "(CrowS-Pairs, StereoSet ss) the judged quantity is the distance |x − 50|, so a move past 50 is not counted as a "
    "gain; Bias-IR is judged by its deviation |male share − 0.5| (per category, then averaged). The utility row is a "
    "non-inferiority test outside the Holm family: *holds* when the lower end of the interval of the accuracy change "
    "is ≥ −2 points. Every value in the table is ×100 (CCED and SEAT |d| are not percentages: ×100 only for "
    "legibility). The utility column is the change of the Bias-in-Bios profession probe's accuracy (points).",
]


def _vals(runs, model: str, key: str) -> list[float]:
    return [float(r["models"][model][key]) for r in runs]


def _ms(xs: list[float], digits: int = 4) -> str:
    if any(not math.isfinite(x) for x in xs):
        return "nan"
    if len(xs) < 2:
        return f"{xs[0]:.{digits}f}"
    return f"{np.mean(xs):.{digits}f} ± {np.std(xs, ddof=1):.{digits}f}"


def utility_row(name: str, protocol: str, base_acc: list[float], new_acc: list[float]) -> str:
    """The non-inferiority row (lower 95% bound of the accuracy change ≥ −2 points), in the summary's columns."""
    from faircl.eval.compare import paired_seed_comparison

    e = paired_seed_comparison(base_acc, new_acc)
    if e.lo >= -MAX_DROP:
        word, why = "holds", "the accuracy change's lower 95% bound is above −2 points"
    elif e.hi < -MAX_DROP:
        word, why = "does not hold", "the accuracy falls by more than 2 points"
    else:
        word, why = "inconclusive", "the accuracy change's interval straddles −2 points"
    return (f"| {name} | {protocol} | -0.2 (GLUE average) | {e.fmt()} | — | — | — | {e.fmt()} | — | **{word}** ({why}; "
            f"{e.n_seeds} seeds) |")


def _row(protocol: str, v, bias_text: str) -> str:
    paper = "—" if v.paper_effect is None else f"{100 * v.paper_effect:+.1f}"
    bias = "; ".join(t.describe() for t in v.bias) or bias_text
    cells = [v.name, protocol, paper, v.effect.fmt(), "—" if math.isnan(v.p_holm) else f"{v.p_holm:.3g}",
             f"{100 * v.mde:.1f}" if math.isfinite(v.mde) else "∞",
             f"{100 * v.mde_holds:.1f}" if math.isfinite(v.mde_holds) else "∞", v.utility.fmt(), bias,
             f"**{v.verdict}** ({v.reason}; {v.effect.n_seeds} seeds)"]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def claim_rows(runs, meta) -> list[tuple[str, str, object, dict]]:
    """(claim name, protocol, ClaimEvidence, evidence dict) of every claim whose values are finite."""
    from faircl.eval.compare import ClaimEvidence, paired_seed_comparison

    head, fill, a = meta["headline"], _fill(meta), meta["args"]
    utility = paired_seed_comparison(_vals(runs, "original", "utility_accuracy"), _vals(runs, head, "utility_accuracy"))
    has_items = all("items" in r["models"][m] for r in runs for m in ("original", head))
    n_perm = max(1000, int(a.permutations)) if not a.quick else int(a.permutations)
    n_boot = 200 if a.quick else 2000
    out = []
    for claim, key, ideal, protocol in CLAIMS:
        b, m = _vals(runs, "original", key), _vals(runs, head, key)
        if not all(math.isfinite(x) for x in b + m):
            continue
        name = f"{claim} ({head.removeprefix('CCD ')})"
        if has_items:
            ev = evidence(runs, head, key, n_perm, n_boot, 20 if a.quick else 1000)
            if ev["items"] and key != "seat_mean_abs_effect_size":
                protocol = protocol + "; judged on the test half, " + ev["items"][0]
            out.append((name, protocol.format(**fill),
                        ClaimEvidence(name, ev["effect"], utility, PAPER[key], ev["bias"]), ev))
            continue
        if ideal is not None:  # distance from the ideal, in fractions (×100 in the table = points)
            b, m = [abs(x - ideal) / 100 for x in b], [abs(x - ideal) / 100 for x in m]
        ev = {"bias": (), "bias_text": "not checked (this run saved no per-item outputs)", "items": None}
        out.append((name, protocol.format(**fill), summary_claim(name, b, m, _vals(runs, "original",
                    "utility_accuracy"), _vals(runs, head, "utility_accuracy"), paper_effect=PAPER[key]), ev))
    return out


def summary_lines(runs, meta, rows=None) -> list[str]:
    head = meta["headline"]
    fill = _fill(meta)
    rows = claim_rows(runs, meta) if rows is None else rows
    decided = decide_rows([(p, ev) for _, p, ev, _ in rows], margin=MAX_DROP) if rows else []
    table = list(SUMMARY_HEADER) + [_row(p, v, extra.get("bias_text", ""))
                                    for (p, v), (_, _, _, extra) in zip(decided, rows)]
    base_acc, new_acc = _vals(runs, "original", "utility_accuracy"), _vals(runs, head, "utility_accuracy")
    return table + [utility_row(f"CCD keeps utility ({head.removeprefix('CCD ')})",
                                f"Bias-in-Bios profession probe, {fill['probe']}; baseline column = the original's "
                                "accuracy", base_acc, new_acc)]


def _fill(meta) -> dict[str, str]:
    a, ev = meta["args"], meta["eval_sizes"]
    return {"heldout": ", ".join(a.heldout_list), "train": ", ".join(a.train_list),
            "seat": f"{ev['seat']} sentences in all", "bias_ir": f"{ev['bias_ir']} queries",
            "crows": f"{ev['crows']} gender pairs", "stereoset": f"{ev['stereoset']} gender intrasentence items",
            "probe": f"{meta['n_probe']} biographies, {meta['n_classes']} professions, logistic regression, 5-fold"}


def write_report(path: Path, runs: list[dict], meta: dict) -> None:
    a = meta["args"]
    head = meta["headline"]
    models = list(runs[0]["models"])
    cmd = meta["command"]
    n_seeds = len(runs)
    seeds = ", ".join(str(r["seed"]) for r in runs)
    c0 = runs[0]["counts"]
    rows = claim_rows(runs, meta)
    lines = ["# Embedding fairness: all-MiniLM-L6-v2 before and after CCD", "",
             f"Regenerate: `{cmd}` (took {meta['total'] / 60:.1f} min on this machine: 2 shared CPU cores, "
             f"{a.threads} torch thread; MiniLM fp32 encoding speed measured at the start: "
             f"{meta['speed']['fp32']:.0f} sentences/s).", ""]
    if a.quick:
        lines += ["> **Smoke run (`--quick`)**: tiny scale, not evidence for or against any claim.", ""]
    lines += ["## Summary: do the CCD paper's claims hold here?", "",
              f"{n_seeds} seed{'s' if n_seeds > 1 else ''} ({seeds}): time — the whole run must fit in about 35 "
              "minutes on this 2-core machine with one torch thread, and each seed costs a CCD training run and a "
              "full evaluation. Each seed draws the training, validation and in-distribution test tuples, their "
              "order and the held-out-source sample; the original encoder is scored on exactly the same tuples and "
              "benchmark subsets (its SEAT, Bias-IR, CrowS/StereoSet and utility scores do not depend on the seed). "
              f"CCD ({head.removeprefix('CCD ')}) trains on {sum(c0['train'].values())} tuples of the training sources "
              f"({', '.join(a.train_list)}) per seed and is judged on tuples of sources it never saw "
              f"({', '.join(a.heldout_list)}). all-MiniLM-L6-v2 has no masked-LM head, so CrowS-Pairs and StereoSet "
              "are the **embedding-similarity variants** (`faircl/eval/embedding_bias.py`), not the paper's "
              "masked-LM scores.", "", *RULE, "",
              *summary_lines(runs, meta, rows), ""]
    lines += null_table([(name, extra) for name, _, _, extra in rows])
    lines += _sources(runs, meta) + _cced_table(runs, models, meta) + _metrics_table(runs, models)
    lines += _seat_bias_ir(runs, models) + _bandwidth(runs) + _training(runs, meta) + _notes(meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _sources(runs, meta) -> list[str]:
    a = meta["args"]
    c0 = runs[0]["counts"]
    lines = ["## Tuples: sources, roles and counts", "",
             "CDA tuples (male, female, neutral) made offline from each corpus's sentences (5–40 words), "
             "polarity-checked (eq. 6; failures dropped), deduplicated; a tuple already made from an earlier source is "
             "dropped from the later one (the polarity counts in the notes are before deduplication: BEC-Pro, WinoBias "
             "and WinoGender hold each sentence in both genders, which give the same tuple). Counts per seed are the "
             "same for every seed.", "",
             "| source | corpus | role | tuples available | train / seed | validation / seed | test / seed |",
             "|---|---|---|---:|---:|---:|---:|"]
    for s in a.train_list + a.heldout_list:
        train = s in a.train_list
        cells = ([c0["train"][s], c0["val"][s], c0["test_in"][s]] if train else ["—", "—", c0["test_out"][s]])
        lines.append(f"| {s} | {meta['sources'][s]} | {'training' if train else '**held out**'} | "
                     f"{meta['pools'][s]} | " + " | ".join(str(c) for c in cells) + " |")
    tot = {k: sum(v.values()) for k, v in c0.items()}
    lines += ["", f"Per seed: {tot['train']} training tuples (one epoch, batch {a.batch_size} → "
              f"{tot['train'] // a.batch_size} steps), {tot['val']} validation and {tot['test_in']} in-distribution "
              f"test tuples (training sources), {tot['test_out']} held-out-source test tuples.", ""]
    return lines


def _cced_table(runs, models, meta) -> list[str]:
    a = meta["args"]
    lines = ["## CCED by source (mean ± sd over seeds; lower is fairer)", "",
             "| source | role | " + " | ".join(models) + " |", "|---|---|" + "---:|" * len(models)]
    for key, label, role in (("cced_heldout", "**all held-out sources**", "held out"),
                             ("cced_in", "**all training sources** (unseen tuples)", "in distribution")):
        lines.append(f"| {label} | {role} | " + " | ".join(_ms(_vals(runs, m, key)) for m in models) + " |")
    for s in a.heldout_list + a.train_list:
        role = "held out" if s in a.heldout_list else "in distribution"
        lines.append(f"| {s} | {role} | " + " | ".join(_ms(_vals(runs, m, f"cced/{s}")) for m in models) + " |")
    return lines + [""]


def _metrics_table(runs, models) -> list[str]:
    lines = ["## Every metric (mean ± sd over seeds)", "",
             "| metric | " + " | ".join(models) + " |", "|---|" + "---:|" * len(models)]
    for key, arrow in METRICS:
        if all(key in r["models"][m] for r in runs for m in models):
            lines.append(f"| {key} {arrow} | " + " | ".join(_ms(_vals(runs, m, key)) for m in models) + " |")
    lines += ["", "`rep_distance`: mean ‖f(S^n) − f_orig(S^n)‖ over the held-out-source neutral sentences (how far "
              "CCD moved the neutral embeddings; unit-norm embeddings, so 2 is the maximum).", ""]
    return lines


def _seat_bias_ir(runs, models) -> list[str]:
    first = runs[0]["models"]["original"]
    lines = ["## SEAT gender tests (effect size d, mean over seeds; permutation p-value of seed 0's run)", "",
             "| test | " + " | ".join(models) + " |", "|---|" + "---:|" * len(models)]
    for name in sorted({k.split("/")[1] for k in first if k.startswith("seat/")}):
        cells = [f"{np.mean(_vals(runs, m, f'seat/{name}/effect_size')):+.3f} "
                 f"(p={runs[0]['models'][m][f'seat/{name}/p_value']:.3f})" for m in models]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## Bias-IR male share of the top 10 per category (0.5 = balanced; mean over seeds)", "",
              "| category | " + " | ".join(models) + " |", "|---|" + "---:|" * len(models)]
    for k in sorted(k for k in first if k.startswith("bias_ir/")):
        lines.append(f"| {k.split('/')[1]} | " + " | ".join(f"{np.mean(_vals(runs, m, k)):.3f}" for m in models)
                     + " |")
    return lines + [""]


def _bandwidth(runs) -> list[str]:
    lines = ["## CCD's bandwidth ρ: the median rule (default) vs the paper's literal \"variance\"", "",
             "The paper sets ρ to \"the variance of the distance over the training data\" in the kernel "
             "k = exp(−‖f(S^a) − f(S^n)‖² / (2ρ²)). Measured here on each seed's training tuples with the original "
             "(L2-normalised) encoder, through `faircl.losses.ccd_bandwidth(how=...)` and `ccd_kernel` in float32; "
             "the CCD runs above use the median rule.", "",
             "| seed | tuples | median distance | rule | ρ | kernel values exactly 0 (float32 underflow) | "
             "kernel values < 1e-20 | median kernel value |", "|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in runs:
        for how, b in r["bandwidth"].items():
            rule = "median (default)" if how == "median" else "variance (paper, literal)"
            lines.append(f"| {r['seed']} | {b['n_tuples']} | {b['dist_median']:.4f} | {rule} | {b['rho']:.4f} | "
                         f"{100 * b['zero']:.1f}% | {100 * b['tiny']:.1f}% | {b['median_kernel']:.3g} |")
    var = [r["bandwidth"]["variance"] for r in runs]
    unsq = 100 * np.mean([b["zero_unsquared"] for b in var])
    lines += ["", f"Under the literal rule {100 * np.mean([b['zero'] for b in var]):.1f}% of the kernel values are "
              "exactly 0 on average over seeds (no gradient reaches those versions) and "
              f"{100 * np.mean([b['tiny'] for b in var]):.1f}% are below 1e-20; under the median rule "
              f"{100 * np.mean([r['bandwidth']['median']['zero'] for r in runs]):.1f}% are 0. Read with ρ unsquared "
              f"(exp(−d²/ρ)), the literal variance would leave {unsq:.1f}% of the values at 0"
              + (": the underflow comes from squaring a variance-sized ρ in the paper's 2ρ²." if unsq == 0 else "."),
              ""]
    return lines


def _training(runs, meta) -> list[str]:
    a = meta["args"]
    lines = ["## Training", "",
             f"Adam, lr {a.lr:g} ({'the paper' if a.lr == 5e-5 else 'paper: 5e-5'}), batch {a.batch_size}"
             + (" (paper: 32; smaller here for more steps from the same tuples)" if a.batch_size < 32 else "")
             + f", one epoch, validation every {a.val_every} steps on the validation tuples, "
             f"the weights of the lowest validation loss kept; training precision {a.precision}, evaluation fp32. "
             "The paper trains one epoch on ~43k LLM-rewritten tuples (~1,350 steps of 32); this machine's speed "
             f"allows {a.train} CDA tuples per seed. β values: {', '.join(f'{b:g}' for b in a.beta_list)} "
             "(the paper's Table 7 ablation is `--betas 0,0.5,1,1.5`).", "",
             "| seed | run | seconds | ρ | best val loss | validation losses (step: loss) |",
             "|---:|---|---:|---:|---:|---|"]
    for r in runs:
        for k, (secs, rho, hist, best) in r["train_info"].items():
            lines.append(f"| {r['seed']} | {k} | {secs:.0f} | {rho:.4f} | {best:.4f} | "
                         + ", ".join(f"{s}: {v:.4f}" for s, v in hist) + " |")
    return lines + [""]


def _notes(meta) -> list[str]:
    a, ev = meta["args"], meta["eval_sizes"]
    lines = ["## Notes", "",
             f"- Evaluation subsets (identical for every model and seed): SEAT {ev['seat']} sentences over the 6 "
             f"gender tests ({'all examples' if not a.seat_max else f'first {a.seat_max} per set'}; "
             f"{a.permutations} permutations), {ev['crows']} CrowS-Pairs gender pairs, {ev['stereoset']} StereoSet "
             f"gender intrasentence items, {ev['bias_ir']} Bias-IR queries (all categories), "
             f"{meta['n_probe']} Bias-in-Bios biographies for the utility probe (constant predictor "
             f"{100 * meta['constant_acc']:.1f}%).",
             "- The summary's intervals cover the seed-to-seed variation (training draw and order, sampled test "
             "tuples) and, for SEAT, Bias-IR and CrowS/StereoSet, whose items are the same for every seed, the items' "
             "sampling (bootstrap of the items nested in the seeds); the mean ± sd tables below show the seeds' "
             "spread only.",
             "- Sentences of the Bias-in-Bios sample biographies can be among the training tuples while the same "
             "biographies feed the utility probe (its labels are never used in training).",
             f"- MiniLM speed measured side by side at the start: fp32 {meta['speed']['fp32']:.0f} sentences/s, "
             f"bf16 {meta['speed']['bf16']:.0f} sentences/s.",
             "- Polarity check per source:"]
    lines += [f"  - {s}: {rep}" for s, rep in meta["polarity"].items()]
    return lines + [""]
