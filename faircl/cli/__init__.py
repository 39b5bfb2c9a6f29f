"""The ``faircl`` command (``faircl fit|validate|test|predict|export|configs``); see :mod:`faircl.cli.app`."""

from faircl.cli.app import FairCLI, check_names, datamodules, main, run_cli
from faircl.cli.runs import CLIError, find_checkpoint, resolve_config, shipped_configs

__all__ = ["CLIError", "FairCLI", "check_names", "datamodules", "find_checkpoint", "main", "resolve_config",
           "run_cli", "shipped_configs"]
