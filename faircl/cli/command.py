"""The ``faircl`` console command: ``sweep`` and ``compare`` here, every other sub-command in :mod:`faircl.cli.app`."""

from __future__ import annotations

import os
import sys
import traceback

from faircl.cli import app
from faircl.cli.compare import compare
from faircl.cli.runs import CLIError
from faircl.cli.sweep import sweep

#: sub-commands served by their own modules (argument parsing of their own, one-line errors, exit 2)
TOOLS = ("sweep", "compare")


def main(args: list[str] | None = None) -> int:
    """``faircl <sub-command> ...``; returns the exit status (0 success, 2 bad input, 1 other failure)."""
    argv = list(sys.argv[1:] if args is None else args)
    if not argv or argv[0] not in TOOLS:
        return app.main(args)
    debug = os.environ.get("FAIRCL_DEBUG", "") not in ("", "0")
    try:
        return sweep(argv[1:]) if argv[0] == "sweep" else compare(argv[1:])
    except SystemExit as exc:  # --help and argument errors of the parsers
        code = exc.code
        if isinstance(code, str):
            print(f"faircl {argv[0]}: error: {code}", file=sys.stderr)
            return 2
        return int(code or 0)
    except Exception as err:  # noqa: BLE001 - the same rule as `faircl fit`: bad input is one line, exit 2
        if debug:
            traceback.print_exc()
        if isinstance(err, (CLIError, FileNotFoundError, NotADirectoryError, ValueError, TypeError)):
            message = str(err) if isinstance(err, CLIError) else f"{type(err).__name__}: {err}"
            print(f"faircl {argv[0]}: error: {message}", file=sys.stderr)
            if not debug:
                print("(set FAIRCL_DEBUG=1 to see the traceback)", file=sys.stderr)
            return 2
        if not debug:
            traceback.print_exc()
        return 1
