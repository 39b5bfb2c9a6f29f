"""Claims against a baseline from ``faircl test`` runs: "setting S lowers the gap of the baseline at little utility
cost", decided by :mod:`faircl.eval.verdicts` exactly as the benchmarks decide the papers' claims.

Runs are paired by the seed of the fit that made their checkpoint. Where both sides kept their per-row predictions
(``rows.npz``, :mod:`faircl.eval.row_predictions`) on the same test rows, a claim is built from the rows
(:func:`faircl.eval.verdicts.claim_from_predictions`): the baseline's gap is tested against the attribute-permutation
null over the test and the validation rows (one pooled test, exact at its level), the paired effect uses the seeds ×
rows bootstrap, both models are checked for degenerate seeds. Gaps recomputed from rows: :data:`ROW_GAPS`. A leakage claim (optional) tests the baseline's leakage against the majority-group rate
on both splits (:func:`faircl.eval.verdicts.leakage_bias_tests`) and pairs the seeds' leakage. Every claim of one
comparison forms one Holm family.

Runs without rows (folders written before ``faircl test`` kept them) are compared from their per-seed summary
numbers (:func:`faircl.eval.verdicts.paired_seed_comparison`); their baseline's bias cannot be tested, so their
verdict's reason starts with "bias not checked" and "holds" is never given there (it reads "inconclusive").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from faircl.eval.verdicts import (GAP_METRICS, ClaimEvidence, SplitPredictions, Verdict, claim_from_predictions,
                                 decide, degenerate_by_seed, leakage_bias_tests, paired_bootstrap,
                                 paired_seed_comparison)
from faircl.eval.row_predictions import leakage_of, read_rows

__all__ = ["BaselineResult", "NOT_CHECKED", "ROW_GAPS", "compare_to_baseline", "decide_family", "leakage_claim"]

NOT_CHECKED = "bias not checked (no per-row predictions: re-run `faircl test` on these checkpoints)"
#: the gaps a claim can be decided from rows for (the others fall back to summary numbers, bias not checked)
ROW_GAPS = tuple(g for g in GAP_METRICS if g not in ("accuracy", "balanced_accuracy"))


@dataclass
class BaselineResult:
    """Seed-paired differences of every metric of each setting against the baseline (summary numbers), the verdicts
    of the claims, the seeds paired per setting and, per claim, whether it was decided from rows."""

    differences: dict[str, dict[str, Any]]  # setting name -> metric -> Effect
    verdicts: list[Verdict]
    seeds: dict[str, list[Any]]
    from_rows: list[bool]
    evidence: list[ClaimEvidence] = field(default_factory=list)  # what the verdicts were decided from


def leakage_claim(name: str, baseline_test: SplitPredictions, method_test: SplitPredictions,
                  baseline_val: SplitPredictions | None, baseline_leakage: Sequence[float],
                  method_leakage: Sequence[float], baseline_val_leakage: Sequence[float] | None = None, *,
                  utility: str = "accuracy", paper_effect: float | None = None, num_classes: int,
                  num_groups: int, n_bootstrap: int = 2000) -> ClaimEvidence:
    """"The method lowers leakage": the seeds' leakage paired (:func:`paired_seed_comparison`), the baseline's
    leakage tested against the majority-group rate on the test and the validation rows, the utility's change by the
    seeds × rows bootstrap, and both models' degenerate seeds."""
    return ClaimEvidence(
        name, paired_seed_comparison(baseline_leakage, method_leakage),
        paired_bootstrap(baseline_test.y, baseline_test.a, baseline_test.preds, method_test.preds, utility,
                         num_classes=num_classes, num_groups=num_groups, n_bootstrap=n_bootstrap),
        paper_effect, leakage_bias_tests(baseline_leakage, baseline_test.a, baseline_val_leakage,
                                         None if baseline_val is None else baseline_val.a),
        degenerate_by_seed(baseline_test, num_classes), degenerate_by_seed(method_test, num_classes))


def _load(runs: Sequence[Any]) -> list[dict[str, dict[str, np.ndarray]]] | None:
    """The rows of every run, or ``None`` if one of them has none."""
    if not all(getattr(r, "rows", None) and Path(r.rows).is_file() for r in runs):
        return None
    return [read_rows(r.rows) for r in runs]


def _same_rows(rows: Sequence[dict[str, dict[str, np.ndarray]]], split: str, who: Sequence[str]) -> None:
    first = rows[0][split]
    for r, path in zip(rows[1:], who[1:]):
        other = r[split]
        if not all(np.array_equal(first[f], other[f]) for f in ("idx", "y", "a")):
            raise ValueError(f"{path} was scored on other {split} rows than {who[0]}: runs are paired on the same "
                             "rows only (the same data set, split and attribute)")


def _split(rows: Sequence[dict[str, dict[str, np.ndarray]]], split: str) -> SplitPredictions:
    f = rows[0][split]
    return SplitPredictions(f["y"], f["a"], np.stack([r[split]["pred"] for r in rows]))


