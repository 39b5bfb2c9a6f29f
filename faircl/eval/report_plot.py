"""``report.png``: a test report drawn for a person — per-group accuracy, TPR and FPR as bars with the gap drawn."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: (report key prefix, panel title, the report's gap summary shown in the panel title)
PANELS = (("group_accuracy", "accuracy", "worst_group_accuracy"), ("group_tpr", "TPR", "tpr_gap_rms"),
          ("group_fpr", "FPR", "fpr_gap_rms"))


def per_group(report: Mapping[str, Any], prefix: str) -> dict[str, float]:
    """``{group: value}`` of the report entries ``<prefix>/<group>``, in report order."""
    return {k.split("/", 1)[1]: float(v) for k, v in report.items()
            if k.startswith(prefix + "/") and isinstance(v, (int, float))}


def plot_report(report: Mapping[str, Any], path: str | Path, title: str = "Fairness report") -> Path | None:
    """Draw per-group accuracy, TPR and FPR (one panel each, the groups of the report's attribute as bars), the
    spread between the best and the worst group as a bracket labelled with its size, and the overall accuracy as a
    dashed line; saves a PNG at ``path``. Returns ``None`` (and writes nothing) when the report has no per-group
    entries. A binary task's TPR / FPR are those of the positive class; a multi-class task's the mean over classes.
    """
    panels = [(prefix, name, summary, per_group(report, prefix)) for prefix, name, summary in PANELS]
    panels = [p for p in panels if p[3]]
    if not panels:
        return None
    import matplotlib  # deferred: plotting only

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: plotting only

    groups = list(panels[0][3])
    width = max(3.2, 0.55 * len(groups) + 1.6)
    fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), 3.6), dpi=110, squeeze=False)
    for ax, (prefix, name, summary, values) in zip(axes[0], panels):
        names = list(values)
        vals = [values[g] for g in names]
        defined = [v for v in vals if not math.isnan(v)]
        ax.bar(range(len(names)), [0.0 if math.isnan(v) else v for v in vals], color="tab:blue", alpha=0.8)
        for i, v in enumerate(vals):
            ax.text(i, (0 if math.isnan(v) else v) + 0.015, "n/a" if math.isnan(v) else f"{v:.2f}", ha="center",
                    fontsize=8)
        if prefix == "group_accuracy" and isinstance(report.get("accuracy"), (int, float)):
            ax.axhline(float(report["accuracy"]), color="black", ls="--", lw=0.8, label="overall")
            ax.legend(fontsize=7, loc="lower right")
        if len(defined) >= 2:
            lo, hi = min(defined), max(defined)
            x = len(names) - 0.4
            ax.hlines([lo, hi], -0.4, x, colors="tab:red", linestyles=":", lw=0.9)
            ax.annotate("", xy=(x, lo), xytext=(x, hi), arrowprops=dict(arrowstyle="<->", color="tab:red", lw=1.2))
            ax.text(x + 0.08, (lo + hi) / 2, f"gap\n{hi - lo:.3f}", color="tab:red", fontsize=8, va="center")
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30 if len(names) > 4 else 0, ha="right" if len(names) > 4 else "center",
                           fontsize=8)
        ax.set_xlim(-0.6, len(names) + 0.2)
        ax.set_ylim(0, 1.1)
        value = report.get(summary)
        extra = f" ({summary} {float(value):.3f})" if isinstance(value, (int, float)) and not math.isnan(value) else ""
        ax.set_title(f"{name} per group{extra}", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path
