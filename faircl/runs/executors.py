"""Where runs run: an :class:`Executor` takes a list of :class:`Job` and runs each, calling back as each ends.

- :class:`LocalPool` (``local``): each job forked from one pre-imported worker (:class:`faircl.runs.pool.RunPool`), one
  after the other: start-up is paid once;
- :class:`FreshProcesses` (``fresh``): each job a new Python process (``python -m faircl.runs.executors TARGET ARGS``),
  for a run that starts processes of its own (Lightning's DDP launcher re-runs the process's command line);
- :class:`faircl.runs.slurm.SlurmExecutor` (``slurm``): the jobs as one SLURM job array, through submitit.

A job is a call, ``target(*args)`` with ``target`` a ``"module:function"`` name returning an exit status, its output
in ``log``. Every executor sets :data:`LAUNCHER_ENV` and :data:`LOG_ENV` in the job's environment, so the run records
its launcher, its job id (SLURM's, read from the job's own environment) and its log (:func:`launch_info`).

Example::

    jobs = [Job("CE · seed 0", "faircl.runs.engine:run_folder", (str(folder),), folder, folder / "run.log")]
    LocalPool().run(jobs, done=lambda job, code, info: print(job.name, code, info["log"]))
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faircl.runs.pool import PRELOAD, RunPool, follow_owner, output_to

__all__ = ["Executor", "FreshProcesses", "Job", "LocalPool", "call_target", "launch_info"]

#: the executor's name, in a job's environment
LAUNCHER_ENV = "FAIRCL_LAUNCHER"
#: the job's log file, in its environment
LOG_ENV = "FAIRCL_RUN_LOG"
#: the process a fresh job follows (it ends when that process ends)
OWNER_ENV = "FAIRCL_OWNER"


@dataclass
class Job:
    """One run to start: ``target(*args)`` (``target`` is ``"module:function"``) in ``folder``, its output in ``log``,
    with ``env`` added to its environment; ``name`` is what progress lines call it."""

    name: str
    target: str
    args: tuple[str, ...]
    folder: Path
    log: Path
    env: dict[str, str] = field(default_factory=dict)


#: called as each job ends: the job, its exit status and ``{"launcher", "job_id", "log"}`` (a launcher may add more)
Done = Callable[[Job, int, dict[str, Any]], None]


def launch_info() -> dict[str, Any]:
    """How this process was started, for its run's record: ``{"launcher", "job_id", "log"}`` (the job id is SLURM's
    ``<array job>_<task>`` or ``<job>`` under SLURM, else ``None``)."""
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    job_id = f"{array}_{task}" if array and task else os.environ.get("SLURM_JOB_ID")
    launcher = os.environ.get(LAUNCHER_ENV) or ("slurm" if job_id else "direct")
    log = os.environ.get(LOG_ENV)
    return {"launcher": launcher, "job_id": job_id, "log": os.path.abspath(log) if log else None}


def resolve_target(target: str) -> Callable[..., Any]:
    """The function named ``"module:function"``."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def call_target(target: str, args: tuple, log: str | None = None, env: dict[str, str] | None = None) -> int:
    """Run ``target(*args)`` in this process, its output appended to ``log``, with ``env`` set; returns its exit
    status (an exception: its traceback in the log, status 1). A SLURM array task runs its job this way."""
    os.environ.update(env or {})
    if log is not None:
        os.environ.setdefault(LOG_ENV, str(log))
        output_to(log, append=True)
    try:
        return int(resolve_target(target)(*args) or 0)
    except Exception:
        import traceback  # deferred: only on a failure

        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


class Executor(ABC):
    """Runs jobs; :meth:`run` returns once every job has ended."""

    name = "executor"

    @abstractmethod
    def run(self, jobs: list[Job], done: Done) -> None:
        """Run every job, calling ``done(job, status, info)`` as each ends. A ``KeyboardInterrupt`` stops what this
        call started and is re-raised."""


class _OneAfterAnother(Executor):
    """The jobs on this machine, one at a time: :meth:`start` runs one and returns its exit status."""

    def run(self, jobs: list[Job], done: Done) -> None:
        for job in jobs:
            code = self.start(job, {LAUNCHER_ENV: self.name, LOG_ENV: str(job.log), **job.env})
            done(job, code, {"launcher": self.name, "job_id": None, "log": str(job.log)})

    @abstractmethod
    def start(self, job: Job, env: dict[str, str]) -> int:
        """Run ``job`` with ``env`` added to its environment and wait for it; its exit status."""


class LocalPool(_OneAfterAnother):
    """Each job forked from a worker that imported ``preload`` once (:class:`~faircl.runs.pool.RunPool`)."""

    name = "local"

    def __init__(self, preload: tuple[str, ...] = PRELOAD) -> None:
        self.pool = RunPool(preload)

    def start(self, job: Job, env: dict[str, str]) -> int:
        return self.pool.run(job.target, job.args, log=job.log, env=env)


class FreshProcesses(_OneAfterAnother):
    """Each job a new Python process that ends with this one."""

    name = "fresh"

    def start(self, job: Job, env: dict[str, str]) -> int:
        with open(job.log, "w") as fh:
            proc = subprocess.Popen([sys.executable, "-m", "faircl.runs.executors", job.target, *job.args],
                                    stdout=fh, stderr=subprocess.STDOUT,
                                    env={**os.environ, **env, OWNER_ENV: str(os.getpid())})
            try:
                return proc.wait()
            except BaseException:
                proc.kill()
                proc.wait()
                raise


def main(argv: list[str] | None = None) -> int:
    """``python -m faircl.runs.executors TARGET [ARGS...]``: a fresh job (:class:`FreshProcesses`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m faircl.runs.executors MODULE:FUNCTION [ARGS...]", file=sys.stderr)
        return 2
    owner = os.environ.get(OWNER_ENV)
    if owner and "LOCAL_RANK" not in os.environ:  # the other ranks of a DDP run follow rank 0, their parent
        follow_owner(int(owner))
    return call_target(args[0], tuple(args[1:]))


if __name__ == "__main__":
    sys.exit(main())
