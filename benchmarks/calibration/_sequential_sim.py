"""The sequential design of ``faircl bench --max-seeds N`` (:mod:`faircl.eval.sequential`), simulated for
:mod:`calibration`.

Each replicate draws its rows and the predictions of ``N`` seeds once (:func:`_calibration_sim.draw`); a look at
``n`` seeds decides the claim from the first ``n`` seeds (the seeds a re-run keeps, plus the new ones), at the look's
level (:func:`faircl.eval.sequential.schedule`), and the claim stops at the first look whose verdict is decided
(its word is final: :attr:`faircl.eval.verdicts.Verdict.final`, with the cap as the horizon). The fixed design at the same cap decides the same replicate once, at ``N``
seeds and level α. Every replicate is run at α = 0.05 and at α/10 (the whole design: the looks' levels are α/2, α/4,
… of that α), on the same draws.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _calibration_sim import ALPHA, PAPER_EFFECT, Design, claim, draw, rate, wilson

from faircl.eval.sequential import schedule
from faircl.eval.verdicts import compatible, decide

ALPHAS = (ALPHA, ALPHA / 10)
DESIGNS = ((3, 12), (5, 20))                     # (first seeds n₀, cap N)
EFFECTS = (-0.01, -0.02, PAPER_EFFECT, -0.06, -0.09)    # the graded scenario's true effects (two in between)
#: replicates per cell of the full section (sized for about 12 minutes on one core with lean resampling)
SEQ_FULL = {(3, 12): dict(nobias=150, null=600, shift=800, graded=160),
            (5, 20): dict(nobias=100, null=300, shift=1000, graded=100)}
QUICK = dict(real=40, none=100)                  # the test suite's cells (3 → 12 seeds, α = 0.05)
BEGIN, END = "<!-- sequential: begin -->", "<!-- sequential: end -->"
#: the former rule's numbers, measured before it was replaced (a scratch run of the 3 → 6 → 12 design)
BEFORE = ("Before this rule (holds / does not hold, stopping at any decided word), the in-between truth −2 points read "
          "holds 43% / does not hold 57% sequentially and holds 98% fixed at the cap: 44% of replicates read does not "
          "hold sequentially and holds at the cap on a superset of the same seeds.")


@dataclass(frozen=True)
class Run:
    """One replicate of the sequential design at one level α."""

    verdict: str    # the final word ("inconclusive": still open at the cap)
    look: int       # the look at which its word was final (1-based; 0: none before the cap)
    seeds: int      # the seeds it used (the cap when no look decided it)
    fixed: str      # the fixed design's word: one decision at the cap's seeds, level α
    compatible: bool = True   # whether the two words' axes can both be right (faircl.eval.verdicts.compatible)


def sequential(d: Design, start: int, cap: int, reps: int, seed: int, alphas=ALPHAS, fixed: bool = True,
               **kw) -> dict[float, list[Run]]:
    """``reps`` replicates of design ``d`` (its ``seeds`` ignored) through the looks ``start, 2·start, …, cap`` at
    each level of ``alphas`` (seeded: the same numbers on every run); ``fixed=False`` skips the fixed design (its
    verdict reads ``""``)."""
    rng = np.random.default_rng(seed)
    out: dict[float, list[Run]] = {a: [] for a in alphas}
    for r in range(reps):
        drawn, cache = draw(d, rng, cap), {}

        def ev(n: int):
            if n not in cache:
                cache[n] = claim(drawn, n, seed=r, **kw)
            return cache[n]

        for a in alphas:
            design = schedule({"claim": start}, cap, a)
            last = design[-1]
            for lk in design:
                n = lk.seeds["claim"]
                hz = None if lk is last else (cap, last.level)
                v = decide([ev(n)], alpha=lk.level, horizon=[hz])[0]
                if v.final:
                    break
            look = lk.number if lk is not last else 0
            f = decide([ev(cap)], alpha=a)[0] if fixed else None
            out[a].append(Run(v.verdict, look, n, f.verdict if f else "", compatible(v, f) if f else True))
    return out


def _n(runs, *words, fixed: bool = False) -> int:
    return sum((r.fixed if fixed else r.verdict) in words for r in runs)


NO_FALL = ("no change", "no fall shown")
_SHORT = {"reproduces": "R", "lowers, less than target": "L", "utility lost": "U", "contradicted": "C",
          "no change": "N", "no fall shown": "F", "inconclusive": "I", "untestable": "X", "degenerate": "D"}


def _words(runs, fixed: bool = False) -> str:
    """Each word's share of the replicates (percent), in short."""
    n = len(runs)
    return " ".join(f"{short} {100 * _n(runs, w, fixed=fixed) / n:.0f}" for w, short in _SHORT.items()
                    if _n(runs, w, fixed=fixed))


