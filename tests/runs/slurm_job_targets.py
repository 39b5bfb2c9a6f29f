"""Targets of the SLURM executor's tests (tests/runs/test_slurm.py): each runs in a SLURM array task, which imports
this module by name (the tests put this folder on the jobs' PYTHONPATH)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from faircl.runs.executors import launch_info


def write(path: str) -> int:
    """Write the job's launcher and SLURM id as its run record reads them, and its environment's FAIRCL_TEST_VALUE,
    to ``path``; status 0."""
    info = launch_info()
    Path(path).write_text(f"{info['launcher']} {info['job_id']} {os.environ.get('FAIRCL_TEST_VALUE')}\n")
    print("wrote", path)
    return 0


def status_3() -> int:
    print("returning status 3")
    return 3


def fail() -> int:
    raise RuntimeError("a planted failure")


def sleep(started: str, seconds: str) -> int:
    """Write this task's SLURM id to ``started``, then sleep."""
    Path(started).write_text(f"{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ['SLURM_ARRAY_TASK_ID']}\n")
    print("sleeping", seconds, "s", flush=True)
    time.sleep(float(seconds))
    return 0


def sleep_once(started: str) -> int:
    """The first run sleeps (for a test to cancel); a run that finds ``started`` already there ends at once."""
    if Path(started).exists():
        print("started before: done now")
        return 0
    return sleep(started, "300")
