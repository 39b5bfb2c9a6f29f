"""The sequential design of ``faircl bench --max-seeds N`` (:mod:`faircl.eval.sequential`), simulated for
:mod:`calibration`.

Each replicate draws its rows and the predictions of ``N`` seeds once (:func:`_calibration_sim.draw`); a look at
``n`` seeds decides the claim from the first ``n`` seeds (the seeds a re-run keeps, plus the new ones), at the look's
level (:func:`faircl.eval.sequential.schedule`), and the claim stops at the first look whose verdict is decided
(:data:`faircl.eval.sequential.DECIDED`). The fixed design at the same cap decides the same replicate once, at ``N``
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

from faircl.eval.sequential import DECIDED, schedule
from faircl.eval.verdicts import decide

ALPHAS = (ALPHA, ALPHA / 10)
DESIGNS = ((3, 12), (5, 20))                     # (first seeds n₀, cap N)
EFFECTS = (-0.02, PAPER_EFFECT, -0.06, -0.09)    # the graded scenario's true effects
#: replicates per cell of the full section (sized for about 12 minutes on one core with lean resampling)
SEQ_FULL = {(3, 12): dict(nobias=150, null=600, shift=800, graded=160),
            (5, 20): dict(nobias=100, null=300, shift=1000, graded=100)}
QUICK = dict(real=40, none=100)                  # the test suite's cells (3 → 12 seeds, α = 0.05)
BEGIN, END = "<!-- sequential: begin -->", "<!-- sequential: end -->"


@dataclass(frozen=True)
class Run:
    """One replicate of the sequential design at one level α."""

    verdict: str    # the final verdict ("inconclusive": still undecided at the cap)
    look: int       # the look that decided it (1-based; 0: none did)
    seeds: int      # the seeds it used (the cap when no look decided it)
    fixed: str      # the fixed design's verdict: one decision at the cap's seeds, level α


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
            verdict, look, used = "inconclusive", 0, cap
            for lk in schedule({"claim": start}, cap, a):
                n = lk.seeds["claim"]
                v = decide([ev(n)], alpha=lk.level)[0].verdict
                if v in DECIDED:
                    verdict, look, used = v, lk.number, n
                    break
            out[a].append(Run(verdict, look, used, decide([ev(cap)], alpha=a)[0].verdict if fixed else ""))
    return out


def _n(runs, *words, fixed: bool = False) -> int:
    return sum((r.fixed if fixed else r.verdict) in words for r in runs)


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
            out.append(("graded", f"{100 * e:+.1f}", Design(effect=e), start, cap, r["graded"],
                        base + 50 + int(round(-1000 * e))))
    return out


def compute(cell: tuple) -> dict[float, list[Run]]:
    from calibration import LEAN   # deferred: calibration imports this module
    _, _, d, start, cap, n, seed = cell
    return sequential(d, start, cap, n, seed, **LEAN)


def section(reps: dict, mapper=map) -> list[str]:
    """The results file's sequential section (between :data:`BEGIN` and :data:`END`); ``mapper`` computes the cells
    (``map``, or a process pool's)."""
    t0 = time.time()
    todo = cells(reps)
    done = list(mapper(compute, todo))
    wall = time.time() - t0
    md = [BEGIN, "## The sequential design (`faircl bench --max-seeds N`)", "",
          "Looks at n₀, 2n₀, … seeds and the cap N (`faircl.eval.sequential.looks`) at levels α/2, α/4, … and the "
          "remainder at the last look (`look_levels`: they sum to α); a claim stops at the first look whose verdict "
          "is decided (anything but inconclusive), else it ends inconclusive at N seeds. Each replicate draws N seeds "
          "once; a look at n seeds uses the first n (the seeds a re-run keeps). The fixed design decides the same "
          "replicate once at N seeds and level α. The whole design runs at α = 0.05 and at α/10 = 0.005 on the same "
          "draws. Protocol and resampling as above (100 permutations, 200 row resamples); wall time "
          f"{wall:.0f} s ({'one process' if mapper is map else 'a process pool'}, one thread each). Rates: count/replicates = % [Wilson 95% interval].", "",
          "### No effect: false \"holds\" or \"contradicted\"", "",
          "At most α (the union bound over the looks). \"Does not hold\" is the right verdict for a real bias the "
          "method does not change (its reduction is smaller than the paper's 4.5 points); with no bias at all the "
          "claim should be untestable at the first look.", "",
          "| looks | scenario | α | sequential: holds or contradicted | fixed at N | sequential: does not hold | "
          "fixed: does not hold | mean seeds (fixed: N) |", "|---|---|---|---|---|---|---|---|"]
    graded, above = [], []
    for (kind, label, d, start, cap, n, _), res in zip(todo, done):
        k = len(schedule({"c": start}, cap))
        plan = "→".join(str(s) for s in [lk.seeds["c"] for lk in schedule({"c": start}, cap)])
        for a in ALPHAS:
            runs = res[a]
            if kind == "null":
                for rule, k in (("sequential", _n(runs, "holds", "contradicted")),
                                ("fixed", _n(runs, "holds", "contradicted", fixed=True))):
                    if wilson(k, n)[0] > a:
                        above.append(f"{plan}, {label}, α = {a:g}, {rule}")
                md.append(f"| {plan} | {label} | {a:g} | {rate(_n(runs, 'holds', 'contradicted'), n)} | "
                          f"{rate(_n(runs, 'holds', 'contradicted', fixed=True), n)} | "
                          f"{rate(_n(runs, 'does not hold'), n)} | {rate(_n(runs, 'does not hold', fixed=True), n)} | "
                          f"{_mean_seeds(runs)} |")
            else:
                graded.append(f"| {plan} | {label} | {a:g} | {rate(_n(runs, 'holds'), n)} | "
                              f"{rate(_n(runs, 'holds', fixed=True), n)} | {rate(_n(runs, 'does not hold'), n)} | "
                              f"{rate(_n(runs, 'does not hold', fixed=True), n)} | {_mean_seeds(runs)} | "
                              f"{_looks(runs, k)} |")
    md += ["", "False \"holds\" or \"contradicted\" significantly above α (the Wilson interval's lower bound above it): "
           + ("; ".join(above) if above else "none") + ".",
           "", "### A graded effect: power, false \"does not hold\", seeds spent", "",
           f"The method lowers the 20-point gap by the effect (no seed shift); the paper reports {100 * PAPER_EFFECT:.1f} "
           "points, so \"does not hold\" at that effect is false and should stay within α/2 (the inferiority test's "
           "one tail, summed over the looks). Power: the share reading \"holds\"; the fixed design's column shows what "
           "the union bound costs at the same cap. Decided at look: percent at each look, then never (inconclusive at "
           "N).", "",
           "| looks | effect | α | sequential: holds | fixed at N: holds | sequential: does not hold | "
           "fixed: does not hold | mean seeds (fixed: N) | decided at look (%) |", "|---|---|---|---|---|---|---|---|---|",
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
