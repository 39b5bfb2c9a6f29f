"""The ``faircl`` command (``faircl fit|validate|test|predict|export|configs|sweep|compare``); see
:mod:`faircl.cli.app`, :mod:`faircl.cli.sweep` and :mod:`faircl.cli.compare`."""

from faircl.cli.app import FairCLI, check_names, datamodules, run_cli
from faircl.cli.command import main
from faircl.cli.runs import CLIError, find_checkpoint, resolve_config, shipped_configs

__all__ = ["CLIError", "FairCLI", "check_names", "datamodules", "find_checkpoint", "main", "resolve_config",
           "run_cli", "shipped_configs"]
