"""The study of a ``faircl sweep``: its storage (:func:`check_storage`, :func:`open_storage`), its pruner
(:func:`build_pruner`), and the check that finds the running trials of dead workers (:func:`fail_dead_trials`), shared
by the sweep's workers and the trials' seeds (:mod:`faircl.cli.trial`).

Storages (``--storage``):

- a database URL SQLAlchemy knows (``sqlite:///PATH``, ``postgresql://USER@HOST/DB``, ...): Optuna's RDB storage.
  A worker beats every ``heartbeat`` seconds; a running trial that missed its beats for ``2 × heartbeat`` seconds is
  failed and queued again (Optuna's heartbeat and its ``RetryHeartbeatStaleTrialCallback``).
- ``journal:PATH``, or a path ending in ``.journal`` or ``.log``: Optuna's journal file,
  ``JournalStorage(JournalFileBackend(PATH))``: nothing to start, and safe on a filesystem several nodes share (NFS),
  where SQLite's locks are not (its lock is a symbolic link, not ``fcntl``).

A journal has no heartbeat. Instead a worker records itself in each trial it runs (the trial's user attribute
``worker``: host, process id and that process's start time, SLURM job id), and every worker, before it starts a trial
and while it waits for others, checks the owners of the running trials (:func:`fail_dead_trials`):

- an owner with a SLURM job id other than the checking worker's own is dead when ``squeue`` lists that job as ended
  or no longer knows it;
- otherwise (no job, or the checking worker's own job: a requeued task's earlier run), on the same host (by name),
  when its process is gone or its process id now belongs to another process (the start time differs);
- a running trial with no owner ``max(60 s, 2 × heartbeat)`` after it began is dead too (its worker died between
  creating it and recording itself).

A dead worker's trial is failed and queued again with the same arguments (at most 3 retries, as on a database), and
the next worker runs it first. An owner that cannot be checked from here (another host and no SLURM job, or
``squeue`` not answering) is left running: :func:`fail_dead_trials` returns those trials, and a worker that would
only wait for such trials stops instead of waiting for ever (a resume on their host, or any machine of the cluster,
checks them).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import BaseStorage, JournalStorage, RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, TrialState

from faircl.runs.executors import launch_info
from faircl.runs.pool import alive
from faircl.runs.user_error import UserError

__all__ = ["OWNER", "PRUNED_EXIT", "build_pruner", "check_storage", "describe_owner", "fail_dead_trials",
           "journal_path", "open_storage", "safe_url", "this_worker"]

#: the exit status of a trial's seed that was pruned
PRUNED_EXIT = 3
#: the trial's user attribute where a worker on a journal records itself
OWNER = "worker"
#: what ``--storage`` accepts, for messages
ACCEPTED = ("journal:PATH (Optuna's journal file; or a path ending in .journal or .log) or a database URL "
            "(sqlite:///PATH, postgresql://USER@HOST/DB, ...)")
JOURNAL_SUFFIXES = (".journal", ".log")
#: retries of a dead worker's trial, as Optuna's heartbeat gives on a database
MAX_RETRY = 3
#: squeue states of a job whose process may still run
_NOT_ENDED = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "RESIZING", "REQUEUED", "REQUEUE_FED",
              "REQUEUE_HOLD", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD"}


# ---------------------------------------------------------------------------------------------------- storage
def journal_path(url: str) -> Path | None:
    """The journal file ``url`` names (``journal:PATH``, ``journal:///PATH``, or a path ending in ``.journal`` or
    ``.log``), or ``None`` for a database URL."""
    if url.startswith("journal:"):
        rest = url[len("journal:"):]
        return Path(rest[2:] if rest.startswith("//") else rest)
    if "://" not in url and url.endswith(JOURNAL_SUFFIXES):
        return Path(url)
    return None


def check_storage(url: str) -> str:
    """``--storage url`` checked, without creating anything, and normalised (a journal: ``journal:<absolute path>``,
    so that workers anywhere find it). A :class:`UserError` naming the option and what it accepts otherwise."""
    path = journal_path(url)
    if path is None:
        import sqlalchemy.engine  # deferred: only a database URL is parsed here

        try:
            sqlalchemy.engine.make_url(url).get_dialect()
        except ImportError:  # a driver that is not installed: open_storage says which
            pass
        except Exception:
            raise UserError(f"--storage {safe_url(url)}: not a storage faircl knows; accepted: {ACCEPTED}") from None
        return url
    if not str(path) or str(path) == "." or url.endswith("/"):
        raise UserError(f"--storage {url}: no journal file named; accepted: {ACCEPTED}")
    path = path.expanduser().resolve()
    if path.is_dir():
        raise UserError(f"--storage {url}: {path} is a folder, not a journal file; accepted: {ACCEPTED}")
    existing = next(p for p in path.parents if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK) or (
            path.exists() and not os.access(path, os.R_OK | os.W_OK)):
        raise UserError(f"--storage {url}: cannot write the journal's folder {path.parent} ({existing} is not a "
                        f"writable folder); accepted: {ACCEPTED}")
    return f"journal:{path}"


def open_storage(url: str, heartbeat: int | None = None) -> BaseStorage:
    """The storage ``url`` names: Optuna's journal file (its folder made if needed), else its RDB storage (SQLite
    files wait up to a minute for a lock held by another worker).

    On a database, with ``heartbeat`` (seconds) a running trial that stops beating for twice as long is failed and
    retried; a journal has no heartbeat (see the module's description)."""
    path = journal_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    kwargs: dict[str, Any] = {"engine_kwargs": {"connect_args": {"timeout": 60}}} if url.startswith("sqlite") else {}
    if heartbeat:
        kwargs.update(heartbeat_interval=heartbeat, grace_period=2 * heartbeat,
                      heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY))
    try:
        return RDBStorage(url, **kwargs)
    except ImportError as err:
        cause = err.__cause__ or err
        raise UserError(f"--storage {safe_url(url)}: no database driver for it ({cause}); install one and name it in "
                       "the URL, e.g. pip install psycopg2-binary and postgresql+psycopg2://...") from None


