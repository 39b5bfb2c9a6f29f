"""Verdicts of a benchmark and its files: every claim of every protocol decided as ``faircl compare --baseline``
decides it, the protocols' own claims of one bench forming one family (and ``--against``'s claims a second);
``results.md`` (verdicts first), ``results.csv`` and ``tradeoff.png``.

:func:`decide_bench` takes three steps: it reads what every finished run left in its folder (its report, per-row
predictions and per-item outputs: :mod:`faircl.runs.folders`), builds each claim's evidence
(:func:`faircl.eval.baseline.baseline_evidence` for a gap, :func:`faircl.eval.baseline.statistic_evidence` for a
statistic of the report, :func:`faircl.bench.embeddings.item_claim` for an item-level score), then decides the whole
family once (:func:`faircl.eval.verdicts.decide`)."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from faircl.bench.runner import RunTask
from faircl.bench.spec import Protocol
from faircl.eval.baseline import baseline_evidence, statistic_evidence
from faircl.eval.power import Axis, rows_to_decide
from faircl.eval.report import arrow
from faircl.runs.folders import read_items, read_run
from faircl.eval.row_predictions import read_runs_rows
from faircl.eval.tradeoff import Setting
from faircl.eval.verdicts import ClaimEvidence, decide, seeds_cell

__all__ = ["ClaimRow", "ProtocolRuns", "decide_bench", "read_protocol_runs", "write_results"]

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


@dataclass
class ProtocolRuns:
    """What the finished runs of one protocol left in their folders (the first step of :func:`decide_bench`).

    Attributes:
        baselines: each baseline's runs (a :class:`~faircl.eval.tradeoff.Setting` named as the baseline).
        method: the method's runs (named by the method's label).
        rows: the per-row predictions of every run that kept them (``Run.rows`` → split → field → array); read
            only for a protocol with a gap claim.
        baseline_items, method_items: the per-item outputs (``items.json``) by seed, read only for a protocol with
            a ``score`` claim (baseline name → seed → items; seed → items).
        wall_s: the method's runs' wall time, in all.
    """

    baselines: dict[str, Setting]
    method: Setting
    rows: dict[str, dict[str, dict[str, np.ndarray]]] = field(default_factory=dict)
    baseline_items: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    method_items: dict[int, dict[str, Any]] = field(default_factory=dict)
    wall_s: float = 0.0


def read_protocol_runs(p: Protocol, tasks: list[RunTask], method_label: str) -> ProtocolRuns:
    """Step 1: every finished run of the protocol, read once (its record, its report and what the claims need)."""
    records = [(t, t.record()) for t in tasks if t.done]
    runs: dict[str | None, list[Any]] = {}
    for t, record in records:
        run = read_run(t.folder / record["report"])
        if run is not None:
            runs.setdefault(t.setting if t.baseline else None, []).append(run)
    found = ProtocolRuns({name: Setting(name, {}, rs) for name, rs in runs.items() if name is not None},
                         Setting(method_label, {}, runs.get(None, [])),
                         wall_s=sum(r.get("wall_s", 0.0) for t, r in records if not t.baseline))
    if any(not (c.score or c.statistic) for c in p.claims):  # a gap claim: decided from the rows
        found.rows = read_runs_rows(r for rs in runs.values() for r in rs if getattr(r, "rows", None))
    if any(c.score for c in p.claims):
        for t, _ in records:
            items = read_items(t.folder)
            if items is None:
                continue
            if t.baseline:
                found.baseline_items.setdefault(t.setting, {})[t.seed] = items
            else:
                found.method_items[t.seed] = items
    return found


def _mean(runs: list[Any], metric: str) -> float:
    vals = [r.test.get(metric, math.nan) for r in runs]
    return float(sum(vals) / len(vals)) if vals else math.nan


#: one claim's row of the table, its evidence and its utility margin (the second step of :func:`decide_bench`)
Found = tuple[ClaimRow, ClaimEvidence, float]


def decide_bench(protocols: list[Protocol], tasks: dict[str, list[RunTask]], method_label: str, alpha: float = 0.05,
                 n_permutations: int = 1000, n_bootstrap: int = 2000, undecided: list[str] | None = None,
                 horizon: dict[str, tuple[int, float]] | None = None) -> list[ClaimRow]:
    """The verdict of every claim of every protocol. ``undecided`` (a list) receives a line for each ``statistic``
    claim that no seed of both settings reported. ``horizon``: protocol → ``(seeds, level)`` of the sequential
    design's last look, for the protocols not at it (their words may not be final yet).

    Three steps: read every protocol's runs (:func:`read_protocol_runs`), build each claim's evidence, decide each
    family once (:func:`faircl.eval.verdicts.decide`, each claim with its own utility margin). The protocols' own
    claims form one family; the claims ``--against`` adds form a second one, decided after it, so asking about
    another method never changes a verdict against the protocols' baselines. An against-claim's utility is judged
    against the protocol's first baseline (the primary claim's utility change on the same gap): a method may not
    buy its fall below another method with the other method's utility loss added to its own."""
    read = {p.name: read_protocol_runs(p, tasks.get(p.name, []), method_label) for p in protocols}
    found: list[Found] = []
    for p in protocols:
        for row, ev, margin in _evidence(p, read[p.name], n_permutations, n_bootstrap, undecided):
            if ev.smallest_effect is None and p.smallest_effect is not None:  # the protocol's, for a claim with none
                ev = replace(ev, smallest_effect=p.smallest_effect)
            found.append((row, ev, margin))
    primary = {(r.protocol, r.gap): ev for r, ev, _ in found if not r.extra.get("against")}
    for k, (row, ev, margin) in enumerate(found):
        own = primary.get((row.protocol, row.gap))
        if row.extra.get("against") and own is not None:
            found[k] = (row, replace(ev, utility=own.utility), margin)
    horizon = horizon or {}
    by_name = {p.name: p for p in protocols}
    for family in (False, True):
        members = [f for f in found if bool(f[0].extra.get("against")) == family]
        if not members:
            continue
        verdicts = decide([ev for _, ev, _ in members], alpha=alpha, margin=[m for _, _, m in members],
                          horizon=[horizon.get(row.protocol) for row, _, _ in members])
        for (row, ev, margin), v in zip(members, verdicts):
            p = by_name[row.protocol]
            if v.verdict == "inconclusive" and p.test_rows and v.rows_needed is None:  # else its rows are said
                v = replace(v, reason=f"{v.reason}; {_rows_needed(p, v, ev, margin)}")
            if family and v.verdict == "untestable" and v.reason.startswith("no bias beyond chance"):
                v = replace(v, reason=f"{row.baseline} has no bias beyond chance left to improve on ({v.reason})")
            if family:
                row.extra["utility_vs"] = next(iter(p.baselines))
            row.verdict, row.claim = v, v.name
    return [row for row, _, _ in found]


