"""A bench's runs and verdicts, look by look: the fixed design (one look at each protocol's own seeds, at level α) or,
with ``--max-seeds N``, the group-sequential one of :mod:`faircl.eval.sequential` (more seeds only for the protocols
with a claim whose word is not yet final, until every word is final or ``N`` is reached).

Each look runs what its seeds need (:func:`faircl.bench.runner.run_tasks`: finished runs are reused, so a re-run with a
higher cap replays the earlier looks on the runs it has and continues), decides every claim of the family at the
look's level (:func:`faircl.bench.results.decide_bench`, with each protocol's cap as the horizon of its words) and keeps
the verdict of each claim whose word is final.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from faircl.bench.results import ClaimRow, decide_bench
from faircl.bench.runner import MethodSpec, RunTask, plan, run_tasks
from faircl.bench.spec import Protocol
from faircl.eval.sequential import Look, schedule
from faircl.runs.executors import Executor

__all__ = ["Outcome", "run_looks"]


@dataclass
class Outcome:
    """What the looks left: each claim's row (its verdict from the look that decided it, or from the last), every
    protocol's runs at its last look, the runs that failed, the claims no run could answer, and the design."""

    rows: list[ClaimRow]
    tasks: dict[str, list[RunTask]]
    failures: list[str]
    undecided: list[str]
    looks: list[Look]
    seeds: dict[str, int] = field(default_factory=dict)  # the seeds each protocol ran

    @property
    def sequential(self) -> bool:
        return len(self.looks) > 1


def _key(r: ClaimRow) -> tuple[str, str, str]:
    return r.protocol, r.gap, r.baseline


def run_looks(protocols: list[Protocol], method: MethodSpec, starts: dict[str, int], cap: int | None, out: Path,
              cache: Path, *, alpha: float = 0.05, n_permutations: int = 1000, n_bootstrap: int = 2000,
              executor: Executor | None = None, say: Callable[[str], None] = print) -> Outcome:
    """Run and decide ``protocols`` look by look: ``starts`` (protocol → its first seeds), ``cap`` (``--max-seeds``;
    ``None``: the fixed design). Finished runs are reused; a failed run is tried again at the next look."""
    design = schedule(starts, cap, alpha)
    final: dict[tuple[str, str, str], ClaimRow] = {}
    tasks: dict[str, list[RunTask]] = {}
    failed: dict[str, str] = {}
    open_ = [p.name for p in protocols]
    undecided: list[str] = []
    order: list[tuple[str, str, str]] = []
    for look in design:
        for p in protocols:
            if p.name in open_:
                tasks[p.name] = plan(p, method, list(range(look.seeds[p.name])), out, cache)
        todo = [t for name in open_ for t in tasks[name]]
        if len(design) > 1:
            say(f"faircl bench: look {look.number} of {len(design)} (level {look.level:.3g}): "
                + ", ".join(f"{n} at {look.seeds[n]} seeds" for n in open_))
        for line in run_tasks(todo, say=say, executor=executor):
            failed[line.split(": ", 1)[0]] = line
        for t in todo:
            if t.done:  # tried again and finished
                failed.pop(f"{t.protocol.name} · {t.setting} · seed {t.seed}", None)
        undecided = []
        last = design[-1]  # each protocol's words look ahead to its cap (none at its last look)
        horizon = {n: (last.seeds[n], last.level) for n in open_ if look.seeds[n] < last.seeds[n]}
        rows = decide_bench(protocols, tasks, method.label, alpha=look.level, n_permutations=n_permutations,
                            n_bootstrap=n_bootstrap, undecided=undecided, horizon=horizon)
        order = [_key(r) for r in rows]
        for r in rows:
            if _key(r) in final and final[_key(r)].verdict.final:
                continue  # final at an earlier look: its word stands
            r.extra.update(look=look.number, looks=len(design), level=look.level)
            final[_key(r)] = r
        nxt = design[look.number] if look.number < len(design) else None
        open_ = [n for n in open_ if nxt is not None and nxt.seeds[n] > look.seeds[n]
                 and any(not final[k].verdict.final for k in order if k[0] == n)]
        if len(design) > 1:
            _progress(say, look, [final[k] for k in order], open_, nxt)
        if not open_:
            break
    rows = [_reasoned(final[k], len(design)) for k in order]
    seeds = {name: len({t.seed for t in ts}) for name, ts in tasks.items()}
    return Outcome(rows, tasks, list(failed.values()), undecided, design, seeds)


def _progress(say: Callable[[str], None], look: Look, rows: list[ClaimRow], open_: list[str],
              nxt: Look | None) -> None:
    waiting = [r for r in rows if not r.verdict.final]
    text = f"faircl bench: after look {look.number}, {len(rows) - len(waiting)} of {len(rows)} claims final"
    if waiting and open_ and nxt is not None:
        text += "; open: " + "; ".join(
            f"{n} ({sum(r.protocol == n for r in waiting)} claims) waits for seeds {look.seeds[n]}–{nxt.seeds[n] - 1}"
            for n in open_)
    elif waiting:
        text += f"; {len(waiting)} stay open at the cap"
    say(text)


def _reasoned(r: ClaimRow, n_looks: int) -> ClaimRow:
    """The row with the look that decided it in its reason (sequential design only)."""
    if n_looks == 1:
        return r
    v = r.verdict
    at = f"look {r.extra['look']} of {n_looks} ({len(r.seeds)} seeds, level {r.extra['level']:.3g})"
    where = (f"decided at {at}" if v.verdict != "inconclusive" else
             f"stopped open at {at}" if r.extra["look"] < n_looks else f"still open after {at}")
    r.verdict = dataclasses.replace(v, reason=f"{v.reason}; {where}")
    return r
