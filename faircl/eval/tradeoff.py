"""Comparing many runs of the accuracy–fairness trade-off: settings over seeds, model selection, the Pareto front
and the labels that name settings by their values (the baseline's claims: :mod:`faircl.eval.baseline`).

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

from faircl.eval.report import arrow, mark
from faircl.metrics.tradeoff import pareto_front
from faircl.methods.selection import selection_scores

#: report columns of the runs table, in this order, when present
HEADLINE = ("accuracy", "balanced_accuracy", "worst_group_accuracy", "eo_gap", "tpr_gap_rms", "fpr_gap_rms",
            "ppr_gap_rms", "dp_gap", "equalized_odds_difference", "leakage_h", "leakage_yhat", "dto", "balanced_dto")
_MISSING = object()
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
    rows: str | None = None  # the run's ``rows.npz`` (per-row predictions), if it kept them
    source: str = ""  # where the seed and settings were read (the fit record, the fit's config, ...)
    predictions: str = "logits"  # where the test and val numbers come from: the logits, or knn / probe rows
    untrained: bool = False  # tested on untrained weights (``faircl test --ckpt_path none``): no checkpoint
    missing: tuple[str, ...] = ()  # files its report names that its folder lacks (e.g. ``rows.npz``)

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
    # varied: differs between the runs of the methods that have it, or is missing in some of them (an argument one
    # method lacks is told apart by `model`)
    def differs(k: str) -> bool:
        models = {r.config.get("model") for r in runs if k in r.config}
        return len({repr(r.config.get(k, _MISSING)) for r in runs if r.config.get("model") in models}) > 1

    varied = [k for k in keys if differs(k)]
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


# ---------------------------------------------------------------------------------------------------- labels
#: argument names written as their symbol in labels
SYMBOLS = {"lam": "λ", "lambda_": "λ", "lambda_fair": "λ", "lambda_fcl": "λ_fcl", "lmbda": "λ", "temperature": "τ", "tau": "τ", "alpha": "α", "beta": "β",
           "gamma": "γ"}


def _value(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def setting_labels(settings: Sequence[Setting], varied: Sequence[str]) -> dict[str, str]:
    """Name each setting by what differs: its method and the varied values it has (``"ConFair λ=0.11"``,
    ``"CE batch_size=1024"``). A method argument is named only where it differs between settings of the same method;
    a data or trainer value wherever the setting has it. Settings whose labels would clash keep their ``S<i>``."""
    def model_of(s: Setting) -> str:
        return str(s.runs[0].config.get("model") or "run")

    by_model: dict[str, list[Setting]] = {}
    for s in settings:
        by_model.setdefault(model_of(s), []).append(s)
    out = {}
    for s in settings:
        same = by_model[model_of(s)]
        parts = []
        for k in varied:
            v = s.values.get(k)
            if k == "model" or v is None:
                continue
            if k.startswith("model.") and len({repr(t.values.get(k)) for t in same}) < 2:
                continue
            leaf = k.rsplit(".", 1)[-1]
            parts.append(f"{SYMBOLS.get(leaf, leaf)}={_value(v)}")
        out[s.name] = " ".join([model_of(s), ", ".join(parts)]).strip()
    counts: dict[str, int] = {}
    for label in out.values():
        counts[label] = counts.get(label, 0) + 1
    return {n: (label if counts[label] == 1 else f"{label} ({n})") for n, label in out.items()}


# ---------------------------------------------------------------------------------------------------- plot
def _place_labels(ax: Any, points: Sequence[tuple[float, float, str]], fontsize: int = 7) -> None:
    """Annotate each point with its text at the first of several offsets where the text overlaps no earlier text
    and no other point, and stays inside the axes; a point whose text finds no free place gets a leader line."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    placed: list[Any] = []
    marks = [ax.transData.transform((x, y)) for x, y, _ in points]
    inside = ax.get_window_extent(renderer)
    offsets = [(d * dx, d * dy) for d in (1, 2, 3.5) for dx, dy in
               ((5, 4), (5, -11), (-5, 4), (-5, -11), (0, 9), (0, -16), (9, -3), (-9, -3))]
    for i, (x, y, text) in enumerate(points):
        chosen = None
        for dx, dy in offsets:
            t = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=fontsize,
                            color="dimgray", ha="left" if dx > 0 else "right" if dx < 0 else "center")
            box = t.get_window_extent(renderer).expanded(1.05, 1.1)
            clash = any(box.overlaps(b) for b in placed) or any(
                box.contains(*m) for j, m in enumerate(marks) if j != i)
            fits = inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1)
            if not clash and fits:
                chosen = (t, box)
                break
            t.remove()
        if chosen is None:  # crowded: the farthest place, joined to its point
            t = ax.annotate(text, (x, y), textcoords="offset points", xytext=(22, 18 + 6 * (i % 4)),
                            fontsize=fontsize, color="dimgray", arrowprops=dict(arrowstyle="-", color="lightgray",
                                                                                lw=0.6))
            chosen = (t, t.get_window_extent(renderer))
        placed.append(chosen[1])


def plot_front(settings: Sequence[Setting], gap: str, path: Any, marks: Mapping[str, str] | None = None,
               baseline: str | None = None, title: str = "", labels: Mapping[str, str] | None = None) -> None:
    """Accuracy against ``gap`` (test means, seed standard deviation as error bars), the Pareto front joined, the
    ``marks`` (setting name → rule, e.g. the selected settings) and the baseline drawn over it, each point named by
    ``labels`` (default its setting name; see :func:`setting_labels`) where its text overlaps nothing; the legend
    below the axes names the marked settings by their labels; saved as PNG."""
    import matplotlib  # deferred: plotting only

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: plotting only

    labels = dict(labels or {})
    mask = front_mask(settings, gap)
    fig, ax = plt.subplots(figsize=(7.2, 5.4), dpi=120)
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
    for name, rule in (marks or {}).items():
        s = next((s for s in settings if s.name == name), None)
        if s is None:
            continue
        marker, color = next(styles, ("P", "black"))
        ax.scatter([s.stat("test", gap)[0]], [s.stat("test", "accuracy")[0]], marker=marker, s=150, color=color,
                   edgecolor="black", zorder=5, clip_on=False, label=f"{rule}: {labels.get(name, name)}")
    if baseline is not None:
        s = next((s for s in settings if s.name == baseline), None)
        if s is not None:
            ax.scatter([s.stat("test", gap)[0]], [s.stat("test", "accuracy")[0]], marker="X", s=120, color="black",
                       zorder=4, clip_on=False, label=f"baseline: {labels.get(baseline, baseline)}")
    ax.margins(0.15)  # room for the large markers and the labels at the edges
    ax.set_xlabel(f"test {gap} (lower is fairer)" if arrow(gap) == "↓" else f"test {gap} {mark(gap)}".strip())
    ax.set_ylabel("test accuracy")
    ax.set_title(title or f"accuracy vs {gap}: {len(settings)} settings, mean ± sd over seeds", fontsize=10)
    ax.grid(alpha=0.3)
    handles, names = ax.get_legend_handles_labels()
    rows = max(1, math.ceil(len(names) / 2))
    fig.tight_layout(rect=(0, 0.04 + 0.035 * rows, 1, 1))
    if handles:
        fig.legend(handles, names, fontsize=7, loc="lower center", ncol=2, frameon=False)
    points = [(s.stat("test", gap)[0], s.stat("test", "accuracy")[0], labels.get(s.name, s.name)) for s in settings]
    _place_labels(ax, [p for p in points if not (math.isnan(p[0]) or math.isnan(p[1]))])
    fig.savefig(path)
    plt.close(fig)
