"""The ``slurm`` executor: the jobs of one :meth:`SlurmExecutor.run` as one SLURM job array, through submitit.

Each array task calls :func:`faircl.runs.executors.call_target` (``target(*args)``, its output in the job's log); what
each task asks SLURM for is a :class:`SlurmSettings` (a config's ``slurm:`` section, :meth:`SlurmSettings.from_mapping`).
Submitit writes its own files, the pickled call and result and the task's SLURM output (``<array>_<task>_0_log.out``),
to ``log_folder``, which must be on a filesystem the cluster's nodes share with this machine.

Tasks are followed with ``squeue`` (which lists a finished task for the cluster's ``MinJobAge``, 300 s by default),
not with submitit's watcher: that one asks ``sacct``, which needs the cluster's accounting database, and where there
is none (a small cluster, CI's) it warns on every poll and never sees a cancelled task end.

Example::

    executor = SlurmExecutor(SlurmSettings(partition="debug", time_min=30, log_folder=Path("runs/slurm")))
    executor.run(jobs, done=lambda job, code, info: print(job.name, code, info["job_id"], info["slurm_log"]))
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from faircl.runs.executors import LAUNCHER_ENV, LOG_ENV, Done, Executor, Job, call_target

__all__ = ["SlurmExecutor", "SlurmSettings", "available"]

#: squeue states of a task that may still run (a preempted task is requeued by submitit)
_NOT_ENDED = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "RESIZING", "REQUEUED", "REQUEUE_FED",
              "REQUEUE_HOLD", "PREEMPTED", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD", "READY"}
#: states after which a task's result pickle can still be on its way (a shared filesystem's delay), in seconds
_RESULT_WAIT_S = {"COMPLETED": 15.0, "FAILED": 15.0}
_FLAG = re.compile(r"^[a-z][a-z0-9_-]*$")


@dataclass
class SlurmSettings:
    """What each array task asks SLURM for, and where submitit writes its files.

    ``extra_sbatch``: further sbatch options, each ``"key=value"``, ``"--key=value"``, ``"#SBATCH --key=value"`` or a
    bare flag (``"exclusive"``), e.g. ``["qos=high", "account=fair"]``."""

    partition: str | None = None
    gpus_per_task: int = 0
    cpus_per_task: int = 1
    mem_gb: float | None = None
    time_min: int = 60
    array_parallelism: int = 64
    extra_sbatch: list[str] = field(default_factory=list)
    log_folder: Path = Path("runs/slurm")

    @classmethod
    def from_mapping(cls, d: dict[str, Any], where: str = "slurm") -> SlurmSettings:
        """Settings from a config's ``slurm:`` section (``where`` names it in errors). ValueError, naming the key and
        what it accepts, for an unknown key or a value of the wrong type."""
        if not isinstance(d, dict):
            raise ValueError(f"{where}: expected a mapping of settings, got {type(d).__name__}")
        accepted = [f.name for f in fields(cls)]
        for key in d:
            if key not in accepted:
                raise ValueError(f"{where}: unknown key {key!r} (accepted: {', '.join(accepted)})")
        values = dict(d)
        for key in ("gpus_per_task", "cpus_per_task", "time_min", "array_parallelism"):
            least = 0 if key == "gpus_per_task" else 1
            if key in values and (type(values[key]) is not int or values[key] < least):
                raise ValueError(f"{where}.{key}: expected an integer >= {least}, got {values[key]!r}")
        if values.get("partition") is not None and not isinstance(values["partition"], str):
            raise ValueError(f"{where}.partition: expected a partition name (a string), got {values['partition']!r}")
        mem = values.get("mem_gb")
        if mem is not None and (isinstance(mem, bool) or not isinstance(mem, (int, float)) or mem <= 0):
            raise ValueError(f"{where}.mem_gb: expected a number of GB > 0, got {mem!r}")
        extra = values.get("extra_sbatch", [])
        if not isinstance(extra, list) or not all(isinstance(x, str) for x in extra):
            raise ValueError(f"{where}.extra_sbatch: expected a list of sbatch options (strings), got {extra!r}")
        for option in extra:
            _sbatch_option(option, f"{where}.extra_sbatch")
        if "log_folder" in values:
            if not isinstance(values["log_folder"], (str, Path)) or not str(values["log_folder"]):
                raise ValueError(f"{where}.log_folder: expected a folder path, got {values['log_folder']!r}")
            values["log_folder"] = Path(values["log_folder"])
        return cls(**values)

    def sbatch_options(self) -> dict[str, Any]:
        """``extra_sbatch`` as submitit's ``slurm_additional_parameters`` (``{"qos": "high", "exclusive": True}``)."""
        return dict(_sbatch_option(option, "extra_sbatch") for option in self.extra_sbatch)


def _sbatch_option(option: str, where: str) -> tuple[str, Any]:
    """``"#SBATCH --qos=high"`` -> ``("qos", "high")``; a bare flag's value is ``True``."""
    text = option.strip().removeprefix("#SBATCH").strip().removeprefix("--")
    key, sep, value = text.partition("=")
    if not _FLAG.match(key) or (sep and not value):
        raise ValueError(f"{where}: {option!r} is not an sbatch option (expected key=value, --key=value or a flag)")
    return key.replace("-", "_"), value if sep else True