def build_pruner(name: str) -> optuna.pruners.BasePruner:
    """``median`` (Optuna's MedianPruner after 2 trials and 1 epoch) or ``none``."""
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=1)
    return optuna.pruners.NopPruner()


def safe_url(url: str) -> str:
    """A database URL without its password, for messages."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


# ---------------------------------------------------------------------------------------------------- dead workers
def _started(pid: int) -> str | None:
    """When process ``pid`` started (boot id and clock ticks since boot), or ``None`` (no such process, no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    return f"{boot}:{stat.rsplit(')', 1)[1].split()[19]}"


def this_worker() -> dict[str, Any]:
    """Who this process is, as a journal's trial records its owner."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": _started(os.getpid()),
            "job_id": launch_info()["job_id"]}


def describe_owner(owner: dict[str, Any] | None) -> str:
    """``host h, pid p, SLURM job j``, for messages."""
    if not owner:
        return "no worker recorded"
    job = f", SLURM job {owner['job_id']}" if owner.get("job_id") else ""
    return f"host {owner.get('host')}, pid {owner.get('pid')}{job}"


def _job_alive(job_id: str) -> bool | None:
    """Whether SLURM job ``job_id`` may still run (squeue); ``None`` when squeue does not answer."""
    try:
        res = subprocess.run(["squeue", "-h", "--states=all", "-o", "%T", "-j", job_id], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if res.returncode != 0:
        return False if "Invalid job id" in res.stderr else None
    states = res.stdout.split()
    return any(s in _NOT_ENDED for s in states)


def owner_alive(owner: dict[str, Any]) -> bool | None:
    """Whether the worker ``owner`` (:func:`this_worker`, recorded by it) still runs; ``None`` when this machine
    cannot tell (see the module's description)."""
    me = this_worker()
    job, pid = owner.get("job_id"), owner.get("pid")
    # another job: squeue tells; this process's own job (a requeued task's earlier run, or a second worker started
    # in the same allocation) or none: its process tells
    if job and job != me["job_id"] and shutil.which("squeue"):
        job_alive = _job_alive(str(job))
        if job_alive is not None:
            return job_alive
    if owner.get("host") != me["host"] or not isinstance(pid, int):
        return None
    if owner.get("started") is not None and me["started"] is not None:
        return _started(pid) == owner["started"]
    return alive(pid)


def fail_dead_trials(study: optuna.Study, heartbeat: int) -> list[FrozenTrial]:
    """Fail and queue again the running trials whose worker is dead; return the running trials whose worker this
    machine cannot check. On a database this is Optuna's heartbeat check (nothing is left unchecked); on a journal,
    faircl's own (see the module's description)."""
    with warnings.catch_warnings():  # Optuna calls both experimental
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
        retry = RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY)
    storage = study._storage
    if not isinstance(storage, JournalStorage):
        return []
    unknown: list[FrozenTrial] = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        owner = trial.user_attrs.get(OWNER)
        if owner is None:
            began = trial.datetime_start
            alive: bool | None = began is None or (datetime.now() - began).total_seconds() < max(60, 2 * heartbeat)
        else:
            alive = owner_alive(owner)
        if alive is None:
            unknown.append(trial)
        if alive is not False:
            continue
        try:
            storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        except UpdateFinishedTrialError:  # another worker failed it first, or its worker finished it
            continue
        print(f"faircl sweep: trial {trial.number}'s worker is gone ({describe_owner(owner)}): the trial is failed "
              "and queued again", file=sys.stderr, flush=True)
        retry(study, storage.get_trial(trial._trial_id))
    return unknown
