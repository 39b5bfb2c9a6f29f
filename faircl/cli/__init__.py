"""The ``faircl`` command, every sub-command an argv front end (:mod:`faircl.cli.dispatch`); the runs they start
are :mod:`faircl.runs`'s.

Importing this package loads neither torch nor Lightning: ``FairCLI``, ``run_cli``, ``find_checkpoint`` and the
other names below are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from faircl.cli.dispatch import main
from faircl.runs.config_files import resolve_config, shipped_configs
from faircl.runs.user_error import UserError

#: the former name of :class:`~faircl.runs.user_error.UserError`
CLIError = UserError

_LAZY = {"FairCLI": "faircl.runs.lightning_cli", "check_name": "faircl.runs.cli_names",
         "datamodules": "faircl.runs.cli_names", "run_cli": "faircl.runs.lightning_cli",
         "find_checkpoint": "faircl.runs.checkpoint_lookup"}

__all__ = ["CLIError", "FairCLI", "UserError", "check_name", "datamodules", "find_checkpoint", "main", "resolve_config",
           "run_cli", "shipped_configs"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'faircl.cli' has no attribute {name!r}")