def _rows_needed(p: Protocol, v: Any, ev: ClaimEvidence, margin: float) -> str:
    """How many test rows would decide an open claim at the protocol's seeds (a protocol whose data can grow)."""
    now = int(p.data["init_args"][p.test_rows])
    level = (1 - v.confidence) / 2  # planned at the level a continuation's next look would use
    axes = [Axis("direction", ev.effect, abs(v.target))] if v.direction == "undetermined" else []
    if v.size == "undetermined":
        axes.append(Axis("size", ev.effect, abs(v.target - v.threshold)))
    if v.utility_axis == "undetermined":
        axes.append(Axis("utility", ev.utility, margin))
    factor = rows_to_decide(axes, p.seeds, level)
    if factor is None:
        return f"more test rows alone would not decide it at {p.seeds} seeds"
    return f"at {p.seeds} seeds, about {math.ceil(factor * now):,} test rows would ({p.test_rows}, now {now:,})"


def _evidence(p: Protocol, read: ProtocolRuns, n_permutations: int, n_bootstrap: int,
              undecided: list[str] | None) -> list[Found]:
    """Step 2: the row and the evidence of each claim of ``p`` that its runs can answer."""
    out: list[Found] = []
    method = read.method
    for claim in [c for c in p.claims if c.score]:  # item-level scores of the embeddings suite
        found = _item_claim(p, claim, read, n_permutations, n_bootstrap)
        if found is not None:
            out.append((*found, claim.margin))
    if not method.runs:
        return out
    for claim in [c for c in p.claims if c.statistic]:  # a scalar of the report with no attribute
        found = _statistic_claim(p, claim, read)
        if isinstance(found, str):
            if undecided is not None:
                undecided.append(found)
            continue
        out.append((*found, claim.margin))
    for claim in [c for c in p.claims if not (c.score or c.statistic)]:
        base = read.baselines.get(claim.baseline) or Setting(claim.baseline, {}, [])
        if not base.runs:
            continue
        result = baseline_evidence(
            base, [method], list(METRICS), claim.gap, {}, utility=claim.utility, paper_effect=claim.paper_effect,
            leakage=claim.leakage, leakage_paper_effect=claim.leakage_paper_effect, n_bootstrap=n_bootstrap,
            n_permutations=n_permutations, rows=read.rows)
        seeds = [int(s) for s in result.seeds.get(method.name, [])]
        shared_b = [r for r in base.runs if r.seed in seeds]
        shared_m = [r for r in method.runs if r.seed in seeds]
        names = [claim.gap] + (["leakage_h"] if claim.leakage and len(result.evidence) > 1 else [])
        for k, (gap, ev) in enumerate(zip(names, result.evidence)):
            row = ClaimRow(p.name, p.control, "", gap, claim.baseline, method.name, seeds, _mean(shared_b, gap),
                           _mean(shared_m, gap), _mean(shared_b, claim.utility), _mean(shared_m, claim.utility), None,
                           result.from_rows[k], read.wall_s,
                           {"paper": p.paper, "utility": claim.utility, "against": claim.against})
            out.append((row, ev, claim.margin))
    return out


