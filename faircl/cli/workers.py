"""Runs whose process start-up is paid once per worker: each run is a process forked from a server that has already
imported torch, Lightning and faircl (:mod:`multiprocessing`'s ``forkserver``), so a crash in one run ends that run
only, and a run starts in milliseconds instead of the ~8 s those imports take on a small machine. A run ends with
the process that started it (a killed sweep or bench leaves no run writing into its folders).

The server warms up with a tiny fit + test of each kind of run it will fork (``warm``: their ``faircl fit``
arguments), on a single torch thread (:mod:`faircl.cli.warm`), so a run starts with warm caches and no OpenMP team is
inherited; each child gets the original thread count back. A child's output
goes to its log file; its exit status is the run's (a negative status: killed by that signal). Commands that start
processes of their own (Lightning's DDP launcher re-runs ``sys.argv``) should run as fresh processes instead:
:func:`needs_fresh_process` tells them apart.

Example::

    pool = RunPool()
    code = pool.run(faircl.cli.main, (["fit", "--config", "ce/biased_features"],), log="fit.log")
"""

from __future__ import annotations

import importlib
import json
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["PRELOAD", "RunPool", "WARM_ENV", "needs_fresh_process"]

#: the environment variable that hands the server the runs to warm up with (JSON: a list of ``faircl fit`` argument
#: lists), read by :mod:`faircl.cli.warm`
WARM_ENV = "FAIRCL_WARM_ARGS"

#: modules the server imports once: torch, Lightning, torchmetrics, jsonargparse, faircl and what runs import lazily;
#: then a warm-up fit + test on one thread (:mod:`faircl.cli.warm`)
PRELOAD = ("faircl.cli.preload", "faircl.cli.warm")


def needs_fresh_process(args: Sequence[str]) -> bool:
    """Whether a command's arguments ask for several devices, nodes or a launcher-based strategy (a fresh process
    then, since Lightning's launcher re-runs the command line for the other ranks)."""
    text = " ".join(args)
    for key in ("--trainer.devices", "--trainer.num_nodes"):
        for i, a in enumerate(args):
            value = a.split("=", 1)[1] if a.startswith(key + "=") else (args[i + 1] if a == key and i + 1 < len(args)
                                                                          else None)
            if value is not None and value.strip() not in ("1", "[0]", "auto"):
                return True
    return "strategy" in text and "ddp" in text


def _resolve(target: Callable[..., Any] | str) -> Callable[..., Any]:
    """A callable, or ``"module:function"`` imported here (in the child)."""
    if callable(target):
        return target
    module, _, name = str(target).partition(":")
    return getattr(importlib.import_module(module), name)


def _follow(owner: int) -> None:
    """End this process (SIGKILL) as soon as process ``owner`` ends. The fork server cannot do it: every child holds
    a copy of the server's keep-alive pipe, so a killed owner leaves the server, and a run under way, alive."""
    def watch() -> None:
        try:
            fd = os.pidfd_open(owner)
        except (AttributeError, OSError):  # not Linux >= 5.3: poll
            fd = None
        if fd is not None:
            select.select([fd], [], [])
        else:
            while True:
                try:
                    os.kill(owner, 0)
                except ProcessLookupError:
                    break
                except PermissionError:
                    pass
                time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)

    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, name="faircl-follow-owner", daemon=True).start()


def _child(target: Callable[..., Any] | str, args: tuple, log: str | None, cwd: str | None,
           env: Mapping[str, str] | None, owner: int | None = None) -> None:
    if owner is not None:
        _follow(owner)
    warm = sys.modules.get("faircl.cli.warm")
    if warm is not None:
        warm.restore_threads()
    if log is not None:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    if cwd is not None:
        os.chdir(cwd)
    if env:
        os.environ.update(env)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    code = _resolve(target)(*args)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(int(code or 0))


class RunPool:
    """Start runs as children of one pre-imported ``forkserver``.

    Args:
        preload: modules the server imports before its first fork.
        warm: the ``faircl fit`` arguments of the kinds of run the pool will start (e.g. a sweep's config); the
            server's warm-up (:mod:`faircl.cli.warm`, when preloaded) runs each, cut down to two batches, before its
            first fork. ``None``: its default run.

    The server is started by the first run and serves every pool of this process: the first pool's ``preload`` and
    ``warm`` are the ones that count.
    """

    def __init__(self, preload: Sequence[str] = PRELOAD, warm: Sequence[Sequence[str]] | None = None) -> None:
        self.context = multiprocessing.get_context("forkserver")
        self.context.set_forkserver_preload(list(preload))
        self.warm = None if warm is None else [[str(a) for a in args] for args in warm]
        self.current: Any = None

    def run(self, target: Callable[..., Any] | str, args: tuple = (), log: str | Path | None = None,
            cwd: str | Path | None = None, env: Mapping[str, str] | None = None) -> int:
        """Run ``target(*args)`` in a forked child and wait for it; returns its exit status (``target``'s return
        value, 1 for an uncaught exception, ``-N`` when signal ``N`` ended it). ``target`` is a module-level function
        or its name, ``"module:function"`` (imported in the child). A ``KeyboardInterrupt`` while waiting kills the
        child and is re-raised."""
        proc = self.context.Process(target=_child, args=(target, tuple(args), None if log is None else str(log),
                                                          None if cwd is None else str(cwd), dict(env or {}),
                                                          os.getpid()),
                                    daemon=False)
        self.current = proc
        self._start(proc)
        try:
            proc.join()
        except BaseException:
            proc.kill()
            proc.join()
            raise
        finally:
            self.current = None
        return int(proc.exitcode if proc.exitcode is not None else 1)

    def _start(self, proc: Any) -> None:
        """Start ``proc``; the server, started by the first run, reads the runs to warm up with from its
        environment (:data:`WARM_ENV`), which is set for that start only."""
        if self.warm is None:
            proc.start()
            return
        before = os.environ.get(WARM_ENV)
        os.environ[WARM_ENV] = json.dumps(self.warm)
        try:
            proc.start()
        finally:
            if before is None:
                os.environ.pop(WARM_ENV, None)
            else:
                os.environ[WARM_ENV] = before
