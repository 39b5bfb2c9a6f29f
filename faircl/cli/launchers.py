"""``--launcher local|fresh|slurm`` and the ``--slurm.*`` settings, shared by ``faircl bench`` and ``faircl sweep``.

The settings are options (``--slurm.partition gpu --slurm.gpus_per_task 1``) or a YAML file of them
(``--slurm cluster.yaml``; ``faircl bench --config FILE`` also reads its ``slurm:`` section); jsonargparse reads
them, and they are checked before anything runs or is submitted.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from faircl.runs.executors import Executor, FreshProcesses, LocalPool
from faircl.runs.slurm import SlurmExecutor, SlurmSettings, available
from faircl.runs.user_error import UserError

__all__ = ["LAUNCHERS", "add_launcher_arguments", "executor_from", "unknown_setting"]

LAUNCHERS = ("local", "fresh", "slurm")


def add_launcher_arguments(parser: Any, what: str) -> None:
    """Add ``--launcher`` and ``--slurm`` (a :class:`~faircl.runs.slurm.SlurmSettings`) to a jsonargparse parser;
    ``what`` says what the launcher starts (in the help)."""
    parser.add_argument("--launcher", choices=LAUNCHERS, default="local", help=(
        f"where {what} run: local (forked from a pre-imported worker on this machine), fresh (a new Python process "
        "each) or slurm (SLURM job arrays through submitit; the run folders, the cache and the storage must be on a "
        "filesystem the cluster's nodes share)"))
    parser.add_argument("--slurm", type=SlurmSettings, default=SlurmSettings(), help=(
        "what each SLURM array task asks for (--launcher slurm): --slurm.partition, --slurm.gpus_per_task, "
        "--slurm.cpus_per_task, --slurm.mem_gb, --slurm.time_min, --slurm.array_parallelism, --slurm.extra_sbatch "
        "(a list of sbatch options, e.g. '[qos=high]'), --slurm.log_folder (default: <out>/slurm); or --slurm "
        "FILE.yaml, a mapping of these settings"))


def unknown_setting(err: BaseException) -> UserError | None:
    """For a parser's refusal of a ``--slurm.KEY`` option or of a key of a ``--slurm FILE.yaml`` that is no SLURM
    setting: one line naming it and the settings there are; ``None`` for any other error."""
    text = str(err)
    named = (re.search(r"--slurm\.(\w+)", text) if "nrecognized arguments" in text else None) or re.search(
        r"Group 'slurm' does not accept (?:option|key) '(\w+)'", text)
    if named is None:
        return None
    settings = ", ".join(f.name for f in dataclasses.fields(SlurmSettings))
    return UserError(f"--slurm.{named.group(1)}: not a SLURM setting; the settings are {settings}")


def slurm_settings(value: Any, out: Path) -> SlurmSettings:
    """The parsed ``--slurm`` value, checked (:meth:`SlurmSettings.from_mapping`), its log folder under ``out`` unless
    one was given."""
    if dataclasses.is_dataclass(value):
        given = dataclasses.asdict(value)
    else:  # a jsonargparse Namespace (--slurm FILE.yaml, or the settings of a --config file)
        given = value.as_dict() if hasattr(value, "as_dict") else dict(value or {})
    given.pop("__path__", None)  # jsonargparse's note of the file the settings came from, not a setting
    if str(given.get("log_folder")) == str(SlurmSettings().log_folder):
        given["log_folder"] = out / "slurm"
    try:
        return SlurmSettings.from_mapping(given, where="--slurm")
    except ValueError as err:
        raise UserError(str(err)) from None


def executor_from(launcher: str, slurm: Any, out: Path, local: Executor | None = None) -> Executor:
    """The executor ``--launcher`` names (``local``: ``local``, or a :class:`LocalPool` when ``None``); ``slurm`` is
    refused in one line where no cluster answers."""
    if launcher == "fresh":
        return FreshProcesses()
    if launcher == "slurm":
        settings = slurm_settings(slurm, out)
        reason = available()
        if reason is not None:
            raise UserError(f"--launcher slurm: {reason}; run on a machine that can submit jobs (sbatch, squeue), or "
                            "use --launcher local")
        return SlurmExecutor(settings)
    return local or LocalPool()
