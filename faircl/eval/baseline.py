"""Claims against a baseline from ``faircl test`` runs: "setting S lowers the gap of the baseline at little utility
cost". :func:`baseline_evidence` builds each claim's evidence from the runs (read by :mod:`faircl.runs.folders`);
:func:`faircl.eval.verdicts.decide` decides them, exactly as the benchmarks decide the papers' claims
(:func:`compare_to_baseline`: both, for one comparison).

Runs are paired by the seed of the fit that made their checkpoint. Where both sides kept their per-row predictions
(``rows.npz``, :mod:`faircl.eval.row_predictions`) on the same test rows, a claim is built from the rows
(:func:`faircl.eval.verdicts.claim_from_predictions`): the baseline's gap is tested against the attribute-permutation
null over the test and the validation rows (one pooled test, exact at its level), the paired effect uses the seeds ×
rows bootstrap, both models are checked for degenerate seeds. Gaps recomputed from rows: :data:`ROW_GAPS`. A leakage claim (optional) tests the baseline's leakage against the majority-group rate
on both splits (:func:`faircl.eval.verdicts.leakage_bias_tests`) and pairs the seeds' leakage. Every claim of one
comparison forms one family (:func:`faircl.eval.verdicts.decide`).

Runs without rows (folders written before ``faircl test`` kept them) are compared from their per-seed summary
numbers (:func:`faircl.eval.verdicts.paired_seed_comparison`); their baseline's bias cannot be tested, so their
verdict's reason starts with "bias not checked" and neither "reproduces" nor "lowers, less than target" is given there (it reads "inconclusive").

A claim on a statistic of the report that involves no attribute (e.g. cluster dominance) has no null at all: it is
the paired t-test of the seeds' values (:func:`statistic_evidence`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from faircl.eval.row_predictions import read_runs_rows
from faircl.eval.row_predictions import leakage_of
from faircl.eval.verdicts import (GAP_METRICS, ClaimEvidence, SplitPredictions, Verdict, claim_from_predictions,
                                  decide, degenerate_by_seed, leakage_bias_tests, paired_bootstrap,
                                  paired_seed_comparison)

__all__ = ["BaselineResult", "NOT_CHECKED", "ROW_GAPS", "baseline_evidence", "compare_to_baseline", "leakage_claim",
           "statistic_evidence"]

NOT_CHECKED = "bias not checked (no per-row predictions: re-run `faircl test` on these checkpoints)"
#: the gaps a claim can be decided from rows for (the others fall back to summary numbers, bias not checked)
ROW_GAPS = tuple(g for g in GAP_METRICS if g not in ("accuracy", "balanced_accuracy"))


@dataclass
class BaselineResult:
    """Seed-paired differences of every metric of each setting against the baseline (summary numbers), the verdicts
    of the claims (empty until decided), the seeds paired per setting and, per claim, whether it was decided from
    rows and its evidence."""

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


def _load(runs: Sequence[Any], rows: Mapping[str, dict[str, dict[str, np.ndarray]]]
          ) -> list[dict[str, dict[str, np.ndarray]]] | None:
    """The rows of every run, or ``None`` if one of them has none."""
    if not all(getattr(r, "rows", None) and r.rows in rows for r in runs):
        return None
    return [rows[r.rows] for r in runs]


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
    """Each setting against the baseline on the seeds both have (paired by fit seed), its claims decided as one
    family: :func:`baseline_evidence` then :func:`faircl.eval.verdicts.decide`.

    Args:
        margin, alpha: the utility margin and the family-wise error rate of :func:`faircl.eval.verdicts.decide`.
        the others: as :func:`baseline_evidence`.

    Returns:
        A :class:`BaselineResult` with its verdicts.

    Raises:
        ValueError: runs of one claim were scored on different rows.
    """
    result = baseline_evidence(baseline, settings, metrics, gap, labels, utility=utility, paper_effect=paper_effect,
                               leakage=leakage, leakage_paper_effect=leakage_paper_effect, n_bootstrap=n_bootstrap,
                               n_permutations=n_permutations, seed=seed)
    result.verdicts = decide(result.evidence, alpha=alpha, margin=margin) if result.evidence else []
    return result


def baseline_evidence(baseline: Any, settings: Sequence[Any], metrics: Sequence[str], gap: str,
                      labels: Mapping[str, str] | None = None, utility: str = "accuracy",
                      paper_effect: float | None = None, leakage: bool = False,
                      leakage_paper_effect: float | None = None, n_bootstrap: int = 2000,
                      n_permutations: int = 1000, seed: int = 0,
                      rows: Mapping[str, dict[str, dict[str, np.ndarray]]] | None = None) -> BaselineResult:
    """The evidence of each setting's claims against the baseline on the seeds both have (paired by fit seed),
    undecided.

    Args:
        baseline, settings: :class:`faircl.eval.tradeoff.Setting` s (runs with ``seed``, ``test`` and ``rows``).
        metrics: the report metrics whose paired differences are tabulated (summary numbers).
        gap: the claimed gap (:data:`ROW_GAPS` for claims from rows).
        labels: setting name → the name used in the claims (e.g. ``"ConFair λ=0.11"``).
        utility: ``accuracy`` or ``balanced_accuracy``.
        paper_effect: the gap change a paper reports (fraction; negative = reduction) for every gap claim.
        leakage: add a "lowers leakage_h" claim per setting (rows only).
        leakage_paper_effect: the paper's leakage change.
        n_bootstrap, n_permutations, seed: of the bootstrap and the permutation null.
        rows: the runs' per-row predictions already read (:func:`faircl.eval.row_predictions.read_runs_rows`);
            default: read here.

    Returns:
        A :class:`BaselineResult` without verdicts (``evidence`` and ``from_rows`` per claim).

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
    if rows is None and gap in ROW_GAPS:
        rows = read_runs_rows([*baseline.runs, *(r for s in settings for r in s.runs)])
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
        b_rows, m_rows = (_load(b_runs, rows), _load(m_runs, rows)) if gap in ROW_GAPS and rows else (None, None)
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
            why = NOT_CHECKED if gap in ROW_GAPS else (f"bias not checked ({gap} is not recomputed from rows; the "
                                                       f"rows' gaps are {', '.join(ROW_GAPS)})")
            claims.append(ClaimEvidence(claim, diffs[s.name][gap], diffs[s.name][utility], paper_effect,
                                        unchecked=why))
            from_rows.append(False)
    return BaselineResult(diffs, [], seeds, from_rows, claims)


