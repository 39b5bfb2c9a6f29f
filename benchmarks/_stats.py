"""The benchmarks' verdicts, decided by the library's comparison tool (:mod:`faircl.eval.compare`).

One implementation: this module only adapts the results files' per-seed reports to
:func:`faircl.eval.compare.decide` and formats the summary table. The rule (see ``faircl/eval/compare.py``):

* **untestable** — the baseline's gap does not exceed the attribute-permuted null's 95th percentile, one test over
  the test and validation rows pooled (leakage: the majority-group rate's binomial null on each split), or the
  baseline is degenerate;
* **degenerate** — the method is no classifier (top-class share well above the split's majority rate, or balanced
  accuracy near chance) on at least half of the seeds;
* **holds** / **contradicted** — the seed-paired change is significant after Holm–Bonferroni over every claim of the
  results file, in the claimed / the wrong direction (holds also needs the utility change's lower 95% bound ≥ −2
  points);
* **does not hold** — no significant change although the "holds" MDE (the smallest reduction that reads holds with
  80% power, utility margin included) is ≤ the paper's effect;
* **inconclusive** — the "holds" MDE exceeds the paper's effect (or the paper reports none).

``t_interval`` / ``paired_difference`` stay for the descriptive columns of the tables.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from faircl.eval.compare import (VERDICTS, BiasTest, ClaimEvidence, Verdict, decide,  # noqa: E402
                                 paired_seed_comparison)

MARGIN = 0.02
SUMMARY_HEADER = ["| claim | protocol | paper effect | our effect [95% CI] | Holm p | MDE | holds-MDE | "
                  "utility change [95% CI] | baseline bias vs null | verdict |",
                  "|---|---|---|---|---|---|---|---|---|---|"]


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values with a two-sided ``level`` t-interval ``[lo, hi]`` (unbounded for ``n < 2``)."""

    mean: float
    lo: float
    hi: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2

    def excludes_zero(self) -> bool:
        return self.lo > 0 or self.hi < 0

    def fmt(self, scale: float = 100.0, digits: int = 1) -> str:
        """``"mean ± half"`` (×``scale``), ``± ∞`` for a single value."""
        if not math.isfinite(self.half_width):
            return f"{scale * self.mean:+.{digits}f} ± ∞"
        return f"{scale * self.mean:+.{digits}f} ± {scale * self.half_width:.{digits}f}"


def t_interval(values: Sequence[float], level: float = 0.95) -> Interval:
    """Mean and Student-t confidence interval of ``values`` (NaNs are an error: a run that failed must be said)."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or len(x) == 0:
        raise ValueError(f"need a non-empty 1-d sequence of values, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"values must be finite, got {x.tolist()}")
    n, mean = len(x), float(x.mean())
    if n < 2:
        return Interval(mean, -math.inf, math.inf, n)
    half = float(stats.t.ppf(0.5 + level / 2, df=n - 1)) * float(x.std(ddof=1)) / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def paired_difference(method: Sequence[float], baseline: Sequence[float], level: float = 0.95) -> Interval:
    """The seed-paired change ``method − baseline`` (:func:`faircl.eval.compare.paired_seed_comparison`)."""
    e = paired_seed_comparison(baseline, method, level)
    return Interval(e.mean, e.lo, e.hi, e.n_seeds)


def summary_claim(name: str, baseline: Sequence[float], method: Sequence[float], baseline_utility: Sequence[float],
                  method_utility: Sequence[float], *, paper_effect: float | None = None,
                  bias: Sequence[BiasTest] = (), baseline_degenerate: Sequence[str | None] = (),
                  method_degenerate: Sequence[str | None] = ()) -> ClaimEvidence:
    """A claim's evidence from per-seed summary numbers (fractions; the gap falling is claimed)."""
    return ClaimEvidence(name, paired_seed_comparison(baseline, method),
                         paired_seed_comparison(baseline_utility, method_utility), paper_effect, tuple(bias),
                         tuple(baseline_degenerate), tuple(method_degenerate))


def _row(protocol: str, v: Verdict) -> str:
    paper = "—" if v.paper_effect is None else f"{100 * v.paper_effect:+.1f}"
    bias = "; ".join(t.describe() for t in v.bias) or "not checked (no per-row predictions)"
    cells = [v.name, protocol, paper, v.effect.fmt(), "—" if math.isnan(v.p_holm) else f"{v.p_holm:.3g}",
             f"{100 * v.mde:.1f}" if math.isfinite(v.mde) else "∞",
             f"{100 * v.mde_holds:.1f}" if math.isfinite(v.mde_holds) else "∞", v.utility.fmt(), bias,
             f"**{v.verdict}** ({v.reason}; {v.effect.n_seeds} seeds)"]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def decide_rows(rows: list[tuple[str, ClaimEvidence]], margin: float = MARGIN) -> list[tuple[str, Verdict]]:
    """Decide every claim of a results file together (one Holm family)."""
    verdicts = decide([ev for _, ev in rows], margin=margin)
    return [(protocol, v) for (protocol, _), v in zip(rows, verdicts)]


def summary_table(rows: list[tuple[str, ClaimEvidence]], margin: float = MARGIN) -> list[str]:
    """The markdown summary table for the top of a results file (values in points, ×100)."""
    return SUMMARY_HEADER + [_row(p, v) for p, v in decide_rows(rows, margin)]


RULE = ("Verdict rule (`faircl.eval.compare`, called by `benchmarks/_stats.py`; error rates measured in "
        "`benchmarks/results/calibration.md`): the change is method − baseline (×100) paired by seed, its variance "
        "the seeds' spread plus the test-row noise that every seed shares, with a 95% Student-t interval on seeds − 1 "
        "df; *untestable* when the baseline's gap does not exceed the 95th percentile of its null (attribute "
        "permuted within each label, 1,000 permutations) in one test over the test and validation rows pooled "
        "(leakage: the binomial null of always guessing the majority group, on the test and the validation split) "
        "or the baseline is "
        "degenerate; *degenerate* when the method gives one class to far more rows than the split's majority class "
        "(or has chance balanced accuracy) on at least half of the seeds; *holds* / *contradicted* when the change "
        "is significant after Holm–Bonferroni over every claim of this file (p < 0.05), in the claimed / the wrong "
        "direction, and (holds) the utility change's lower 95% bound is ≥ −2 points; *does not hold* when it is "
        "not significant although the holds-MDE (the smallest reduction that reads *holds* with 80% power at the "
        "Bonferroni level when the method costs no utility; ∞ when the utility interval is too wide for that) is ≤ "
        "the paper's effect; *inconclusive* when the holds-MDE exceeds the paper's effect or the paper gives none, "
        "or the utility interval straddles −2 points. MDE: the gap test's alone.")


def majority_share(predictions: Sequence[int]) -> float:
    """Share of the most frequent predicted class."""
    p = np.asarray(predictions)
    if p.size == 0:
        raise ValueError("no predictions")
    return float(np.bincount(p.astype(np.int64)).max() / p.size)


__all__ = ["Interval", "MARGIN", "RULE", "SUMMARY_HEADER", "VERDICTS", "decide_rows", "majority_share",
           "paired_difference", "summary_claim", "summary_table", "t_interval"]
