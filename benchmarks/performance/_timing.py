"""The one timing harness of faircl's performance benchmarks.

Every performance benchmark times its contenders through :func:`measure`: one warm-up round (not counted), then
``rounds`` rounds in which every contender runs once, in an order rotated from round to round, so that a slow phase
of the machine hits all of them alike. A contender's figure is the median over rounds with its spread (min–max); a
ratio between two contenders is the median of their per-round ratios (:func:`paired_ratio`).

Beside every figure the harness records the machine's state: the 1-minute load average and the number of runnable
tasks (``/proc/loadavg``) sampled before and after every timed call, the number of usable cores and torch's thread
count. A figure is marked **busy** when any sample saw more runnable tasks than cores, or a load average above the
core count: on such a machine other processes share the cores, wall times are inflated and ratios are less reliable.
Each call records both wall time and the CPU time of this process (``time.process_time``); with one torch thread the
CPU time is the work done, and is disturbed far less than wall time by other load.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Timing", "Stopwatch", "machine", "cores", "load_sample", "measure", "paired_ratio", "machine_line",
           "busy_note", "fmt_s", "fmt_ms"]


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def load_sample() -> tuple[float, int]:
    """``(1-minute load average, runnable tasks now)``; the runnable count includes this process.

    Read from ``/proc/loadavg`` (Linux); elsewhere the load average and ``-1`` for the runnable count.
    """
    try:
        with open("/proc/loadavg") as f:
            parts = f.read().split()
        return float(parts[0]), int(parts[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        return load, -1


def _threads() -> int:
    try:
        import torch

        return torch.get_num_threads()
    except ImportError:  # pragma: no cover - torch is a dependency
        return 1


@dataclass
class Timing:
    """Every timed call of one contender, with the machine state around it.

    Attributes:
        name: the contender.
        wall: wall seconds of each counted round.
        cpu: process CPU seconds of each counted round.
        load: 1-minute load average after each counted call.
        runnable: most runnable tasks seen around each counted call (``-1`` when unknown).
        cores: usable cores.
        threads: torch intra-op threads during the calls.
    """

    name: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    load: list[float] = field(default_factory=list)
    runnable: list[int] = field(default_factory=list)
    cores: int = field(default_factory=cores)
    threads: int = field(default_factory=_threads)

    def values(self, clock: str = "wall") -> list[float]:
        """The per-round times of ``clock`` (``wall`` or ``cpu``)."""
        if clock not in ("wall", "cpu"):
            raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
        return self.wall if clock == "wall" else self.cpu

    def median(self, clock: str = "wall") -> float:
        """Median over rounds."""
        return statistics.median(self.values(clock))

    def spread(self, clock: str = "wall") -> tuple[float, float]:
        """``(min, max)`` over rounds."""
        v = self.values(clock)
        return min(v), max(v)

    @property
    def load_max(self) -> float:
        """Highest 1-minute load average seen."""
        return max(self.load) if self.load else float("nan")

    @property
    def runnable_max(self) -> int:
        """Most runnable tasks seen (``-1`` when unknown)."""
        return max(self.runnable) if self.runnable else -1

    @property
    def busy(self) -> bool:
        """Whether the machine had more runnable tasks than cores (or a load average above the core count)."""
        return self.runnable_max > self.cores or self.load_max > self.cores

    def load_cell(self) -> str:
        """``"<load> / <runnable>"`` with a **busy** mark, for a table cell."""
        run = "?" if self.runnable_max < 0 else str(self.runnable_max)
        return f"{self.load_max:.1f} / {run}" + (" **busy**" if self.busy else "")

    def as_dict(self) -> dict[str, Any]:
        """Plain-data summary (JSON)."""
        return {"name": self.name, "wall_median": self.median("wall"), "cpu_median": self.median("cpu"),
                "wall_spread": self.spread("wall"), "cpu_spread": self.spread("cpu"), "load_max": self.load_max,
                "runnable_max": self.runnable_max, "cores": self.cores, "threads": self.threads, "busy": self.busy,
                "rounds": len(self.wall)}


class Stopwatch:
    """Wall and process-CPU time of a span, for contenders that time a part of their call themselves (e.g. one
    training epoch inside a ``Trainer.fit``): ``start()`` / ``stop()``; ``result`` is ``(wall, cpu)`` seconds."""

    def __init__(self) -> None:
        self.result: tuple[float, float] | None = None
        self._t0 = self._c0 = 0.0

    def start(self) -> None:
        self._t0, self._c0 = time.perf_counter(), time.process_time()

    def stop(self) -> tuple[float, float]:
        self.result = (time.perf_counter() - self._t0, time.process_time() - self._c0)
        return self.result


def measure(contenders: dict[str, Callable[[], Any]], rounds: int, warmup: int = 1,
            rotate: bool = True, sync: Callable[[], None] | None = None) -> dict[str, Timing]:
    """Time every contender ``rounds`` times, interleaved, after ``warmup`` uncounted rounds.

    Args:
        contenders: name → callable. A callable that returns a ``(wall, cpu)`` pair (e.g. :attr:`Stopwatch.result`)
            is credited with that pair; otherwise the whole call is timed.
        rounds: counted rounds (each runs every contender once).
        warmup: uncounted rounds first (allocations, first-call overheads, caches).
        rotate: start each round at the next contender (A B C, B C A, ...) so no contender always runs first.
        sync: called before each clock reading (e.g. ``torch.cuda.synchronize``).

    Returns:
        name → :class:`Timing`, in the order of ``contenders``.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    names = list(contenders)
    out = {name: Timing(name) for name in names}
    for r in range(warmup + rounds):
        k = r % len(names) if rotate else 0
        for name in names[k:] + names[:k]:
            load0, run0 = load_sample()
            if sync is not None:
                sync()
            t0, c0 = time.perf_counter(), time.process_time()
            result = contenders[name]()
            if sync is not None:
                sync()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            if isinstance(result, tuple) and len(result) == 2 and all(isinstance(v, float) for v in result):
                wall, cpu = result
            load1, run1 = load_sample()
            if r >= warmup:
                t = out[name]
                t.wall.append(wall)
                t.cpu.append(cpu)
                t.load.append(max(load0, load1))
                t.runnable.append(max(run0, run1))
    return out