def statistic_evidence(baseline: Any, method: Any, statistic: str, utility: str = "accuracy",
                       paper_effect: float | None = None
                       ) -> tuple[ClaimEvidence, list[int], tuple[list[float], list[float]],
                                  tuple[list[float], list[float]]] | str:
    """The evidence of "the method lowers ``statistic``" (a scalar of the test report that involves no attribute,
    e.g. cluster dominance): both settings' values paired by seed (a t-test over seeds; there is no group to
    permute, so no null), the utility likewise.

    Args:
        baseline, method: :class:`faircl.eval.tradeoff.Setting` s (their names name the claim).

    Returns:
        The evidence, the paired seeds and the (baseline, method) values of the statistic and of the utility on
        them; or, when the claim cannot be decided, why (fewer than 2 seeds with the statistic on both sides, or a
        run without a finite utility).
    """
    def by_seed(runs: Sequence[Any]) -> dict[int, Any]:
        return {int(r.seed): r for r in runs if math.isfinite(float(r.test.get(statistic, math.nan)))}

    b, m = by_seed(baseline.runs), by_seed(method.runs)
    seeds = sorted(set(b) & set(m))
    name = f"{method.name} lowers {statistic} vs {baseline.name}"
    if len(seeds) < 2:
        return (f"{name}: {statistic} is in the test report of {len(b)} of {len(baseline.runs)} {baseline.name} "
                f"run(s) and {len(m)} of {len(method.runs)} {method.name} run(s); a paired comparison needs 2 seeds "
                "with both")
    values = ([float(b[k].test[statistic]) for k in seeds], [float(m[k].test[statistic]) for k in seeds])
    util = ([float(b[k].test.get(utility, math.nan)) for k in seeds],
            [float(m[k].test.get(utility, math.nan)) for k in seeds])
    if not all(math.isfinite(u) for us in util for u in us):
        return f"{name}: a run's test report has no finite {utility} (the utility)"
    ev = ClaimEvidence(name, paired_seed_comparison(*values), paired_seed_comparison(*util), paper_effect)
    return ev, seeds, values, util
