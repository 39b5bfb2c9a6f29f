"""Runs forked from a worker that imported torch, Lightning and faircl once: :mod:`multiprocessing`'s ``forkserver``
with those modules preloaded (:data:`PRELOAD`). Each run is a child of that server, so a run starts in milliseconds
instead of paying the ~8 s of imports a fresh process does, and a crash in one run ends that run only (its status:
1 for an exception, ``-N`` for signal ``N``). A run writes its output to its own log file, ignores a Ctrl-C (its
owner kills it and re-raises :class:`KeyboardInterrupt`), and ends with the process that started it (a killed sweep
or bench leaves no run writing into its folders). Commands that start processes of their own (Lightning's DDP
launcher re-runs ``sys.argv``) run as fresh processes instead: :func:`needs_fresh_process` tells them apart.

Example::

    pool = RunPool()
    code = pool.run("faircl.cli:main", (["fit", "--config", "ce/biased_features"],), log="fit.log")
"""

from __future__ import annotations

import importlib
import multiprocessing
from multiprocessing import forkserver
import os
import pickle
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["PRELOAD", "RunPool", "alive", "follow_owner", "needs_fresh_process", "output_to"]

#: what the server imports before its first fork: the command and everything a fit and a test import on first use
#: (the leakage probes' scikit-learn, the report's matplotlib, rich and pandas, ColoredDigits' ``sklearn.datasets``),
#: so that a forked run imports nothing. None of it runs torch code (no thread pool exists when the server forks).
PRELOAD = ("matplotlib.pyplot", "pandas", "rich.console", "rich.table", "sklearn.datasets", "sklearn.datasets.data",
           "sklearn.datasets.descr", "sklearn.linear_model", "sklearn.pipeline", "sklearn.preprocessing",
           "sklearn.svm", "faircl.runs.lightning_cli", "faircl.eval.report_plot", "faircl.runs.pool")


def needs_fresh_process(trainer: Any) -> bool:
    """Whether a run's trainer settings (its parsed ``trainer`` section) ask for several devices, nodes or a
    launcher-based strategy (a fresh process then, since Lightning's launcher re-runs the command line for the other
    ranks)."""
    for key in ("devices", "num_nodes"):
        value = trainer.get(key)
        if value is not None and str(value).strip() not in ("1", "[0]", "auto"):
            return True
    return "ddp" in str(trainer.get("strategy") or "")


def follow_owner(owner: int) -> None:
    """End this process (SIGKILL) as soon as process ``owner`` ends. Its parent is the fork server, which outlives a
    killed owner long enough for a run to go on writing, so the run watches its owner itself."""
    def watch() -> None:
        try:
            select.select([os.pidfd_open(owner)], [], [])  # readable when the owner ends (Linux >= 5.3)
        except (AttributeError, OSError):
            while alive(owner):
                time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)

    if not alive(owner):
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, name="faircl-follow-owner", daemon=True).start()


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def output_to(log: str | Path, append: bool = False) -> None:
    """Send this process's stdout and stderr (file descriptors 1 and 2, so its children's too) to ``log``."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _child(target: Callable[..., Any] | str, args: tuple, log: str | None, cwd: str | None,
           env: dict[str, str], owner: int) -> None:
    """A forked run: ``target(*args)`` with its output in ``log``, in ``cwd``, with ``env`` added; its return value
    is the exit status (an uncaught exception: 1, multiprocessing prints its traceback into the log)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the process group: the owner handles it
    follow_owner(owner)
    if log is not None:
        output_to(log)
    if cwd is not None:
        os.chdir(cwd)
    os.environ.update(env)
    if isinstance(target, str):  # "module:function", imported here
        module, _, name = target.partition(":")
        target = getattr(importlib.import_module(module), name)
    code = int(target(*args) or 0)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


def _start_server() -> None:
    """Start the fork server (if it is not running) with Ctrl-C ignored, a disposition it keeps across its exec: a
    Ctrl-C during its ~8 s of imports is its owner's to handle (the owner stops), not a traceback of the server's."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers belong to the main thread
        forkserver.ensure_running()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)


class RunPool:
    """Start runs as children of one ``forkserver`` that imported ``preload`` (default :data:`PRELOAD`) once.

    The server is started by the first run and serves every pool of this process: the first pool's ``preload`` is
    the one that counts."""

    def __init__(self, preload: Sequence[str] = PRELOAD) -> None:
        self.context = multiprocessing.get_context("forkserver")
        self.context.set_forkserver_preload(list(preload))

    def run(self, target: Callable[..., Any] | str, args: tuple = (), log: str | Path | None = None,
            cwd: str | Path | None = None, env: Mapping[str, str] | None = None) -> int:
        """Run ``target(*args)`` in a forked child and wait for it; returns its exit status (``target``'s return
        value, 1 for an uncaught exception, ``-N`` when signal ``N`` ended it). ``target`` is a module-level function
        or its name, ``"module:function"`` (imported in the child). A ``KeyboardInterrupt`` while waiting kills the
        child and is re-raised."""
        job = (target, tuple(args), None if log is None else str(log), None if cwd is None else str(cwd),
               {str(k): str(v) for k, v in (env or {}).items()}, os.getpid())
        try:
            pickle.dumps(job[:2])
        except Exception as err:
            raise TypeError(f"faircl: a run's target and arguments must pickle to reach the worker (give a "
                            f"module-level function or 'module:function'): {target!r}: {err}") from None
        proc = self.context.Process(target=_child, args=job, name="faircl-run")
        try:
            _start_server()
            proc.start()
            proc.join()
        except BaseException:  # a Ctrl-C (KeyboardInterrupt) or any other end of the wait: the run ends with it
            if proc.pid is not None:
                proc.kill()
                proc.join()
            raise
        return int(proc.exitcode)