def _mean_seeds(runs) -> str:
    return f"{np.mean([r.seeds for r in runs]):.1f}"


def _looks(runs, k: int) -> str:
    """Share decided at each look, then never (percent)."""
    return " / ".join(f"{100 * sum(r.look == i for r in runs) / len(runs):.0f}" for i in [*range(1, k + 1), 0])


def quick(seed: int = 71, reps: dict = QUICK) -> dict[str, list[Run]]:
    """The test suite's cells, 3 → 12 seeds at α = 0.05: a real effect of −9 points (no seed shift) and no effect
    (a real 20-point bias, seed shifts of 9 points)."""
    from calibration import LEAN   # deferred: calibration imports this module
    cells = {"real": (Design(effect=-0.09), reps["real"]), "none": (Design(shift=0.09), reps["none"])}
    return {k: sequential(d, 3, 12, n, seed + i, alphas=(ALPHA,), fixed=False, **LEAN)[ALPHA]
            for i, (k, (d, n)) in enumerate(cells.items())}


def cells(reps: dict) -> list[tuple]:
    """The section's cells: ``(kind, label, design, start, cap, reps, seed)``."""
    out = []
    for j, (start, cap) in enumerate(DESIGNS):
        r, base = reps[(start, cap)], 100 * (j + 1)
        if r["nobias"]:
            out.append(("null", "no bias", Design(bias=0.0), start, cap, r["nobias"], base + 1))
        for shift in (0.0, 0.09):
            out.append(("null", f"20-point bias, no effect, shift {100 * shift:.0f}", Design(shift=shift), start, cap,
                        r["null" if shift == 0 else "shift"], base + 2 + int(100 * shift)))
        for e in EFFECTS:
            for shift in (0.0, 0.03):
                out.append(("graded", f"{100 * e:+.1f} ({100 * shift:.0f})", Design(effect=e, shift=shift), start,
                            cap, r["graded"], base + 50 + int(round(-1000 * e)) + int(1000 * shift)))
    return out


def compute(cell: tuple) -> dict[float, list[Run]]:
    from calibration import LEAN   # deferred: calibration imports this module
    _, _, d, start, cap, n, seed = cell
    return sequential(d, start, cap, n, seed, **LEAN)


def counts(reps: dict) -> str:
    """The replicates per cell of each design, in words, against :data:`SEQ_FULL`."""
    def one(r: dict) -> str:
        return (f"no bias {r['nobias']}, no effect {r['null']} (shift 0) and {r['shift']} (shift 9), each graded "
                f"cell {r['graded']}")
    plans = ["→".join(str(lk.seeds["c"]) for lk in schedule({"c": start}, cap)) for start, cap in DESIGNS]
    run = "; ".join(f"{plan}: {one(reps[d])}" for plan, d in zip(plans, DESIGNS))
    if all(reps[d] == SEQ_FULL[d] for d in DESIGNS):
        return f"Replicates per cell (`SEQ_FULL`, the full counts): {run}."
    scale = {round(v / SEQ_FULL[d][k], 3) for d in DESIGNS for k, v in reps[d].items() if SEQ_FULL[d][k]}
    how = f" (`SEQ_FULL` × {scale.pop():g}, at least 10)" if len(scale) == 1 else ""
    return (f"Replicates per cell{how}: {run}; the full counts (`SEQ_FULL`) are "
            + "; ".join(f"{plan}: {one(SEQ_FULL[d])}" for plan, d in zip(plans, DESIGNS)) + ".")


