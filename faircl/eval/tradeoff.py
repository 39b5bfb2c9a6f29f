"""Comparing many runs of the accuracy–fairness trade-off: settings over seeds, model selection, the Pareto front
and seed-paired differences against a baseline (with the verdicts of ``faircl.eval.compare``).

A *run* is one test report (a dict of metrics) with its setting (the configuration values that differ between the
compared runs), its seed, the checkpoint it was computed from and, where known, the validation metrics of that
checkpoint. Runs of one setting over several seeds form a *setting* (mean and standard deviation per metric).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from faircl.eval.compare import ClaimEvidence, Verdict, decide, paired_seed_comparison
from faircl.metrics.tradeoff import pareto_front
from faircl.methods.selection import selection_scores

#: report columns of the runs table, in this order, when present
HEADLINE = ("accuracy", "balanced_accuracy", "worst_group_accuracy", "eo_gap", "tpr_gap_rms", "fpr_gap_rms",
            "ppr_gap_rms", "dp_gap", "equalized_odds_difference", "leakage_h", "leakage_yhat", "dto", "balanced_dto")
OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq}


@dataclass
class Run:
    """One test report and where it came from."""

    path: str
    seed: int | None
    config: dict[str, Any]
    test: dict[str, float]
    val: dict[str, float] = field(default_factory=dict)
    checkpoint: str = ""
    trial: int | None = None
    setting: str = ""  # filled by ``group_runs``

    def __post_init__(self) -> None:
        self.test = {**self.test, **selection_scores(self.test)}  # DTO and balanced DTO of the test numbers
        if self.val:
            self.val = {**selection_scores(self.val), **self.val}


@dataclass
class Setting:
    """Runs of one configuration over seeds."""

    name: str
    values: dict[str, Any]
    runs: list[Run]

    def stat(self, split: str, metric: str) -> tuple[float, float]:
        """Mean and standard deviation (ddof 1; 0 for one seed) of ``metric`` over the runs (NaN if missing)."""
        vals = np.array([getattr(r, split).get(metric, math.nan) for r in self.runs], dtype=np.float64)
        if np.isnan(vals).any():
            return math.nan, math.nan
        return float(vals.mean()), float(vals.std(ddof=1)) if len(vals) > 1 else 0.0

    def by_seed(self, split: str, metric: str) -> dict[int | None, float]:
        return {r.seed: float(getattr(r, split).get(metric, math.nan)) for r in self.runs}


def metric_columns(runs: Sequence[Run]) -> list[str]:
    """The headline metrics present in the runs' test reports, plus any other gap."""
    keys = {k for r in runs for k in r.test if "/" not in k}
    extra = sorted(k for k in keys if ("gap" in k or "difference" in k) and k not in HEADLINE)
    return [k for k in HEADLINE if k in keys] + extra


def group_runs(runs: list[Run], ignore: Sequence[str] = ()) -> tuple[list[Setting], list[str]]:
    """Group runs by configuration (all values but the seed and ``ignore``); returns the settings and the varied
    configuration keys (those whose value differs between the runs that set them)."""
    def key_of(run: Run) -> tuple:
        return tuple(sorted((k, repr(v)) for k, v in run.config.items() if k not in ignore))

    keys = sorted({k for r in runs for k in r.config if k not in ignore})
    # varied: differs between the runs that have it (an argument one method lacks is told apart by `model`)
    varied = [k for k in keys if len({repr(r.config[k]) for r in runs if k in r.config}) > 1]
    groups: dict[tuple, list[Run]] = {}
    for run in runs:
        groups.setdefault(key_of(run), []).append(run)
    settings = []
    for i, members in enumerate(groups.values()):
        name = f"S{i + 1}"
        for r in members:
            r.setting = name
        values = {k: members[0].config.get(k) for k in varied}
        settings.append(Setting(name, values, sorted(members, key=lambda r: (r.seed is None, r.seed or 0))))
    return settings, varied


# ---------------------------------------------------------------------------------------------------- selection
def parse_constraint(text: str) -> tuple[str, str, float]:
    """``"accuracy>=0.80"`` → ``("accuracy", ">=", 0.8)``."""
    m = re.fullmatch(r"\s*([A-Za-z0-9_./]+)\s*(>=|<=|==|>|<)\s*([-+0-9.eE]+)\s*", text)
    if not m:
        raise ValueError(f"--select {text!r}: expected METRIC>=VALUE (or <=, >, <, ==), e.g. accuracy>=0.80")
    try:
        return m.group(1), m.group(2), float(m.group(3))
    except ValueError:
        raise ValueError(f"--select {text!r}: {m.group(3)!r} is not a number") from None


def select(settings: Sequence[Setting], split: str, minimise: str, constraints: Sequence[tuple[str, str, float]] = (),
           maximise: bool = False) -> Setting | None:
    """The setting with the lowest (``maximise``: highest) mean ``minimise`` on ``split`` among those whose means
    satisfy every constraint; ``None`` when none does. Ties go to the earlier setting."""
    best, best_value = None, math.nan
    for s in settings:
        if not all(OPS[op](s.stat(split, m)[0], v) for m, op, v in constraints):
            continue
        value = s.stat(split, minimise)[0]
        if math.isnan(value):
            continue
        better = value > best_value if maximise else value < best_value
        if best is None or better:
            best, best_value = s, value
    return best


