"""The ``faircl`` command line: dispatch, help, version and exit status.

``faircl configs``, ``--help`` and ``--version`` answer without importing torch or Lightning; the training commands
(``fit``, ``validate``, ``test``, ``predict``) run :mod:`faircl.cli.app`, ``export`` :mod:`faircl.cli.outputs` and
``findml`` :mod:`faircl.eval.findml`.

Exit status: 0 on success, 2 on a usage, config, data or checkpoint error (the problem in one line on stderr; the
traceback with ``--debug`` or ``FAIRCL_DEBUG=1``), 1 on any other failure (with its traceback).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import traceback

from faircl import __version__
from faircl.cli.names import CLIError, expand_configs, option_value, shipped_configs

TRAINING = ("fit", "validate", "test", "predict")
#: sub-commands served by their own module ``faircl.cli.<name>``, whose function ``<name>(argv) -> int`` parses its
#: own arguments (dispatched when the module is installed)
TOOLS = ("sweep", "compare")

HELP = f"""usage: faircl <command> [options]      (faircl {__version__})

faircl: fair representation learning with contrastive and metric objectives, as PyTorch Lightning modules
(ConFair, TwoStageCL, OneStageCL, PARADE, FairSamplingSimCLR, CCD, baselines), with exact fairness metrics.

commands:
  fit        train a method: --config <method>/<dataset> (see `faircl configs`) or --model X --data Y
  validate   evaluate a checkpoint on the validation split (--ckpt_path best | last | FILE | none)
  test       evaluate a checkpoint on the test split; prints and writes report.json / report.md / report.png
  predict    write predictions.pt / predictions.csv of a checkpoint
  configs    list the shipped configs (a name works with --config from any directory)
  export     save the text encoder of a checkpoint as a Hugging Face folder
  findml     finDML representation report of a checkpoint (--ckpt FILE --config NAME)
  sweep      hyper-parameter search with Optuna, every trial a fit + test (--search PATH=RANGE --objectives ...)
  compare    tables, model selection, Pareto front and baseline verdicts over runs and sweeps (--out DIR)

options:
  -h, --help     show this message (`faircl <command> --help`: the options of that command)
  --version      print the version
  --debug        show the traceback of a usage, config or data error (or set FAIRCL_DEBUG=1)

Exit status: 0 success, 2 usage / config / data error (one line on stderr), 1 any other failure.
Examples:
  faircl fit --config confair/biased_features
  faircl test --config confair/biased_features --ckpt_path best
  faircl fit --config ce/synthbios --trainer.devices 2 --trainer.strategy ddp"""

EXPORT_USAGE = ("usage: faircl export --ckpt_path <file.ckpt | best | last> [--root DIR] --out DIR [--overwrite]\n"
                "  best / last: the newest run under --root (default: the current directory)")


def _export(argv: list[str]) -> None:
    if "-h" in argv or "--help" in argv:
        print(EXPORT_USAGE)
        return
    ckpt, out = option_value(argv, "ckpt_path"), option_value(argv, "out")
    if not ckpt or not out:
        raise CLIError(EXPORT_USAGE.replace("\n", ";"))
    from faircl.cli import outputs, runs  # deferred: torch and Lightning, only for this command
    if ckpt in ("best", "last"):
        ckpt = str(runs.find_checkpoint(option_value(argv, "root") or ".", ckpt))
    path = outputs.export_encoder(ckpt, out, overwrite="--overwrite" in argv)
    print(f"encoder of {ckpt} exported to {path}")


def _findml(argv: list[str]) -> None:
    """``faircl findml``: the finDML report; the config may be a shipped name, the checkpoint is checked first."""
    if "-h" in argv or "--help" in argv:
        from faircl.eval import findml  # deferred: torch and scikit-learn, only for this command
        findml.main(["--help"])
        return
    argv = expand_configs(argv)
    ckpt = option_value(argv, "ckpt")
    if ckpt is not None:
        from faircl.cli.runs import checkpoint_epoch  # deferred: torch and Lightning, only for this command
        checkpoint_epoch(ckpt)  # a missing, corrupt or unsafe file is one line, before any data is read
    from faircl.eval import findml  # deferred: torch and scikit-learn, only for this command
    findml.main(argv)


def _train(argv: list[str]) -> None:
    from faircl.cli.app import run_cli  # deferred: torch and Lightning, only for the training commands
    from faircl.utils import end_distributed  # deferred: torch

    saved = sys.argv
    # Lightning's own multi-process launcher (``--trainer.strategy ddp``) starts each further process by re-running
    # ``sys.argv``: it must hold this command's arguments as the user gave them.
    sys.argv = [saved[0] if saved else "faircl", *argv]
    ok = False
    try:
        run_cli([a for a in argv if a != "--debug"])
        ok = True
    finally:
        sys.argv = saved
        end_distributed(barrier=ok)


def _is_usage_error(err: BaseException) -> bool:
    if isinstance(err, (CLIError, ValueError, TypeError, FileNotFoundError, NotADirectoryError)):
        return True
    if type(err).__name__ == "ArgumentError":  # an argument the parser (jsonargparse) rejects
        return True
    # Lightning's MisconfigurationException: an accelerator that is not available, max_epochs below a resumed
    # checkpoint's epoch, an invalid Trainer argument (named, not imported: `--help` must not load Lightning)
    return any(c.__name__ == "MisconfigurationException" for c in type(err).__mro__)


def _argument_message(text: str) -> str | None:
    """One line from the parser's multi-line message: which option, the value given and what was expected."""
    key = re.search(r'Parser key "([^"]+)"', text)
    if key is None:
        return None
    nested = re.search(r"NestedArg\(key='([^']+)', val='([^']*)'", text)
    if nested is not None:
        return (f"--{key.group(1)}.init_args.{nested.group(1)} {nested.group(2)}: not accepted by the chosen "
                f"{key.group(1)} (no such argument, or a value of the wrong type; its arguments: "
                f"faircl fit --{key.group(1)}.help <class name>)")
    given = re.search(r"Given value: (.+)", text)
    subtypes = re.search(r"Subtypes: \[(.*?)\]", text)
    expected = [t.rsplit(".", 1)[-1].replace("NoneType", "null")
                for t in re.findall(r"<class '([\w.]+)'>", subtypes.group(1) if subtypes else "")]
    if given is not None and expected:
        return f"--{key.group(1)} {given.group(1).strip()}: not a valid value (expected {' or '.join(expected)})"
    return None


