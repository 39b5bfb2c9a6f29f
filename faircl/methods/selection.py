"""Model selection: the validation metric that picks the best checkpoint, and fairness-aware selection scores."""

from __future__ import annotations

import math
from typing import Any

from faircl._checks import check_choice
from faircl.metrics.tradeoff import dto

#: name parts of validation metrics where lower is better
LOWER_IS_BETTER = ("loss", "gap", "leakage", "dto", "difference", "cced")


def monitor_mode(name: str, mode: str | None = None, default: tuple[str, str] | None = None) -> str:
    """``min`` | ``max`` for the monitored metric ``name``: ``mode`` when given, the mode of ``default`` when ``name``
    is its metric, else ``min`` for losses, gaps, leakage and DTO and ``max`` otherwise."""
    if mode is not None:
        check_choice("monitor_mode", mode, ("min", "max"))
        return mode
    if default is not None and name == default[0]:
        return default[1]
    return "min" if any(t in name for t in LOWER_IS_BETTER) else "max"


def selection_scores(values: dict[str, float]) -> dict[str, float]:
    """Fairness-aware selection scores from validation ``accuracy`` and ``tpr_gap_rms`` (GAP):

    - ``dto``: fairlib's distance to the optimum, with the utopia point (accuracy 1, 1 − GAP = 1); lower is better;
    - ``balanced_dto``: the same distance with balanced accuracy (mean per-class recall) in place of accuracy, for
      imbalanced classes, where a constant predictor has high accuracy and every gap 0 (when ``balanced_accuracy``
      is given);
    - ``tradeoff``: Shen et al.'s Tradeoff restricted to its accuracy and fairness terms (weights ½ and ¼,
      renormalised to ⅔ and ⅓), with utopia 1; higher is better.

    Empty when either input is missing or not finite (e.g. a group absent from the validation split).
    """
    acc, gap = values.get("accuracy"), values.get("tpr_gap_rms")
    if acc is None or gap is None or not (math.isfinite(acc) and math.isfinite(gap)):
        return {}
    out = {"dto": float(dto([acc], [1.0 - gap], 1.0, 1.0)[0]), "tradeoff": float((2 * acc + (1.0 - gap)) / 3)}
    bal = values.get("balanced_accuracy")
    if bal is not None and math.isfinite(bal):
        out["balanced_dto"] = float(dto([bal], [1.0 - gap], 1.0, 1.0)[0])
    return out


def monitor_spec(module: Any) -> tuple[str, str]:
    """``(metric, mode)`` that selects a method's best checkpoint: its ``monitor`` / ``monitor_mode`` arguments, else
    its class attribute ``default_monitor``."""
    default = getattr(module, "default_monitor", ("val/accuracy", "max"))
    hparams = getattr(module, "hparams", {})
    name = hparams.get("monitor") or default[0]
    return name, monitor_mode(name, hparams.get("monitor_mode"), default)
