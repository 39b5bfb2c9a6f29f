"""The ``faircl`` command (``faircl fit|validate|test|predict|configs|export|findml``); see :mod:`faircl.cli.dispatch`
and :mod:`faircl.cli.app`.

Importing this package loads neither torch nor Lightning: ``FairCLI``, ``run_cli``, ``find_checkpoint`` and the
other names below are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from faircl.cli.dispatch import main
from faircl.cli.config_files import CLIError, resolve_config, shipped_configs

_LAZY = {"FairCLI": "faircl.cli.app", "check_names": "faircl.cli.app", "datamodules": "faircl.cli.app",
         "run_cli": "faircl.cli.app", "find_checkpoint": "faircl.cli.checkpoint_lookup"}

__all__ = ["CLIError", "FairCLI", "check_names", "datamodules", "find_checkpoint", "main", "resolve_config",
           "run_cli", "shipped_configs"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'faircl.cli' has no attribute {name!r}")