def front_mask(settings: Sequence[Setting], gap: str, split: str = "test") -> np.ndarray:
    """Settings on the Pareto front of mean accuracy (higher better) against mean ``gap`` (lower better);
    settings with a missing value are never on it."""
    pts = np.array([[s.stat(split, "accuracy")[0], s.stat(split, gap)[0]] for s in settings], dtype=np.float64)
    ok = ~np.isnan(pts).any(1)
    mask = np.zeros(len(settings), dtype=bool)
    if ok.any():
        mask[ok] = pareto_front(pts[ok], maximize=[True, False])
    return mask


# ---------------------------------------------------------------------------------------------------- baseline
@dataclass
class BaselineResult:
    """Seed-paired differences of every metric of each setting against the baseline, and the verdicts of the
    claims "the setting lowers ``gap`` at little utility cost"."""

    differences: dict[str, dict[str, Any]]  # setting name -> metric -> Effect
    verdicts: list[Verdict]
    seeds: dict[str, list[Any]]


def compare_to_baseline(baseline: Setting, settings: Sequence[Setting], metrics: Sequence[str], gap: str,
                        utility: str = "accuracy", margin: float = 0.02, alpha: float = 0.05) -> BaselineResult:
    """Paired-seed comparison (``faircl.eval.compare.paired_seed_comparison``) of each setting's test numbers
    with the baseline's on the seeds they share, and the family's verdicts (``faircl.eval.compare.decide``,
    Holm over the settings; the baseline's bias is not re-tested here: that needs per-row predictions)."""
    diffs: dict[str, dict[str, Any]] = {}
    claims, seeds = [], {}
    for s in settings:
        if s is baseline:
            continue
        b_all, m_all = baseline.by_seed("test", utility), s.by_seed("test", utility)
        shared = [k for k in m_all if k in b_all]
        if not shared:
            continue
        seeds[s.name] = shared
        diffs[s.name] = {}
        for metric in metrics:
            b, m = baseline.by_seed("test", metric), s.by_seed("test", metric)
            vb, vm = [b.get(k, math.nan) for k in shared], [m.get(k, math.nan) for k in shared]
            if all(map(math.isfinite, vb + vm)):
                diffs[s.name][metric] = paired_seed_comparison(vb, vm)
        if gap in diffs[s.name] and utility in diffs[s.name]:
            claims.append(ClaimEvidence(f"{s.name} lowers {gap} vs {baseline.name}", diffs[s.name][gap],
                                        diffs[s.name][utility]))
    verdicts = decide(claims, alpha=alpha, margin=margin) if claims else []
    return BaselineResult(diffs, verdicts, seeds)


# ---------------------------------------------------------------------------------------------------- plot
def plot_front(settings: Sequence[Setting], gap: str, path: Any, marks: Mapping[str, str] | None = None,
               baseline: str | None = None, title: str = "", labels: Mapping[str, str] | None = None) -> None:
    """Accuracy against ``gap`` (test means, seed standard deviation as error bars), the Pareto front joined, the
    ``marks`` (setting name → label, e.g. the selected settings) and the baseline drawn over it, each point named by
    ``labels`` (default its setting name); saved as PNG."""
    import matplotlib  # deferred: plotting only

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: plotting only

    mask = front_mask(settings, gap)
    fig, ax = plt.subplots(figsize=(6.4, 4.6), dpi=120)
    for s, on in zip(settings, mask):
        (ax_, sx), (ay, sy) = s.stat("test", gap), s.stat("test", "accuracy")
        if math.isnan(ax_) or math.isnan(ay):
            continue
        ax.errorbar(ax_, ay, xerr=sx or None, yerr=sy or None, fmt="o", ms=6 if on else 4, capsize=2, lw=0.8,
                    color="tab:blue" if on else "tab:gray", alpha=1.0 if on else 0.6, zorder=3)
    front = sorted((s.stat("test", gap)[0], s.stat("test", "accuracy")[0]) for s, on in zip(settings, mask) if on)
    if front:
        ax.step([p[0] for p in front], [p[1] for p in front], where="post", color="tab:blue", lw=1.2,
                label="Pareto front", zorder=2)
    styles = iter([("*", "tab:red"), ("D", "tab:green"), ("s", "tab:purple"), ("^", "tab:orange")])
    for name, label in (marks or {}).items():
        s = next((s for s in settings if s.name == name), None)
        if s is None:
            continue
        marker, color = next(styles, ("P", "black"))
        ax.scatter([s.stat("test", gap)[0]], [s.stat("test", "accuracy")[0]], marker=marker, s=150, color=color,
                   edgecolor="black", zorder=4, label=f"{label}: {name}")
    if baseline is not None:
        s = next((s for s in settings if s.name == baseline), None)
        if s is not None:
            ax.scatter([s.stat("test", gap)[0]], [s.stat("test", "accuracy")[0]], marker="X", s=120, color="black",
                       zorder=4, label=f"baseline: {baseline}")
    for s in settings:
        x, y = s.stat("test", gap)[0], s.stat("test", "accuracy")[0]
        if not (math.isnan(x) or math.isnan(y)):
            ax.annotate((labels or {}).get(s.name, s.name), (x, y), textcoords="offset points", xytext=(4, 4),
                        fontsize=7, color="dimgray")
    ax.set_xlabel(f"test {gap} (lower is fairer)")
    ax.set_ylabel("test accuracy")
    ax.set_title(title or f"accuracy vs {gap}: {len(settings)} settings, mean ± sd over seeds", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