def paired_ratio(num: Timing, den: Timing, clock: str = "wall") -> tuple[float, float, float]:
    """``(median, min, max)`` over rounds of ``num``'s time divided by ``den``'s time in the same round."""
    a, b = num.values(clock), den.values(clock)
    if len(a) != len(b) or not a:
        m = statistics.median(a) / statistics.median(b)
        return m, m, m
    ratios = [x / y for x, y in zip(a, b)]
    return statistics.median(ratios), min(ratios), max(ratios)


def machine() -> dict[str, Any]:
    """The machine and software a run used, and its load now."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    _, run = load_sample()
    try:
        import torch

        torch_version = torch.__version__
    except ImportError:  # pragma: no cover
        torch_version = "n/a"
    return {"cores": cores(), "threads": _threads(), "python": platform.python_version(), "torch": torch_version,
            "processor": platform.processor() or platform.machine(), "load": tuple(load), "runnable": run}


def machine_line(start: dict[str, Any], end: dict[str, Any] | None = None) -> str:
    """One Markdown sentence: cores, threads, versions and the load average at the start (and end) of a run."""
    def load(m: dict[str, Any]) -> str:
        return " / ".join(f"{v:.2f}" for v in m["load"]) + f" ({m['runnable']} runnable)"

    text = (f"{start['cores']} usable core(s), {start['threads']} torch thread(s), torch {start['torch']}, Python "
            f"{start['python']}; load average (1 / 5 / 15 min) at the start {load(start)}")
    if end is not None:
        text += f", at the end {load(end)}"
    return text + "."


def busy_note(timings: list[Timing]) -> str:
    """A sentence saying whether any figure was taken on a busy machine."""
    busy = [t for t in timings if t.busy]
    if not timings:
        return ""
    c = timings[0].cores
    if not busy:
        return (f"The machine was quiet for every figure: never more runnable tasks than its {c} core(s), load "
                f"average at most {max(t.load_max for t in timings):.2f}.")
    worst = max(t.load_max for t in busy)
    return (f"**{len(busy)} of {len(timings)} figures were taken on a busy machine** (marked busy: more runnable tasks "
            f"than its {c} core(s), or a load average above it; highest load average {worst:.2f}). Other processes "
            "shared the cores: wall times are inflated, and ratios (taken within the same round) are less reliable "
            "than on a quiet machine.")


def fmt_s(t: Timing, clock: str = "wall") -> str:
    """``median [min–max]`` in seconds."""
    lo, hi = t.spread(clock)
    return f"{t.median(clock):.3f} [{lo:.3f}–{hi:.3f}]"


def fmt_ms(t: Timing, clock: str = "wall") -> str:
    """``median [min–max]`` in milliseconds."""
    lo, hi = t.spread(clock)
    return f"{1e3 * t.median(clock):.1f} [{1e3 * lo:.1f}–{1e3 * hi:.1f}]"
