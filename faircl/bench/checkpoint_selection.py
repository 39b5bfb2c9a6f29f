"""Selection rules of a protocol: which checkpoint of a run its claims are judged on.

A protocol's ``selection`` is one of:

- ``{monitor: val/accuracy, mode: max}``: the epoch of best validation ``monitor`` (``val/dto`` with ``mode: min`` is
  fairlib's DTO selection; ``val/f1`` with ``mode: max`` Chi et al.'s), the earliest on a tie;
- ``{rule: gap_within, accuracy: val/accuracy, gap: val/tpr_gap_rms, tolerance: 0.01}``: Shen et al.'s rule, the
  epoch of lowest validation gap among the epochs whose validation accuracy is within ``tolerance`` (1 point) of the
  run's best;
- ``{rule: last}``: a fixed budget, the last epoch (finDML's and Martin & Ogbuokiri's protocols).

Every selection keeps a checkpoint of every epoch and the validation metrics of every epoch of the final training
stage (:class:`faircl.runs.history.EpochHistory`, in every run's ``epochs.json``); after the fit
:func:`pick_epoch` chooses one of those epochs, the other checkpoints are deleted. So a staged method is judged on
its final stage under every selection (INLP's first stage is plain CE, whose F1 would often be the best).
"""

from __future__ import annotations

import math
from typing import Any

from faircl.runs.user_error import UserError

__all__ = ["RULES", "check_selection", "describe", "pick_epoch", "selection_callbacks"]

#: rule name: its arguments with their defaults (what each rule picks: :func:`describe`)
RULES: dict[str, dict[str, Any]] = {
    "gap_within": {"accuracy": "val/accuracy", "gap": "val/tpr_gap_rms", "tolerance": 0.01},
    "last": {},
}


def check_selection(selection: dict[str, Any], where: str) -> dict[str, Any]:
    """``selection`` with a rule's defaults filled in; a clear error (naming ``where``) for anything else."""
    if not selection:
        return {}
    if "rule" not in selection:
        unknown = set(selection) - {"monitor", "mode"}
        if unknown or "monitor" not in selection:
            raise UserError(f"bench: {where}: 'selection' is {{monitor: <val metric>, mode: max|min}} or {{rule: "
                           f"{'|'.join(RULES)}, ...}}, got {selection!r}")
        if selection.get("mode", "max") not in ("max", "min"):
            raise UserError(f"bench: {where}: selection mode must be max or min, got {selection['mode']!r}")
        return dict(selection)
    rule = selection["rule"]
    if rule not in RULES:
        raise UserError(f"bench: {where}: unknown selection rule {rule!r} (rules: {', '.join(RULES)})")
    defaults = RULES[rule]
    unknown = set(selection) - set(defaults) - {"rule"}
    if unknown:
        raise UserError(f"bench: {where}: selection rule {rule!r} takes {sorted(defaults) or 'no arguments'}, not "
                       f"{sorted(unknown)}")
    out = {"rule": rule, **defaults, **{k: v for k, v in selection.items() if k != "rule"}}
    if rule == "gap_within" and not (isinstance(out["tolerance"], (int, float)) and out["tolerance"] >= 0):
        raise UserError(f"bench: {where}: selection tolerance must be a number >= 0 (0.01 = 1 point), got "
                       f"{out['tolerance']!r}")
    return out


def describe(selection: dict[str, Any], trainer: dict[str, Any] | None = None) -> str:
    """A few words for ``selection``: ``best val/accuracy``, ``gap_within 0.01 of the best val/accuracy``, ``last``;
    without one, the checkpoint callback of the protocol's ``trainer`` (else the method's own best checkpoint)."""
    if not selection:
        for cb in (trainer or {}).get("callbacks") or []:
            args = cb.get("init_args") or {} if isinstance(cb, dict) else {}
            if str(cb.get("class_path", "")).endswith("ModelCheckpoint") and args.get("monitor"):
                word = "lowest" if args.get("mode", "min") == "min" else "best"
                return f"{word} {args['monitor']} (the protocol's checkpoint callback)"
        return "the method's own best checkpoint (its default monitor)"
    if "rule" not in selection:
        return f"{'best' if selection.get('mode', 'max') == 'max' else 'lowest'} {selection['monitor']}"
    if selection["rule"] == "gap_within":
        return (f"lowest {selection['gap']} within {selection['tolerance']:g} of the best {selection['accuracy']} "
                "(Shen's rule)")
    return "the last epoch"


def selection_callbacks(selection: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``trainer.callbacks`` entries that carry out ``selection``: a checkpoint of every epoch (every run keeps the
    validation metrics of every epoch itself, :class:`faircl.runs.history.EpochHistory`)."""
    if not selection:
        return []
    return [{"class_path": "lightning.pytorch.callbacks.ModelCheckpoint", "init_args": {
                "save_top_k": -1, "filename": "epoch={epoch}", "auto_insert_metric_name": False}}]


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def pick_epoch(history: list[dict[str, Any]], selection: dict[str, Any]) -> tuple[int, str]:
    """The epoch ``selection`` (:func:`check_selection`) picks from ``history``
    (:class:`~faircl.runs.history.EpochHistory`), and a sentence that says why. Raises ``ValueError`` when no
    epoch was validated."""
    if not history:
        raise ValueError("no epoch was validated: nothing to select from")
    if "rule" not in selection:
        key, mode = selection["monitor"], selection.get("mode", "max")
        scored = [e for e in history if _finite(e["metrics"].get(key))]
        if not scored:
            raise ValueError(f"no epoch logged a finite {key}: nothing to select from")
        sign = 1.0 if mode == "max" else -1.0
        top = min(scored, key=lambda e: (-sign * e["metrics"][key], e["epoch"]))
        return top["epoch"], (f"epoch {top['epoch']}: the {'best' if mode == 'max' else 'lowest'} {key} "
                              f"({top['metrics'][key]:.4f}) among the final stage's {len(scored)} epoch(s)")
    rule = selection["rule"]
    if rule == "last":
        last = max(e["epoch"] for e in history)
        return last, f"the last epoch ({last})"
    acc_key, gap_key, tol = selection["accuracy"], selection["gap"], float(selection["tolerance"])
    scored = [e for e in history if _finite(e["metrics"].get(acc_key))]
    if not scored:
        raise ValueError(f"no epoch logged a finite {acc_key}: nothing to select from")
    best_acc = max(e["metrics"][acc_key] for e in scored)
    # a tolerance of round-off size: an accuracy equal to the bound in exact arithmetic stays in
    near = [e for e in scored if e["metrics"][acc_key] >= best_acc - tol - 1e-12]
    with_gap = [e for e in near if _finite(e["metrics"].get(gap_key))]
    if not with_gap:
        top = min((e for e in near if e["metrics"][acc_key] == best_acc), key=lambda e: e["epoch"])
        return top["epoch"], (f"epoch {top['epoch']}: the best {acc_key} ({best_acc:.4f}); no epoch within "
                              f"{tol:g} of it logged a finite {gap_key}")
    chosen = min(with_gap, key=lambda e: (e["metrics"][gap_key], e["epoch"]))
    m = chosen["metrics"]
    return chosen["epoch"], (f"epoch {chosen['epoch']}: the lowest {gap_key} ({m[gap_key]:.4f}) among the "
                             f"{len(near)} epoch(s) whose {acc_key} is within {tol:g} of the best ({best_acc:.4f}; "
                             f"this epoch {m[acc_key]:.4f})")