def compare_to_baseline(baseline: Any, settings: Sequence[Any], metrics: Sequence[str], gap: str,
                        labels: Mapping[str, str] | None = None, utility: str = "accuracy", margin: float = 0.02,
                        alpha: float = 0.05, paper_effect: float | None = None, leakage: bool = False,
                        leakage_paper_effect: float | None = None, n_bootstrap: int = 2000,
                        n_permutations: int = 1000, seed: int = 0) -> BaselineResult:
    """Each setting against the baseline on the seeds both have (paired by fit seed).

    Args:
        baseline, settings: :class:`faircl.eval.tradeoff.Setting` s (runs with ``seed``, ``test`` and ``rows``).
        metrics: the report metrics whose paired differences are tabulated (summary numbers).
        gap: the claimed gap (:data:`faircl.eval.verdicts.GAP_METRICS` for claims from rows).
        labels: setting name → the name used in the claims (e.g. ``"ConFair λ=0.11"``).
        utility: ``accuracy`` or ``balanced_accuracy``.
        margin, alpha: the utility margin and the family-wise error rate of :func:`faircl.eval.verdicts.decide`.
        paper_effect: the gap change a paper reports (fraction; negative = reduction) for every gap claim.
        leakage: add a "lowers leakage_h" claim per setting (rows only).
        leakage_paper_effect: the paper's leakage change.
        n_bootstrap, n_permutations, seed: of the bootstrap and the permutation null.

    Returns:
        A :class:`BaselineResult`.

    Raises:
        ValueError: runs of one claim were scored on different rows.
    """
    labels = dict(labels or {})
    name_of = labels.get
    diffs: dict[str, dict[str, Any]] = {}
    claims: list[ClaimEvidence] = []
    from_rows: list[bool] = []
    seeds: dict[str, list[Any]] = {}
    base_by_seed = {r.seed: r for r in baseline.runs}
    for s in settings:
        if s is baseline:
            continue
        shared = [r.seed for r in s.runs if r.seed in base_by_seed and r.seed is not None]
        if not shared:
            continue
        seeds[s.name] = shared
        b_runs, m_runs = [base_by_seed[k] for k in shared], [r for r in s.runs if r.seed in shared]
        diffs[s.name] = {}
        for metric in metrics:
            vb, vm = [r.test.get(metric, math.nan) for r in b_runs], [r.test.get(metric, math.nan) for r in m_runs]
            if all(map(math.isfinite, vb + vm)):
                diffs[s.name][metric] = paired_seed_comparison(vb, vm)
        claim = f"{name_of(s.name, s.name)} lowers {gap} vs {name_of(baseline.name, baseline.name)}"
        b_rows, m_rows = (_load(b_runs), _load(m_runs)) if gap in ROW_GAPS else (None, None)
        if b_rows is not None and m_rows is not None:
            who = [r.path for r in b_runs + m_runs]
            _same_rows(b_rows + m_rows, "test", who)
            bt, mt = _split(b_rows, "test"), _split(m_rows, "test")
            bv = None
            if all("val" in r for r in b_rows):
                _same_rows(b_rows, "val", who[:len(b_rows)])
                bv = _split(b_rows, "val")
            c = int(b_rows[0]["test"]["proba"].shape[-1])
            g = int(max(bt.a.max(), -1 if bv is None else bv.a.max())) + 1
            claims.append(claim_from_predictions(claim, bt, mt, bv, metric=gap, utility=utility,
                                                 paper_effect=paper_effect, num_classes=c, num_groups=max(g, 1),
                                                 n_permutations=n_permutations, n_bootstrap=n_bootstrap, seed=seed))
            from_rows.append(True)
            if leakage:
                lb = [leakage_of(r["test"]) for r in b_rows]
                lm = [leakage_of(r["test"]) for r in m_rows]
                lv = [leakage_of(r["val"]) for r in b_rows] if bv is not None else None
                if all(map(math.isfinite, lb + lm)):
                    claims.append(leakage_claim(
                        claim.replace(f"lowers {gap}", "lowers leakage_h", 1), bt, mt, bv, lb, lm, lv,
                        utility=utility, paper_effect=leakage_paper_effect, num_classes=c, num_groups=max(g, 1),
                        n_bootstrap=n_bootstrap))
                    from_rows.append(True)
        elif gap in diffs[s.name] and utility in diffs[s.name]:
            claims.append(ClaimEvidence(claim, diffs[s.name][gap], diffs[s.name][utility], paper_effect))
            from_rows.append(False)
    result = BaselineResult(diffs, [], seeds, from_rows, claims)
    result.verdicts = decide_family([result], alpha=alpha, margin=margin, gaps=[gap])[0] if claims else []
    return result


def decide_family(results: Sequence[BaselineResult], alpha: float = 0.05, margin: float = 0.02,
                  gaps: Sequence[str] | None = None, margins: Sequence[float] | None = None
                  ) -> list[list[Verdict]]:
    """Decide the claims of several comparisons as one Holm family (one results file); returns each comparison's
    verdicts. ``gaps``: each comparison's gap (for the "bias not checked" reasons); ``margins``: a utility margin
    per comparison (default ``margin``)."""
    claims = [c for r in results for c in r.evidence]
    if not claims:
        return [[] for _ in results]
    per_claim = [m for r, m in zip(results, margins or [margin] * len(results)) for _ in r.evidence]
    if len(set(per_claim)) == 1:
        decided = decide(claims, alpha=alpha, margin=per_claim[0])
    else:  # the Holm step is over all p-values; each claim's utility test uses its own margin
        decided = [decide(claims, alpha=alpha, margin=m)[i] for i, m in enumerate(per_claim)]
    out, i = [], 0
    for k, r in enumerate(results):
        gap = (gaps or [""] * len(results))[k]
        part = decided[i:i + len(r.evidence)]
        out.append([v if rows else _not_checked(v, gap) for v, rows in zip(part, r.from_rows)])
        i += len(r.evidence)
    return out


def _not_checked(v: Verdict, gap: str) -> Verdict:
    """A verdict decided without the baseline's bias test: never a bare "holds"."""
    word = "inconclusive" if v.verdict == "holds" else v.verdict
    why = NOT_CHECKED if gap in ROW_GAPS else (f"bias not checked ({gap} is not recomputed from rows; the rows' gaps "
                                                f"are {', '.join(ROW_GAPS)})")
    return replace(v, verdict=word, reason=f"{why}; {v.reason}")