def section(reps: dict, mapper=map) -> list[str]:
    """The results file's sequential section (between :data:`BEGIN` and :data:`END`); ``mapper`` computes the cells
    (``map``, or a process pool's)."""
    t0 = time.time()
    todo = cells(reps)
    done = list(mapper(compute, todo))
    wall = time.time() - t0
    md = [BEGIN, "## The sequential design (`faircl bench --max-seeds N`)", "",
          "Looks at n₀, 2n₀, … seeds and the cap N (`faircl.eval.sequential.looks`) at levels α/2, α/4, … and the "
          "remainder at the last look (`look_levels`: they sum to α); a claim stops at the first look whose word is "
          "final (no open axis could change it, or each open axis is out of reach by the cap), else it ends at N "
          "seeds. Each replicate draws N seeds once; a look at n seeds uses the first n (the seeds a re-run keeps). "
          "The fixed design decides the same replicate once at N seeds and level α. The whole design runs at "
          "α = 0.05 and at α/10 = 0.005 on the same draws. Protocol and resampling as above (100 permutations, 200 "
          f"row resamples); wall time {wall:.0f} s ({'one process' if mapper is map else 'a process pool'}, one "
          "thread each). Rates: count/replicates = % [Wilson 95% interval].", "",
          f"{counts(reps)} {BEFORE}", "",
          "### No effect: a false fall or rise", "",
          "At most α (the union bound over the looks and the two intervals of the claim). The right words for a real "
          "bias the method does not change are *no change* and *no fall shown*; with no bias at all the claim should "
          "be untestable at the first look.", "",
          "| looks | scenario | α | sequential: a fall or a rise | fixed at N | sequential: no change or no fall shown | "
          "fixed | incompatible | mean seeds (fixed: N) |", "|---|---|---|---|---|---|---|---|---|"]
    graded, above = [], []
    moved = ("reproduces", "lowers, less than target", "utility lost", "contradicted")
    for (kind, label, d, start, cap, n, _), res in zip(todo, done):
        k = len(schedule({"c": start}, cap))
        plan = "→".join(str(s) for s in [lk.seeds["c"] for lk in schedule({"c": start}, cap)])
        for a in ALPHAS:
            runs = res[a]
            bad = sum(not r.compatible for r in runs)
            if kind == "null":
                for rule, m in (("sequential", _n(runs, *moved)), ("fixed", _n(runs, *moved, fixed=True))):
                    if wilson(m, n)[0] > a:
                        above.append(f"{plan}, {label}, α = {a:g}, {rule}")
                md.append(f"| {plan} | {label} | {a:g} | {rate(_n(runs, *moved), n)} | "
                          f"{rate(_n(runs, *moved, fixed=True), n)} | {rate(_n(runs, *NO_FALL), n)} | "
                          f"{rate(_n(runs, *NO_FALL, fixed=True), n)} | {rate(bad, n)} | {_mean_seeds(runs)} |")
            else:
                graded.append(f"| {plan} | {label} | {a:g} | {_words(runs)} | {_words(runs, fixed=True)} | "
                              f"{rate(bad, n)} | {rate(sum(r.verdict != r.fixed for r in runs), n)} | "
                              f"{_mean_seeds(runs)} | {_looks(runs, k)} |")
    md += ["", "A false fall or rise significantly above α (the Wilson interval's lower bound above it): "
           + ("; ".join(above) if above else "none") + ".",
           "", "### A graded effect, the in-between truths included: each word's rate, sequential against fixed", "",
           f"The method lowers the 20-point gap by the effect; the paper reports {100 * PAPER_EFFECT:.1f} points, so "
           f"the size threshold is {50 * PAPER_EFFECT:.2f} (half of it): −1 and −2 points are in between (a real fall, "
           "smaller than the threshold), −4.5 and beyond reach it. *Incompatible*: the sequential word and the fixed "
           "design's word at the cap decide an axis opposite ways (target ≤ 2%); *other word*: the two words differ "
           "(one of them may be open). Words: R reproduces · L lowers, less than target · U utility lost · C "
           "contradicted · N no change · F no fall shown · I inconclusive · X untestable. Decided at look: percent "
           "final at each look before the cap, then at the cap.", "",
           "| looks | effect (shift) | α | sequential words | fixed at N | incompatible | other word | mean seeds "
           "(fixed: N) | final at look (%) |", "|---|---|---|---|---|---|---|---|---|",
           *graded, END]
    return md


def splice(text: str, block: list[str]) -> str:
    """``text`` with its sequential section (from :data:`BEGIN` to :data:`END`) replaced by ``block``, or with
    ``block`` appended when it has none."""
    new = "\n".join(block)
    if BEGIN in text and END in text:
        i, j = text.index(BEGIN), text.index(END) + len(END)
        return text[:i] + new + text[j:]
    return text.rstrip("\n") + "\n\n" + new + "\n"