def _statistic_claim(p: Protocol, claim: Any, read: ProtocolRuns) -> tuple[ClaimRow, ClaimEvidence] | str:
    """The row and the evidence of a ``statistic`` claim (:func:`faircl.eval.baseline.statistic_evidence`), or why
    it cannot be decided."""
    base = read.baselines.get(claim.baseline) or Setting(claim.baseline, {}, [])
    found = statistic_evidence(base, read.method, claim.statistic, claim.utility, claim.paper_effect)
    if isinstance(found, str):
        return f"{p.name}: {found}"
    ev, seeds, values, utility = found
    row = ClaimRow(p.name, p.control, "", claim.statistic, claim.baseline, read.method.name, seeds,
                   float(np.mean(values[0])), float(np.mean(values[1])), float(np.mean(utility[0])),
                   float(np.mean(utility[1])), None, True, read.wall_s,
                   {"paper": p.paper, "utility": claim.utility, "against": claim.against,
                    "bias_text": f"no attribute null ({claim.statistic} involves no group); paired over seeds"})
    return row, ev


def _item_claim(p: Protocol, claim: Any, read: ProtocolRuns, n_permutations: int,
                n_bootstrap: int) -> tuple[ClaimRow, ClaimEvidence] | None:
    """The row and the evidence of a ``score`` claim from the ``items.json`` of the runs both settings finished."""
    from faircl.bench.embeddings import item_claim  # deferred: torch and the embedding bias sets

    base, meth = read.baseline_items.get(claim.baseline, {}), read.method_items
    seeds = sorted(set(base) & set(meth))
    if not seeds:
        return None
    name = f"{read.method.name} lowers {claim.score} vs {claim.baseline}"
    ev, extra = item_claim(name, claim.score, [base[s] for s in seeds], [meth[s] for s in seeds],
                           claim.paper_effect, n_permutations, n_bootstrap)
    (b, m), (bu, mu) = extra["values"], extra["utility"]
    row = ClaimRow(p.name, p.control, "", claim.score, claim.baseline, read.method.name, seeds, b, m, bu, mu, None,
                   True, read.wall_s, {"paper": p.paper, "utility": "utility_accuracy", "against": claim.against,
                                       "bias_text": extra["bias_text"], "what": extra["what"]})
    return row, ev


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


HEADER = ["protocol", "claim", "verdict", "direction · size · utility", "target (threshold τ)", "baseline gap",
          "method gap", "Δgap [CI]", "Δutility [CI]", "baseline bias vs null", "p_adj", "seeds", "seeds needed",
          "reason"]


