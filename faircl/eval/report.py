"""Fairness reports: a rich table in the terminal, ``report.json`` and ``report.md`` on disk."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from faircl.metrics.gaps import is_signed

#: Metrics where lower is better (gaps, leakage); shown with a down arrow.
LOWER_IS_BETTER = ("gap", "leakage", "difference", "cced", "dominance", "deviation", "effect_size")

#: Entries with no better direction, shown without an arrow: per-group rates (``group_tpr/<group>``: a higher TPR of
#: one group is not fairer) and counts (``n_unknown_group``).
NO_DIRECTION = ("group_accuracy/", "group_tpr/", "group_fpr/", "group_ppr/", "n_")

_ORDER = ("accuracy", "f1", "worst_group_accuracy", "eo_gap", "tpr_gap_rms", "fpr_gap_rms", "dp_gap",
          "equalized_odds_difference", "leakage_h", "leakage_yhat")


#: Metrics that are fair at a midpoint (0.5 ratio, 50 stereotype score); shown with "≈".
TARGET_IS_MIDPOINT = ("stereo_score", "_ss", "male_ratio")


def arrow(name: str) -> str:
    """The better direction of a metric, as drawn beside its name: ``↓`` (gaps, leakage), ``↑`` (accuracy),
    ``≈`` (fair at a midpoint) or ``""`` (no better direction: per-group rates, counts, and the signed gaps of
    :data:`faircl.metrics.gaps.SIGNED`, where a negative value is a gap the other way round)."""
    if name.startswith(NO_DIRECTION) or is_signed(name):
        return ""
    if any(t in name for t in TARGET_IS_MIDPOINT):
        return "≈"
    return "↓" if any(t in name for t in LOWER_IS_BETTER) else "↑"


def mark(name: str) -> str:
    """What is written beside a metric's name: its :func:`arrow`, or ``(signed)`` for a signed gap."""
    return "(signed)" if is_signed(name) else arrow(name)


def _label(name: str) -> str:
    sign = mark(name)
    return f"{name} {sign}" if sign else name


def _fmt(v: Any, name: str = "") -> str:
    if name.startswith("n_") and isinstance(v, float) and v.is_integer():
        return str(int(v))  # a count
    if isinstance(v, float):
        return "n/a (undefined)" if math.isnan(v) else f"{v:.4f}"
    return str(v)


def ordered_keys(keys: Sequence[str]) -> list[str]:
    """Headline metrics first (accuracy, F1, gaps, leakage), then the rest alphabetically."""
    first = [k for k in _ORDER if k in keys]
    return first + sorted(k for k in keys if k not in first)


def _console():
    from rich.console import Console

    return Console(width=120)


def print_report(report: Mapping[str, Any], title: str = "Fairness report") -> None:
    """Print one report (metric → value) as a rich table."""
    print_reports({"value": report}, title=title)


def print_reports(reports: Mapping[str, Mapping[str, Any]], title: str = "Fairness reports") -> None:
    """Print several reports side by side (one column per run), e.g. CE vs a mitigation method."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("metric")
    for name in reports:
        table.add_column(name, justify="right")
    keys = ordered_keys(list({k: None for r in reports.values() for k in r}))
    for k in keys:
        table.add_row(_label(k), *[_fmt(r.get(k, "—"), k) for r in reports.values()])
    _console().print(table)


def to_markdown(reports: Mapping[str, Mapping[str, Any]]) -> str:
    """Reports as a markdown table (one column per run)."""
    keys = ordered_keys(list({k: None for r in reports.values() for k in r}))
    lines = ["| metric | " + " | ".join(reports) + " |", "|---|" + "---:|" * len(reports)]
    for k in keys:
        lines.append(f"| {_label(k)} | " + " | ".join(_fmt(r.get(k, "—"), k) for r in reports.values()) + " |")
    return "\n".join(lines) + "\n"


def write_report(report: Mapping[str, Any], directory: str | Path, meta: Mapping[str, Any] | None = None) -> Path:
    """Write ``report.json`` (NaN as ``null`` plus a note) and ``report.md`` into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    undefined = sorted(k for k, v in report.items() if isinstance(v, float) and math.isnan(v))
    clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in report.items()}
    payload = {"metrics": clean, "undefined": undefined, **({"meta": dict(meta)} if meta else {})}
    (directory / "report.json").write_text(json.dumps(payload, indent=2, default=str))
    md = "# Fairness report\n\n"
    if meta:
        md += "".join(f"- **{k}**: {v}\n" for k, v in meta.items()) + "\n"
    md += to_markdown({"value": report})
    if undefined:
        md += "\nUndefined (a group or class absent from the split): " + ", ".join(undefined) + "\n"
    (directory / "report.md").write_text(md)
    return directory / "report.json"


def read_report(path: str | Path) -> dict[str, float]:
    """Read a ``report.json`` back (``null`` → NaN)."""
    data = json.loads(Path(path).read_text())
    return {k: (float("nan") if v is None else v) for k, v in data["metrics"].items()}
