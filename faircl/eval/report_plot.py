"""``report.png``: a test report drawn for a person — per-group accuracy, TPR and FPR as bars with the gap drawn.

On a multi-class task the TPR and FPR panels show what the report's ``tpr_gap_rms`` / ``fpr_gap_rms`` summarise:
each class's rate per group (from the test split's per-row predictions) and each class's gap
``Σ_a |R_{a,c} − R_c|``, whose root mean square over the classes is the number in the panel's title.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

#: (report key prefix, panel title, the report's gap summary shown in the panel title)
PANELS = (("group_accuracy", "accuracy", "worst_group_accuracy"), ("group_tpr", "TPR", "tpr_gap_rms"),
          ("group_fpr", "FPR", "fpr_gap_rms"))


def per_group(report: Mapping[str, Any], prefix: str) -> dict[str, float]:
    """``{group: value}`` of the report entries ``<prefix>/<group>``, in report order."""
    return {k.split("/", 1)[1]: float(v) for k, v in report.items()
            if k.startswith(prefix + "/") and isinstance(v, (int, float))}


def class_rates(y: np.ndarray, pred: np.ndarray, a: np.ndarray, num_classes: int, num_groups: int
                ) -> dict[str, np.ndarray]:
    """One-vs-rest TPR and FPR per group and class (``[G, C]``, NaN where undefined), overall per class (``[C]``),
    and each class's gap ``Σ_a |R_{a,c} − R_c|`` over the groups whose rate is defined (``[C]``): the terms whose
    root mean square is ``tpr_gap_rms`` / ``fpr_gap_rms``. Rows of unknown attribute (``-1``) are left out, as in the
    gaps."""
    y, pred, a = (np.asarray(v, dtype=np.int64) for v in (y, pred, a))
    out: dict[str, np.ndarray] = {}
    for rate in ("tpr", "fpr"):
        def one(mask: np.ndarray) -> np.ndarray:
            vals = np.full(num_classes, np.nan)
            for c in range(num_classes):
                pos = (y == c) if rate == "tpr" else (y != c)
                den = (mask & pos).sum()
                if den:
                    vals[c] = ((pred == c) & mask & pos).sum() / den
            return vals

        overall = one(a >= 0)  # the gaps' reference rate: rows of a known group
        groups = np.stack([one(a == g) for g in range(num_groups)])
        dev = np.abs(groups - overall[None])
        gap = np.where(np.isnan(dev).all(0), np.nan, np.nansum(dev, 0))
        out[rate], out[f"{rate}_overall"], out[f"{rate}_gap"] = groups, overall, gap
    return out


@lru_cache(maxsize=None)
def _font_paths() -> tuple[str, ...]:
    from matplotlib import font_manager  # deferred: plotting only

    return tuple(sorted({f.fname for f in font_manager.fontManager.ttflist}))


@lru_cache(maxsize=None)
def _charmap(path: str) -> frozenset[int]:
    from matplotlib.ft2font import FT2Font  # deferred: plotting only

    try:
        return frozenset(FT2Font(path).get_charmap())
    except (OSError, RuntimeError):
        return frozenset()


def drawable_labels(names: Sequence[str]) -> tuple[list[str], Any, list[str]]:
    """Labels that the installed fonts can draw: the names themselves in the default font, else in an installed
    font that has every glyph (e.g. a CJK font), else ``group <i>*``. Returns the labels, the font properties to
    draw them with (``None``: the default) and the names that could not be drawn."""
    from matplotlib import font_manager  # deferred: plotting only

    needed = {ord(ch) for n in names for ch in n}
    default = font_manager.findfont(font_manager.FontProperties())
    if needed <= _charmap(default):
        return list(names), None, []
    for path in _font_paths():
        if needed <= _charmap(path):
            return list(names), font_manager.FontProperties(fname=path), []
    ok = _charmap(default)
    labels, lost = [], []
    for i, n in enumerate(names):
        if {ord(ch) for ch in n} <= ok:
            labels.append(n)
        else:
            labels.append(f"group {i}*")
            lost.append(n)
    return labels, None, lost


def _bracket(ax: Any, values: Sequence[float], x: float) -> None:
    defined = [v for v in values if not math.isnan(v)]
    if len(defined) < 2:
        return
    lo, hi = min(defined), max(defined)
    ax.hlines([lo, hi], -0.4, x, colors="tab:red", linestyles=":", lw=0.9)
    ax.annotate("", xy=(x, lo), xytext=(x, hi), arrowprops=dict(arrowstyle="<->", color="tab:red", lw=1.2))
    ax.text(x + 0.08, (lo + hi) / 2, f"gap\n{hi - lo:.3f}", color="tab:red", fontsize=8, va="center")


def _group_panel(ax: Any, report: Mapping[str, Any], prefix: str, values: dict[str, float], labels: list[str],
                 font: Any) -> None:
    vals = list(values.values())
    ax.bar(range(len(vals)), [0.0 if math.isnan(v) else v for v in vals], color="tab:blue", alpha=0.8)
    for i, v in enumerate(vals):
        ax.text(i, (0 if math.isnan(v) else v) + 0.015, "n/a" if math.isnan(v) else f"{v:.2f}", ha="center",
                fontsize=8)
    if prefix == "group_accuracy" and isinstance(report.get("accuracy"), (int, float)):
        ax.axhline(float(report["accuracy"]), color="black", ls="--", lw=0.8, label="overall")
        ax.legend(fontsize=7, loc="lower right")
    _bracket(ax, vals, len(vals) - 0.4)
    ax.set_xticks(range(len(vals)))
    ax.set_xticklabels(labels, rotation=30 if len(vals) > 4 else 0, ha="right" if len(vals) > 4 else "center",
                       fontsize=8, fontproperties=font)
    ax.set_xlim(-0.6, len(vals) + 0.2)


def _class_panel(ax: Any, rates: dict[str, np.ndarray], rate: str, labels: list[str], font: Any,
                 class_names: Sequence[str]) -> None:
    groups, gap = rates[rate], rates[f"{rate}_gap"]
    g, c = groups.shape
    width = 0.8 / g
    for i in range(g):
        ax.bar(np.arange(c) - 0.4 + width * (i + 0.5), np.nan_to_num(groups[i]), width, alpha=0.85,
               label=labels[i])
    ax.plot(np.arange(c), gap, "D", color="tab:red", ms=5, label="class gap Σ|R_a,c − R_c|")
    ax.set_xticks(range(c))
    ax.set_xticklabels(class_names, rotation=45 if c > 4 else 0, ha="right" if c > 4 else "center", fontsize=7)
    ax.set_xlim(-0.6, c - 0.4)
    leg = ax.legend(fontsize=6, loc="upper right", ncol=min(g + 1, 3), prop=font)
    if font is not None:
        leg.get_texts()[-1].set_fontproperties(None)


def plot_report(report: Mapping[str, Any], path: str | Path, title: str = "Fairness report",
                rows: Mapping[str, np.ndarray] | None = None, class_names: Sequence[str] | None = None
                ) -> Path | None:
    """Draw the report and save a PNG at ``path``; ``None`` (nothing written) when it has no per-group entries.

    Per-group accuracy, TPR and FPR are bars, the spread between the best and the worst group a bracket labelled
    with its size, the overall accuracy a dashed line. A binary task's TPR / FPR are those of the positive class. On a
    multi-class task with ``rows`` (the test split's ``y``, ``a``, ``pred``: :mod:`faircl.eval.row_predictions`), the TPR and
    FPR panels show each class's rate per group and each class's gap, the terms of ``tpr_gap_rms`` /
    ``fpr_gap_rms``; without rows they show the mean over classes and say that this is not what the gap measures.
    Group names that no installed font can draw are shown as ``group <i>*`` with a note.
    """
    panels = [(prefix, name, summary, per_group(report, prefix)) for prefix, name, summary in PANELS]
    panels = [p for p in panels if p[3]]
    if not panels:
        return None
    import matplotlib  # deferred: plotting only

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: plotting only

    names = list(panels[0][3])
    labels, font, lost = drawable_labels(names)
    rates = None
    if rows is not None and "proba" in rows and np.asarray(rows["proba"]).shape[-1] > 2:
        c = int(np.asarray(rows["proba"]).shape[-1])
        rates = class_rates(rows["y"], rows["pred"], rows["a"], c, len(names))
        class_names = list(class_names or [str(i) for i in range(c)])
    widths = [max(3.2, 0.55 * len(names) + 1.6) if rates is None or p[0] == "group_accuracy"
              else max(4.5, 0.45 * len(class_names) + 1.5) for p in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(sum(widths), 3.9), dpi=110, squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing")
        for ax, (prefix, name, summary, values) in zip(axes[0], panels):
            value = report.get(summary)
            told = f"{summary} {float(value):.3f}" if isinstance(value, (int, float)) and not math.isnan(value) else ""
            if rates is not None and prefix != "group_accuracy":
                _class_panel(ax, rates, name.lower(), labels, font, class_names)
                ax.set_title(f"{name} per class and group" + (f"\n{told} = RMS of the class gaps ◆" if told else ""),
                             fontsize=9)
            else:
                _group_panel(ax, report, prefix, values, labels, font)
                mean = ("\n(binary: class 1; multi-class: the mean over classes)" if prefix != "group_accuracy"
                        and rows is None else "")
                ax.set_title(f"{name} per group" + (f" ({told})" if told else "") + mean, fontsize=9)
            ax.set_ylim(0, 1.12)
            ax.grid(axis="y", alpha=0.3)
        fig.suptitle(title, fontsize=10)
        if lost:
            fig.text(0.01, 0.01, "* no installed font draws these group names (install a CJK font such as Noto Sans "
                     "CJK): " + ", ".join(f"group {names.index(n)}" for n in lost) + "; report.json has the names",
                     fontsize=6, color="dimgray")
        fig.tight_layout(rect=(0, 0.04 if lost else 0, 1, 1))
        path = Path(path)
        fig.savefig(path)
    plt.close(fig)
    return path