def _target(v: Any) -> str:
    if not math.isfinite(v.target):
        return "—"
    return f"{_pct(v.target, True)} (τ {_pct(v.threshold, True)})"


def _cells(r: ClaimRow) -> list[str]:
    v = r.verdict
    utility = _ci(v.utility) + (f" vs {r.extra['utility_vs']}" if r.extra.get("utility_vs") else "")
    return [r.protocol + (" (control)" if r.control else ""), r.claim, f"**{v.verdict}**",
            f"{v.direction} · {v.size} · {v.utility_axis}", _target(v), _pct(r.baseline_gap), _pct(r.method_gap),
            _ci(v.effect), utility, _bias(v, r.extra.get("bias_text", "")),
            f"{v.p_adj:.3g}" if math.isfinite(v.p_adj) else "—", str(len(r.seeds)), seeds_cell(v), v.reason]


#: the columns of ``results.csv``
CSV_COLUMNS = ["protocol", "control", "claim", "verdict", "direction", "size", "utility", "gap", "baseline", "method",
               "seeds", "baseline_gap", "method_gap", "effect", "effect_lo", "effect_hi", "confidence", "target",
               "threshold", "target_from", "paper_effect", "utility_change", "utility_lo", "utility_hi",
               "utility_vs", "p_adj", "mde", "seeds_needed", "rows_needed", "seeds_axis", "look", "level",
               "family", "from_rows", "reason"]


def _csv_row(r: ClaimRow) -> list[Any]:
    v = r.verdict
    return [r.protocol, r.control, r.claim, v.verdict, v.direction, v.size, v.utility_axis, r.gap, r.baseline,
            r.method, " ".join(map(str, r.seeds)), r.baseline_gap, r.method_gap, v.effect.mean, v.effect.lo,
            v.effect.hi, v.confidence, v.target, v.threshold, v.target_from,
            "" if v.paper_effect is None else v.paper_effect, v.utility.mean, v.utility.lo, v.utility.hi,
            r.extra.get("utility_vs", r.baseline), v.p_adj, v.mde, "" if v.seeds_needed is None else v.seeds_needed,
            "" if v.rows_needed is None else v.rows_needed, v.seeds_axis, r.extra.get("look", 1),
            r.extra.get("level", ""), "against" if r.extra.get("against") else "primary", r.from_rows, v.reason]


def write_results(out: Path, rows: list[ClaimRow], skipped: list[tuple[str, str]], header: list[str],
                  failures: list[str], undecided: list[str] = ()) -> tuple[Path, Path, Path | None]:
    """``results.md``, ``results.csv`` and ``tradeoff.png`` in ``out``; returns their paths (no picture without
    rows). ``undecided``: claims that no run could answer (each said under its own heading)."""
    out.mkdir(parents=True, exist_ok=True)
    md = ["# faircl bench", "", *header, "",
          "Gaps and utilities in points (×100); Δ = method − baseline, paired by seed on the same rows. Each word "
          "is read off three axes: direction (the gap's interval against 0), size (against the threshold τ, half "
          "the target: the paper's effect, else the protocol's smallest effect of interest) and utility (against "
          "the margin); the intervals are at the claim's level 1 − α/(2m), m claims in the family (the protocols' "
          "own claims; those of --against form a second family). A claim is testable only where the baseline's gap "
          "exceeds the attribute-permutation null (\"baseline bias vs null\"); else it reads *untestable*. A claim "
          "on a statistic that involves no attribute (cluster dominance) has no such null: it is a t-test over "
          "seeds.",
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
        w.writerow(CSV_COLUMNS)
        w.writerows(_csv_row(r) for r in rows)
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
    colors = {"reproduces": "tab:green", "lowers, less than target": "tab:olive", "utility lost": "tab:red",
              "contradicted": "tab:purple", "no fall shown": "tab:brown", "no change": "tab:brown",
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
        ax.set_xlabel(f"{r.gap} (points, lower is fairer)" if arrow(r.gap) == "↓" else f"{r.gap} (points)")
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
