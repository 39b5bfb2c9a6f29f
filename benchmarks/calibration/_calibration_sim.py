"""Synthetic protocols for :mod:`calibration`: per-row predictions of a baseline and a method with a planted TPR gap,
accuracy, effect and seed-to-seed shift, decided through :func:`faircl.eval.verdicts.claim_from_predictions` and
:func:`faircl.eval.verdicts.decide` (the public path the benchmarks and ``faircl compare`` use).

The model of one protocol (binary ``y`` and ``a``, both balanced):

* a row is predicted correctly with probability ``acc ± bias / 2`` (``+`` where ``a = y``), so the TPR gap of both
  classes, and ``tpr_gap_rms``, is ``|bias|``;
* whether a row is right is ``Φ(ρ · h_row + √(1 − ρ²) · ε) < p``: ``h_row`` is the row's difficulty, shared by every
  seed and both models (trained classifiers err mostly on the same rows), ``ε`` is the seed's own noise; ``ρ`` is the
  correlation of two runs' latent scores;
* a seed shift moves the *method's* bias of each seed by ``N(0, shift²)`` (training noise that the rows cannot see);
* every replicate draws new test and validation rows, so the rows' sampling is part of what the rule must cover.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from faircl.eval.verdicts import SplitPredictions, claim_from_predictions, decide

ALPHA = 0.05
PAPER_EFFECT = -0.045     # the change the simulated paper reports (the gap falls by 4.5 points)


@dataclass(frozen=True)
class Design:
    """One scenario: seeds, baseline bias, the method's change of it, seed shift, utility change, sharing."""

    seeds: int = 5
    bias: float = 0.20          # the baseline's TPR gap
    effect: float = 0.0         # method − baseline (negative: the gap falls)
    shift: float = 0.0          # sd of the method's per-seed shift of its gap
    utility: float = 0.0        # method − baseline accuracy
    acc: float = 0.80
    rho: float = 0.6
    n_test: int = 2000
    n_val: int = 1000


@dataclass(frozen=True)
class Outcome:
    """What one decided claim reports (fractions)."""

    verdict: str
    testable: bool
    mean: float
    se: float
    df: float
    p: float
    p_holm: float
    mde: float
    mde_holds: float
    u_mean: float
    u_se: float
    u_lo: float
    u_hi: float
    seeds_needed: int | None = None
    rows_needed: int | None = None  # set when the seeds are those needed on more rows than the design's