def available() -> str | None:
    """None when a SLURM cluster answers here (``sbatch`` and ``squeue`` on PATH, and ``sinfo`` lists a node that is
    up: idle, mixed, allocated or completing a job, within 5 s); else the reason, in one line."""
    for command in ("sbatch", "squeue", "sinfo"):
        if shutil.which(command) is None:
            return f"no SLURM cluster: {command} is not on PATH"
    try:
        res = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=5)
    except subprocess.TimeoutExpired:
        return "no SLURM cluster: sinfo did not answer within 5 s"
    if res.returncode != 0:
        return f"no SLURM cluster: sinfo failed ({(res.stderr.strip().splitlines() or ['no message'])[-1]})"
    states = res.stdout.split()
    if not any(s.rstrip("~#") in ("idle", "mix", "alloc", "comp") for s in states):  # idle*: not responding
        return f"no SLURM node is up (sinfo states: {', '.join(sorted(set(states))) or 'no nodes'})"
    return None


def _task_states(array_id: str) -> dict[str, str] | None:
    """``{"<array>_<task>": state}`` for the tasks squeue still lists; ``{}`` when it lists none (the job id is gone),
    None when squeue itself failed (the controller busy: ask again later)."""
    res = subprocess.run(["squeue", "-h", "-r", "--states=all", "-o", "%i %T", "-j", array_id],
                         capture_output=True, text=True)
    if res.returncode != 0:
        return {} if "Invalid job id" in res.stderr else None
    return dict(line.split()[:2] for line in res.stdout.splitlines() if line.strip())


class SlurmExecutor(Executor):
    """Runs the jobs as one SLURM job array (one job when there is one); see the module's description."""

    name = "slurm"

    def __init__(self, settings: SlurmSettings | None = None) -> None:
        self.settings = settings or SlurmSettings()

    def _submitit(self):
        """The submitit executor, its parameters from :attr:`settings`."""
        import submitit  # deferred: only a SLURM run needs it

        s = self.settings
        executor = submitit.AutoExecutor(folder=s.log_folder, cluster="slurm")
        params: dict[str, Any] = {"name": "faircl", "timeout_min": s.time_min, "cpus_per_task": s.cpus_per_task,
                                  "slurm_array_parallelism": s.array_parallelism, "slurm_stderr_to_stdout": True,
                                  "slurm_additional_parameters": s.sbatch_options()}
        if s.partition:
            params["slurm_partition"] = s.partition
        if s.gpus_per_task:
            params["slurm_gpus_per_task"] = s.gpus_per_task
        if s.mem_gb is not None:
            params["mem_gb"] = s.mem_gb
        executor.update_parameters(**params)
        return executor

    def run(self, jobs: list[Job], done: Done) -> None:
        """Submit every job as one array, then call ``done(job, status, info)`` as each task ends, with ``info`` =
        ``{"launcher", "job_id", "log", "slurm_log", "state"}``. A task that ended without a result (cancelled,
        killed, timed out, its node lost) has status 1 and its SLURM state. A ``KeyboardInterrupt`` (or any error
        while waiting) cancels the array before it is re-raised."""
        if not jobs:
            return
        self.settings.log_folder.mkdir(parents=True, exist_ok=True)
        envs = [{LAUNCHER_ENV: self.name, LOG_ENV: str(job.log), **job.env} for job in jobs]
        tasks = self._submitit().map_array(_array_task, [j.target for j in jobs], [j.args for j in jobs],
                                           [str(j.log) for j in jobs], envs)
        array_id = tasks[0].job_id.split("_")[0]
        try:
            self._wait(dict(zip(tasks, jobs)), array_id, done)
        except BaseException as err:
            _cancel(array_id)
            if isinstance(err, KeyboardInterrupt):
                raise KeyboardInterrupt(f"cancelled SLURM job array {array_id} ({len(jobs)} jobs)") from None
            raise

    def _wait(self, pending: dict[Any, Job], array_id: str, done: Done) -> None:
        """Poll until every task has ended: each second for result files, squeue more seldom as the wait grows."""
        start = last_squeue = time.monotonic()
        ended_at: dict[Any, float] = {}  # task -> when squeue first showed it ended without a result
        while pending:
            time.sleep(1.0)
            now = time.monotonic()
            states: dict[str, str] | None = None
            if now - last_squeue >= min(30.0, max(1.0, (now - start) / 10)):
                states, last_squeue = _task_states(array_id), now
            for task, job in list(pending.items()):
                info = {"launcher": self.name, "job_id": task.job_id, "log": str(job.log),
                        "slurm_log": str(task.paths.stdout)}
                if task.paths.result_pickle.exists():
                    code, info["state"] = _outcome(task), "COMPLETED"
                elif states is None or states.get(task.job_id, "GONE") in _NOT_ENDED:
                    continue
                else:
                    state = info["state"] = states.get(task.job_id, "GONE").split()[0]
                    ended_at.setdefault(task, now)
                    if now - ended_at[task] < _RESULT_WAIT_S.get(state, 0.0):
                        continue
                    code = 1
                del pending[task]
                done(job, code, info)


def _array_task(target: str, args: tuple, log: str, env: dict[str, str]) -> int:
    """One array task: :func:`call_target`, then the process's output back where it was, so that what submitit logs
    after the job goes to the task's SLURM log, not to the job's."""
    saved = os.dup(1), os.dup(2)
    try:
        return call_target(target, args, log, env)
    finally:
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)


def _outcome(task) -> int:
    """The exit status a finished task returned; 1 when it raised (call_target itself failed: an import error)."""
    try:
        return int(task.result())
    except Exception:
        return 1


def _cancel(array_id: str, wait_s: float = 30.0) -> None:
    """scancel the array, then wait (at most ``wait_s``) until squeue lists none of its tasks as pending or running."""
    subprocess.run(["scancel", array_id], capture_output=True)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        res = subprocess.run(["squeue", "-h", "-j", array_id], capture_output=True, text=True)
        if res.returncode != 0 or not res.stdout.strip():
            return
        time.sleep(0.5)
