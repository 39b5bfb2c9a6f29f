"""Runs whose process start-up is paid once per worker: each run is a process forked from a server that has already
imported torch, Lightning and faircl (:mod:`multiprocessing`'s ``forkserver``), so a crash in one run ends that run
only, and a run starts in milliseconds instead of the ~8 s those imports take on a small machine. A run ends with
the process that started it (a killed sweep or bench leaves no run writing into its folders).

The server warms up with a tiny fit + test of each kind of run it will fork (``warm``: their ``faircl fit``
arguments), on a single torch thread (:mod:`faircl.cli.warm`), so a run starts with warm caches and no OpenMP team is
inherited; each child gets the original thread count back. A child's output
goes to its log file; its exit status is the run's (a negative status: killed by that signal).

Neither the fork nor the exit of a child is on a run's path: the child of the next run is forked ahead, while the
current run works (a *spare*, waiting on a pipe for its run), and a child reports its run's status as soon as the run
returns, before its process teardown, which goes on beside the next run. On a small machine that moves ~35 ms of
fork, start and exit per run out of the way (``benchmarks/startup.py``). While it waits, a spare also copies the
server's pages a run writes (:mod:`faircl.cli.prefault`), so the run does not fault on them one at a time; it then
sends :data:`READY`, which :meth:`RunPool.settle` waits for. Commands that start
processes of their own (Lightning's DDP launcher re-runs ``sys.argv``) should run as fresh processes instead:
:func:`needs_fresh_process` tells them apart.

Example::

    pool = RunPool()
    code = pool.run(faircl.cli.main, (["fit", "--config", "ce/biased_features"],), log="fit.log")
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import multiprocessing
import multiprocessing.connection
import multiprocessing.util  # noqa: F401  (its exit hook must be registered before _close_pools)
import os
import select
import signal
import sys
import threading
import time
import weakref
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


def _child(conn: Any, owner: int | None = None) -> None:
    """A forked child: ready before its run is asked for (a spare), it waits for the run on ``conn``, runs it and
    sends back the exit status as soon as the run has returned, before its own teardown; ``conn`` closed without a
    run: it ends."""
    if owner is not None:
        _follow(owner)
    warm = sys.modules.get("faircl.cli.warm")
    if warm is not None:
        warm.restore_threads()
        warm.prefault()  # copy the pages a run writes now, while waiting, not one fault at a time in the run
    # a Ctrl-C reaches the whole process group: a spare without a run leaves it to its owner, which then closes the
    # pool (or dies, and _follow ends the spare); the server's children start so (faircl.cli.spare)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        conn.send(READY)
        target, args, log, cwd, env = conn.recv()
    except (EOFError, OSError):  # its pool closed (or its owner ended) before it had a run
        os._exit(0)
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
    code = int(_resolve(target)(*args) or 0)
    sys.stdout.flush()
    sys.stderr.flush()
    with contextlib.suppress(OSError):
        conn.send(code % 256)  # the exit status sys.exit(code) gives
    sys.exit(code)


#: what a child sends once it has started and copied ahead, before it waits for its run
READY = "ready"

#: the pools of this process, whose spare children end (their pipe closed) before multiprocessing's own exit hook
#: waits for every child
_POOLS: weakref.WeakSet = weakref.WeakSet()


def _close_pools() -> None:
    for pool in list(_POOLS):
        pool.close()


atexit.register(_close_pools)  # registered after multiprocessing.util's hook (imported above), so it runs first


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
        self.context.set_forkserver_preload([*preload, "faircl.cli.spare"])  # the last: children ignore Ctrl-C
        self.warm = None if warm is None else [[str(a) for a in args] for args in warm]
        self.current: Any = None
        self._spare: tuple[Any, Any] | None = None  # (process, its end of the pipe): the next run's child, forked
        self._ending: list[Any] = []  # children that reported their run and are still tearing down
        self._forking: threading.Thread | None = None  # forks the spare while a run works
        self._spare_ready = False
        self._started = False  # whether this pool has started a child (the server's start names the warm-up)
        _POOLS.add(self)

    def run(self, target: Callable[..., Any] | str, args: tuple = (), log: str | Path | None = None,
            cwd: str | Path | None = None, env: Mapping[str, str] | None = None) -> int:
        """Run ``target(*args)`` in a forked child and wait for it; returns its exit status (``target``'s return
        value, 1 for an uncaught exception, ``-N`` when signal ``N`` ended it). ``target`` is a module-level function
        or its name, ``"module:function"`` (imported in the child). A ``KeyboardInterrupt`` while waiting kills the
        child and is re-raised.

        The child was forked ahead (a spare, forked while the previous run worked), and the status comes back as
        soon as ``target`` returns, while the child's process teardown goes on: neither the fork nor the exit is on
        the run's path."""
        self._ending = [p for p in self._ending if p.exitcode is None]  # reap those that have ended
        job = (target, tuple(args), None if log is None else str(log), None if cwd is None else str(cwd),
               dict(env or {}))
        proc, conn = self._dispatch(job)
        self.current = proc
        try:
            # the next run's child, forked while this run works
            self._forking = threading.Thread(target=self._fork_spare_quietly, name="faircl-fork-spare", daemon=True)
            self._forking.start()
            code = self._wait(proc, conn)
        except BaseException:
            proc.kill()
            proc.join()
            raise
        finally:
            self.current = None
            conn.close()
        return code

    def settle(self) -> None:
        """Wait until the spare child is ready for its run (forked, started, its pages copied ahead) and the children
        of finished runs have ended: nothing of this pool runs in the background afterwards (e.g. before timing
        something else)."""
        self._joined()
        if self._spare is not None and not self._spare_ready:
            proc, conn = self._spare
            multiprocessing.connection.wait([conn, proc.sentinel])
            with contextlib.suppress(EOFError, OSError):
                if conn.poll() and conn.recv() != READY:
                    raise RuntimeError("faircl: a spare child spoke before its run")
            self._spare_ready = True
        for proc in self._ending:
            proc.join()
        self._ending = []

    def close(self, timeout: float = 30.0) -> None:
        """End the spare child (it has no run) and the children still tearing down (after ``timeout`` seconds, by
        SIGKILL: their runs have reported). Called at exit."""
        self._joined()
        ending = self._ending
        if self._spare is not None:
            proc, conn = self._spare
            self._spare = None
            conn.close()
            ending = [*ending, proc]
        for proc in ending:
            proc.join(timeout)
            if proc.exitcode is None:
                proc.kill()
                proc.join()
        self._ending = []

    def _dispatch(self, job: tuple) -> tuple[Any, Any]:
        """Send ``job`` to the spare child (a new child when there is none, or the spare has died); returns that
        child and its pipe. A job that cannot be pickled raises here and leaves the spare for the next run."""
        self._joined()
        for _ in range(2):
            if self._spare is None:
                self._fork_spare()
            proc, conn = self._spare
            try:
                conn.send(job)
            except (BrokenPipeError, ConnectionResetError):  # the spare died while it waited: fork another
                self._spare = None
                conn.close()
                proc.join()
                continue
            self._spare = None
            return proc, conn
        raise RuntimeError("faircl: the fork server's children die before their run starts; see the server's "
                           "output above")

    def _joined(self) -> None:
        """Wait until the spare being forked (if any) is ready."""
        if self._forking is not None:
            self._forking.join()
            self._forking = None

    def _fork_spare_quietly(self) -> None:
        """:meth:`_fork_spare` in the thread that forks ahead: a failure leaves no spare, and the next run forks
        its child itself and raises there."""
        with contextlib.suppress(Exception):
            self._fork_spare()

    def _fork_spare(self) -> None:
        if self._spare is not None:
            return
        ours, theirs = self.context.Pipe()
        proc = self.context.Process(target=_child, args=(theirs, os.getpid()), daemon=False)
        self._start(proc)
        theirs.close()  # the child's end lives in the child only: its exit is this end's EOF
        self._spare_ready = False  # whether settle() has taken its READY
        self._spare = (proc, ours)

    def _wait(self, proc: Any, conn: Any) -> int:
        """The run's status: as the child reports it when ``target`` returns, else (an exception, a signal) its exit
        status."""
        while True:
            multiprocessing.connection.wait([conn, proc.sentinel])
            if not conn.poll():
                break
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break
            if message != READY:  # the child's READY, unless settle() took it
                self._ending.append(proc)
                return int(message)
        proc.join()
        return int(proc.exitcode if proc.exitcode is not None else 1)

    def _start(self, proc: Any) -> None:
        """Start ``proc``; the server, started by the first run, reads the runs to warm up with from its
        environment (:data:`WARM_ENV`), which is set for this pool's first start only (the later ones are forked
        ahead in a thread, while this process goes on)."""
        if self.warm is None or self._started:
            proc.start()
            self._started = True
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
        self._started = True
