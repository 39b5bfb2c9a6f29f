"""Verdicts of a benchmark and its files: every claim of every protocol decided from the runs' per-row predictions by
:func:`faircl.eval.baseline.compare_to_baseline` (the code path of ``faircl compare --baseline``), all claims of one
bench forming one Holm family; ``results.md`` (verdicts first), ``results.csv`` and ``tradeoff.png``."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from faircl.bench.runner import RunTask
from faircl.bench.spec import Protocol
from faircl.cli.compare import read_run
from faircl.eval.baseline import BaselineResult, compare_to_baseline, decide_family
from faircl.eval.verdicts import ClaimEvidence
from faircl.eval.statistics import paired_seed_comparison
from faircl.eval.tradeoff import Setting

__all__ = ["ClaimRow", "decide_bench", "write_results"]

METRICS = ("accuracy", "balanced_accuracy", "tpr_gap_rms", "tpr_gap_max", "dp_gap", "leakage_h")


@dataclass
class ClaimRow:
    """One decided claim of the results table."""

    protocol: str
    control: bool
    claim: str
    gap: str
    baseline: str
    method: str
    seeds: list[int]
    baseline_gap: float
    method_gap: float
    baseline_utility: float
    method_utility: float
    verdict: Any = None  # faircl.eval.verdicts.Verdict
    from_rows: bool = True
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def _runs(tasks: list[RunTask]) -> list[Any]:
    out = []
    for t in tasks:
        if not t.done:
            continue
        run = read_run(t.folder / t.record()["report"])
        if run is not None:
            out.append(run)
    return out


def _mean(runs: list[Any], metric: str) -> float:
    vals = [r.test.get(metric, math.nan) for r in runs]
    return float(sum(vals) / len(vals)) if vals else math.nan


def decide_bench(protocols: list[Protocol], tasks: dict[str, list[RunTask]], method_label: str, alpha: float = 0.05,
                 n_permutations: int = 1000, n_bootstrap: int = 2000,
                 undecided: list[str] | None = None) -> list[ClaimRow]:
    """The verdict of every claim of every protocol (one Holm family over all of them). ``undecided`` (a list)
    receives a line for each ``statistic`` claim that no seed of both settings reported."""
    rows: list[ClaimRow] = []
    results, gaps, margins = [], [], []
    for p in protocols:
        ts = tasks.get(p.name, [])
        method_tasks = [t for t in ts if not t.baseline]
        for claim in [c for c in p.claims if c.score]:  # item-level scores of the embeddings suite
            found = _item_claim(p, claim, ts, method_label, n_permutations, n_bootstrap)
            if found is not None:
                rows.append(found[0])
                results.append(found[1])
                gaps.append(claim.gap)
                margins.append(claim.margin)
        method = Setting(method_label, {}, _runs(method_tasks))
        if not method.runs:
            continue
        for claim in [c for c in p.claims if c.statistic]:  # a scalar of the report with no attribute
            base = Setting(claim.baseline, {}, _runs([t for t in ts if t.baseline and t.setting == claim.baseline]))
            found = _statistic_claim(p, claim, base, method, method_tasks)
            if isinstance(found, str):
                if undecided is not None:
                    undecided.append(found)
                continue
            rows.append(found[0])
            results.append(found[1])
            gaps.append(claim.gap)
            margins.append(claim.margin)
        for claim in [c for c in p.claims if not (c.score or c.statistic)]:
            base_tasks = [t for t in ts if t.baseline and t.setting == claim.baseline]
            base = Setting(claim.baseline, {}, _runs(base_tasks))
            if not base.runs:
                continue
            result = compare_to_baseline(
                base, [method], list(METRICS), claim.gap, {}, utility=claim.utility, margin=claim.margin,
                alpha=alpha, paper_effect=claim.paper_effect, leakage=claim.leakage,
                leakage_paper_effect=claim.leakage_paper_effect, n_bootstrap=n_bootstrap,
                n_permutations=n_permutations)
            seeds = [int(s) for s in result.seeds.get(method_label, [])]
            shared_b = [r for r in base.runs if r.seed in seeds]
            shared_m = [r for r in method.runs if r.seed in seeds]
            wall = sum(t.record().get("wall_s", 0.0) for t in method_tasks if t.done)
            names = [claim.gap] + (["leakage_h"] if claim.leakage and len(result.evidence) > 1 else [])
            for k, gap in enumerate(names[:len(result.evidence)]):
                rows.append(ClaimRow(p.name, p.control, "", gap, claim.baseline, method_label, seeds,
                                     _mean(shared_b, gap), _mean(shared_m, gap), _mean(shared_b, claim.utility),
                                     _mean(shared_m, claim.utility), None, result.from_rows[k], wall,
                                     {"paper": p.paper, "utility": claim.utility}))
            results.append(result)
            gaps.append(claim.gap)
            margins.append(claim.margin)
    verdicts = [v for vs in decide_family(results, alpha=alpha, gaps=gaps, margins=margins) for v in vs]
    for row, v in zip(rows, verdicts):
        row.verdict, row.claim = v, v.name
    return rows


def _statistic_claim(p: Protocol, claim: Any, base: Setting, method: Setting, method_tasks: list[RunTask]
                     ) -> tuple[ClaimRow, BaselineResult] | str:
    """The row and the evidence of a ``statistic`` claim: the report's scalar of both settings paired by seed (a
    t-test over seeds; no attribute null, there is no group to permute), or why it cannot be decided."""
    stat = claim.statistic

    def by_seed(setting: Setting) -> dict[int, Any]:
        return {int(r.seed): r for r in setting.runs if math.isfinite(float(r.test.get(stat, math.nan)))}

    b, m = by_seed(base), by_seed(method)
    seeds = sorted(set(b) & set(m))
    name = f"{method.name} lowers {stat} vs {claim.baseline}"
    if len(seeds) < 2:
        return (f"{p.name}: {name}: {stat} is in the test report of {len(b)} of {len(base.runs)} {claim.baseline} "
                f"run(s) and {len(m)} of {len(method.runs)} {method.name} run(s); a paired comparison needs 2 seeds "
                f"with both")
    values = [[float(s[k].test[stat]) for k in seeds] for s in (b, m)]
    utility = [[float(s[k].test.get(claim.utility, math.nan)) for k in seeds] for s in (b, m)]
    if not all(math.isfinite(u) for us in utility for u in us):
        return f"{p.name}: {name}: a run's test report has no finite {claim.utility} (the utility)"
    ev = ClaimEvidence(name, paired_seed_comparison(*values), paired_seed_comparison(*utility), claim.paper_effect)
    wall = sum(t.record().get("wall_s", 0.0) for t in method_tasks if t.done)
    row = ClaimRow(p.name, p.control, "", stat, claim.baseline, method.name, seeds, float(np.mean(values[0])),
                   float(np.mean(values[1])), float(np.mean(utility[0])), float(np.mean(utility[1])), None, True,
                   wall, {"paper": p.paper, "utility": claim.utility,
                          "bias_text": f"no attribute null ({stat} involves no group); paired over seeds"})
    return row, BaselineResult({}, [], {method.name: seeds}, [True], [ev])


def _items(tasks: list[RunTask]) -> dict[int, dict[str, Any]]:
    out = {}
    for t in tasks:
        if t.done and (t.folder / "items.json").is_file():
            out[t.seed] = json.loads((t.folder / "items.json").read_text())
    return out


def _item_claim(p: Protocol, claim: Any, ts: list[RunTask], method_label: str, n_permutations: int,
                n_bootstrap: int) -> tuple[ClaimRow, BaselineResult] | None:
    """The row and the evidence of a ``score`` claim from the ``items.json`` of the runs both settings finished."""
    from faircl.bench.embeddings import item_claim  # deferred: torch and the embedding bias sets

    base = _items([t for t in ts if t.baseline and t.setting == claim.baseline])
    meth = _items([t for t in ts if not t.baseline])
    seeds = sorted(set(base) & set(meth))
    if not seeds:
        return None
    name = f"{method_label} lowers {claim.score} vs {claim.baseline}"
    ev, extra = item_claim(name, claim.score, [base[s] for s in seeds], [meth[s] for s in seeds],
                           claim.paper_effect, n_permutations, n_bootstrap)
    wall = sum(t.record().get("wall_s", 0.0) for t in ts if not t.baseline and t.done)
    (b, m), (bu, mu) = extra["values"], extra["utility"]
    row = ClaimRow(p.name, p.control, "", claim.score, claim.baseline, method_label, seeds, b, m, bu, mu, None, True,
                   wall, {"paper": p.paper, "utility": "utility_accuracy", "bias_text": extra["bias_text"],
                          "what": extra["what"]})
    return row, BaselineResult({}, [], {method_label: seeds}, [True], [ev])


def _pct(x: float, signed: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"{100 * x:+.1f}" if signed else f"{100 * x:.1f}"


def _ci(e: Any) -> str:
    if e is None:
        return "—"
    lo = "−∞" if not math.isfinite(e.lo) else f"{100 * e.lo:+.1f}"
    hi = "+∞" if not math.isfinite(e.hi) else f"{100 * e.hi:+.1f}"
    return f"{_pct(e.mean, True)} [{lo}, {hi}]"


def _bias(v: Any, text: str = "") -> str:
    if not v.bias:
        return text or "not checked"
    return "; ".join(f"{b.split} {100 * b.observed:.1f} vs null q95 {100 * b.null_q95:.1f} (p {b.p_value:.3g})"
                     for b in v.bias)


HEADER = ["protocol", "claim", "verdict", "baseline gap", "method gap", "Δgap [95% CI]", "paper Δgap",
          "Δutility [95% CI]", "baseline bias vs null", "p (Holm)", "seeds", "reason"]


def _cells(r: ClaimRow) -> list[str]:
    v = r.verdict
    paper = "—" if v.paper_effect is None else _pct(v.paper_effect, True)
    return [r.protocol + (" (control)" if r.control else ""), r.claim, f"**{v.verdict}**", _pct(r.baseline_gap),
            _pct(r.method_gap), _ci(v.effect), paper, _ci(v.utility), _bias(v, r.extra.get("bias_text", "")),
            f"{v.p_holm:.3g}" if math.isfinite(v.p_holm) else "—", str(len(r.seeds)), v.reason]


def write_results(out: Path, rows: list[ClaimRow], skipped: list[tuple[str, str]], header: list[str],
                  failures: list[str], undecided: list[str] = ()) -> tuple[Path, Path, Path | None]:
    """``results.md``, ``results.csv`` and ``tradeoff.png`` in ``out``; returns their paths (no picture without
    rows). ``undecided``: claims that no run could answer (each said under its own heading)."""
    out.mkdir(parents=True, exist_ok=True)
    md = ["# faircl bench", "", *header, "",
          "Gaps and utilities in points (×100); Δ = method − baseline, paired by seed on the same rows; one Holm "
          "family over every claim below. A claim is testable only where the baseline's gap exceeds the "
          "attribute-permutation null (\"baseline bias vs null\"); else it reads *untestable*. A claim on a "
          "statistic that involves no attribute (cluster dominance) has no such null: it is a t-test over seeds.",
          ""]
    if rows:
        md += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        md += ["| " + " | ".join(c.replace("|", "\\|") for c in _cells(r)) + " |" for r in rows]
    else:
        md += ["No claim could be decided (see the skipped protocols and failed runs)."]
    if skipped:
        md += ["", "## Skipped protocols", ""] + [f"- **{n}**: {why}" for n, why in skipped]
    if undecided:
        md += ["", "## Claims not decided", ""] + [f"- {u}" for u in undecided]
    if failures:
        md += ["", "## Failed runs", ""] + [f"- {f}" for f in failures]
    md_path = out / "results.md"
    md_path.write_text("\n".join(md) + "\n")
    csv_path = out / "results.csv"
    with open(csv_path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["protocol", "control", "claim", "verdict", "gap", "baseline", "method", "seeds",
                    "baseline_gap", "method_gap", "effect", "effect_lo", "effect_hi", "paper_effect",
                    "utility_change", "utility_lo", "utility_hi", "p_holm", "mde", "from_rows", "reason"])
        for r in rows:
            v = r.verdict
            w.writerow([r.protocol, r.control, r.claim, v.verdict, r.gap, r.baseline, r.method,
                        " ".join(map(str, r.seeds)), r.baseline_gap, r.method_gap, v.effect.mean, v.effect.lo,
                        v.effect.hi, "" if v.paper_effect is None else v.paper_effect, v.utility.mean,
                        v.utility.lo, v.utility.hi, v.p_holm, v.mde, r.from_rows, v.reason])
    png = _plot(out / "tradeoff.png", rows) if rows else None
    return md_path, csv_path, png


def _plot(path: Path, rows: list[ClaimRow]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gap_rows = [r for r in rows if r.gap != "leakage_h"] or rows
    n = len(gap_rows)
    cols = min(n, 3)
    fig, axes = plt.subplots((n + cols - 1) // cols, cols, figsize=(4.2 * cols, 3.6 * ((n + cols - 1) // cols)),
                             squeeze=False)
    colors = {"holds": "tab:green", "does not hold": "tab:red", "contradicted": "tab:purple",
              "inconclusive": "tab:orange", "untestable": "tab:gray"}
    for ax, r in zip(axes.flat, gap_rows):
        v = r.verdict
        ax.scatter([100 * r.baseline_gap], [100 * r.baseline_utility], marker="s", color="black", s=50,
                   label=r.baseline, zorder=3)
        ax.scatter([100 * r.method_gap], [100 * r.method_utility], marker="o", s=70,
                   color=colors.get(v.verdict, "tab:blue"), label=f"{r.method}: {v.verdict}", zorder=3)
        ax.annotate("", xy=(100 * r.method_gap, 100 * r.method_utility),
                    xytext=(100 * r.baseline_gap, 100 * r.baseline_utility),
                    arrowprops={"arrowstyle": "->", "color": "0.5"})
        ax.set_title(f"{r.protocol}{' (control)' if r.control else ''}", fontsize=10)
        ax.set_xlabel(f"{r.gap} (points, lower is fairer)")
        ax.set_ylabel(f"{r.extra.get('utility', 'accuracy')} (points)")
        ax.legend(fontsize=8, loc="best")
        ax.grid(alpha=0.3)
        ax.margins(0.25)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle("Fairness–utility trade-off: baseline → method (mean over seeds)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