def _split(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return rng.integers(0, 2, n), rng.integers(0, 2, n), rng.standard_normal(n)


def _predict(rng: np.random.Generator, y, a, hard, bias: np.ndarray, acc: float, rho: float) -> np.ndarray:
    """``[S, n]`` predictions; ``bias`` per seed ``[S]``."""
    p = acc + np.where(a == y, 0.5, -0.5)[None, :] * bias[:, None]
    z = rho * hard[None, :] + math.sqrt(1 - rho * rho) * rng.standard_normal((len(bias), len(y)))
    right = 0.5 * special.erfc(-z / math.sqrt(2)) < p                       # Φ(z) < p
    return np.where(right, y[None, :], 1 - y[None, :]).astype(np.int64)


def draw(d: Design, rng: np.random.Generator, seeds: int | None = None) -> tuple:
    """One protocol's rows and ``seeds`` seeds' predictions (``d.seeds`` by default): the test split's ``(y, a)``,
    the baseline's and the method's test predictions ``[S, n]``, the validation split's ``(y, a)`` and the baseline's
    validation predictions. Seed ``s``'s rows do not depend on the number drawn: the first ``n`` of ``N`` seeds are
    a draw of ``n`` seeds."""
    (yt, at, ht), (yv, av, hv) = _split(rng, d.n_test), _split(rng, d.n_val)
    s = d.seeds if seeds is None else seeds
    base_b = np.full(s, d.bias)
    meth_b = d.bias + d.effect + d.shift * rng.standard_normal(s)
    bt = _predict(rng, yt, at, ht, base_b, d.acc, d.rho)
    mt = _predict(rng, yt, at, ht, meth_b, d.acc + d.utility, d.rho)
    bv = _predict(rng, yv, av, hv, base_b, d.acc, d.rho)
    return (yt, at), bt, mt, (yv, av), bv


def claim(drawn: tuple, n: int | None = None, name: str = "claim", *, n_permutations: int = 200,
          n_bootstrap: int = 300, seed: int = 0):
    """The :class:`~faircl.eval.verdicts.ClaimEvidence` ("the method lowers GAP vs the baseline") of a :func:`draw`,
    on its first ``n`` seeds (all by default)."""
    (yt, at), bt, mt, (yv, av), bv = drawn
    return claim_from_predictions(name, SplitPredictions(yt, at, bt[:n]), SplitPredictions(yt, at, mt[:n]),
                                  SplitPredictions(yv, av, bv[:n]), metric="tpr_gap_rms", paper_effect=PAPER_EFFECT,
                                  n_permutations=n_permutations, n_bootstrap=n_bootstrap, seed=seed)


def evidence(d: Design, rng: np.random.Generator, name: str = "claim", *, n_permutations: int = 200,
             n_bootstrap: int = 300, seed: int = 0):
    """One protocol's :class:`~faircl.eval.verdicts.ClaimEvidence` ("the method lowers GAP vs the baseline")."""
    return claim(draw(d, rng), None, name, n_permutations=n_permutations, n_bootstrap=n_bootstrap, seed=seed)


def outcome(ev, v) -> Outcome:
    return Outcome(v.verdict, all(t.real for t in ev.bias), ev.effect.mean, ev.effect.se, ev.effect.df,
                   ev.effect.p_value, v.p_adj, v.mde, math.nan, ev.utility.mean,
                   ev.utility.se, ev.utility.lo, ev.utility.hi, v.seeds_needed, getattr(v, "rows_needed", None))


def replicate(d: Design, reps: int, seed: int, **kw) -> list[Outcome]:
    """``reps`` single-claim families of design ``d`` (seeded: the same numbers on every run)."""
    rng = np.random.default_rng(seed)
    out = []
    for r in range(reps):
        ev = evidence(d, rng, seed=r, **kw)
        out.append(outcome(ev, decide([ev], alpha=ALPHA)[0]))
    return out


def family(null: Design, real: Design, n_null: int, reps: int, seed: int, **kw) -> list[list[Outcome]]:
    """``reps`` Holm families of ``n_null`` null claims and one real claim (the last)."""
    rng = np.random.default_rng(seed)
    out = []
    for r in range(reps):
        evs = [evidence(null, rng, f"null {i}", seed=r, **kw) for i in range(n_null)]
        evs.append(evidence(real, rng, "real", seed=r, **kw))
        out.append([outcome(e, v) for e, v in zip(evs, decide(evs, alpha=ALPHA))])
    return out


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score 95% interval of ``k`` successes in ``n``."""
    if n == 0:
        return math.nan, math.nan
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def rate(k: int, n: int) -> str:
    """``"k/n = x% [lo, hi]"`` with the Wilson interval."""
    lo, hi = wilson(k, n)
    return f"{k}/{n} = {100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def sd_over_se(values, ses) -> float:
    """Spread of the estimates across replicates over their reported standard error (root mean square)."""
    v, s = np.asarray(values, float), np.asarray(ses, float)
    s = s[np.isfinite(s)]
    return float(np.std(v, ddof=1) / math.sqrt(np.mean(s * s))) if len(s) > 1 else math.nan


# ------------------------------------------------------------------------------------------ item claims
@dataclass(frozen=True)
class ItemDesign:
    """An item claim (a CrowS-Pairs-style preference share, judged by ``|share − 0.5|``): a fixed baseline encoder and
    ``seeds`` trained ones. Item ``i`` has a latent ``u_i`` shared by every encoder; the baseline prefers the
    stereotyping member where ``Φ(u_i) < share``, seed ``s`` of the method where ``Φ(ρ u_i + √(1 − ρ²) ε_is) <
    share + effect + δ_s`` with ``δ_s ~ N(0, shift²)`` (the seed's training noise). Every replicate draws new items."""

    seeds: int = 3
    shift: float = 0.04
    effect: float = 0.0         # change of the method's share (toward 0.5 when negative: share > 0.5)
    share: float = 0.60
    rho: float = 0.6
    n_items: int = 400


def item_effect(d: ItemDesign, rng: np.random.Generator, n_bootstrap: int = 200, seed: int = 0, rule=None):
    """One replicate's :class:`~faircl.eval.statistics.Effect` of ``|share − 0.5|`` (method − baseline) through
    :func:`faircl.eval.item_nulls.paired_item_bootstrap` (or ``rule``, a function of the same signature)."""
    from faircl.eval.item_nulls import paired_item_bootstrap, preference_deviation
    u = rng.standard_normal(d.n_items)
    def phi(z):
        return 0.5 * special.erfc(-z / math.sqrt(2))
    base = (phi(u) < d.share).astype(np.float64)
    z = d.rho * u[None, :] + math.sqrt(1 - d.rho ** 2) * rng.standard_normal((d.seeds, d.n_items))
    cut = d.share + d.effect + d.shift * rng.standard_normal(d.seeds)
    meth = (phi(z) < cut[:, None]).astype(np.float64)
    rule = rule or paired_item_bootstrap
    return rule(lambda x, w: preference_deviation(x, w), [base] * d.seeds, list(meth), np.zeros(d.n_items),
                n_bootstrap=n_bootstrap, seed=seed)


def item_replicate(d: ItemDesign, reps: int, seed: int, rule=None, n_bootstrap: int = 200) -> list:
    """``reps`` item effects of design ``d`` (seeded)."""
    rng = np.random.default_rng(seed)
    return [item_effect(d, rng, n_bootstrap, r, rule) for r in range(reps)]


def former_item_rule(stat, baseline, method, strata, n_bootstrap: int = 2000, seed: int = 0):
    """The item rule before the calibrated reference: Student-t on ``S − 1`` df (``calibrated=False``)."""
    from faircl.eval.item_nulls import paired_item_bootstrap
    return paired_item_bootstrap(stat, baseline, method, strata, n_bootstrap=n_bootstrap, seed=seed, calibrated=False)