def _message(err: BaseException) -> str:
    text = str(err).strip()
    if isinstance(err, CLIError):
        return text
    if type(err).__name__ == "ArgumentError" and _argument_message(text):
        return str(_argument_message(text))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = " ".join(lines[:2])[:600] if lines else ""
    return f"{type(err).__name__}: {first}" if type(err).__name__ != "MisconfigurationException" else first


def main(args: list[str] | None = None) -> int:
    """The ``faircl`` command; returns the exit status (0 success, 2 usage / config / data error, 1 other)."""
    argv = list(sys.argv[1:] if args is None else args)
    debug = "--debug" in argv or os.environ.get("FAIRCL_DEBUG", "") not in ("", "0")
    command = argv[0] if argv else None
    try:
        if command in (None, "-h", "--help", "help"):
            print(HELP)
            return 0 if command is not None else 2
        if command in ("--version", "-V", "version"):
            print(f"faircl {__version__}")
        elif command == "configs":
            print("\n".join(shipped_configs()))
        elif command == "export":
            _export([a for a in argv[1:] if a != "--debug"])
        elif command == "findml":
            _findml([a for a in argv[1:] if a != "--debug"])
        elif command in TRAINING or command.startswith("-"):
            _train(argv)
        elif command in TOOLS and importlib.util.find_spec(f"faircl.cli.{command}") is not None:
            tool = getattr(importlib.import_module(f"faircl.cli.{command}"), command)
            return int(tool([a for a in argv[1:] if a != "--debug"]) or 0)
        else:
            raise CLIError(f"unknown command {command!r}; choose one of fit, validate, test, predict, configs, "
                           "export, findml, sweep, compare (faircl --help)")
    except SystemExit as exc:  # --help, --print_config and the argument errors of a parser
        code = exc.code
        if isinstance(code, str):
            print(f"faircl: error: {code}", file=sys.stderr)
            return 2
        return int(code or 0)
    except KeyboardInterrupt:
        print("faircl: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        if not _is_usage_error(err):
            traceback.print_exc()
            return 1
        if debug:
            traceback.print_exc()
        print(f"faircl: error: {_message(err)}", file=sys.stderr)
        if not debug:
            print("(add --debug or set FAIRCL_DEBUG=1 to see the traceback)", file=sys.stderr)
        return 2
    return 0
