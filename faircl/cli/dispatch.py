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
import errno
import os
import re
import signal
import sys
import traceback
from pathlib import Path

from faircl import __version__
from faircl.cli.config_files import CLIError, expand_configs, option_value, shipped_configs
from faircl.cli.ranks import end_ranks

TRAINING = ("fit", "validate", "test", "predict")
#: sub-commands served by their own module, whose function ``<name>(argv) -> int`` parses its own arguments
#: (dispatched by name when the module is installed; ``faircl.bench`` sits above this layer and is never imported here)
TOOLS = {"sweep": "faircl.cli.sweep", "compare": "faircl.cli.compare", "bench": "faircl.bench.command"}

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
  bench      a method (built in or your own class) through a suite of protocols, with verdicts (--list)

options:
  -h, --help     show this message (`faircl <command> --help`: the options of that command)
  --version      print the version
  --debug        show the traceback of a usage, config or data error (or set FAIRCL_DEBUG=1)

Exit status: 0 success, 2 usage / config / data error (one line on stderr), 1 any other failure.
Examples:
  faircl fit --config confair/biased_features
  faircl test --config confair/biased_features --ckpt_path best
  faircl fit --config ce/synthbios --trainer.devices 2 --trainer.strategy ddp"""

CONFIGS_USAGE = ("usage: faircl configs\n"
                 "  list the configs shipped with faircl, one name a line (<method>/<dataset>); a name works with\n"
                 "  --config from any directory, e.g. faircl fit --config confair/biased_features")
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
    given_config = option_value(argv, "config")
    argv = expand_configs(argv)
    ckpt = option_value(argv, "ckpt")
    if ckpt is not None:
        # a missing, corrupt or unsafe file, or a checkpoint of another method than the config's: one line, before
        # any data is read
        from faircl.cli.runs import checkpoint_class, checkpoint_dict, read_config, short_name  # deferred: torch
        stored = short_name(checkpoint_class(checkpoint_dict(ckpt)))
        config = option_value(argv, "config")
        wanted = short_name(read_config(config).get("model")) if config and Path(config).is_file() else None
        if wanted and stored and wanted != stored:
            raise CLIError(f"--ckpt {ckpt} holds a {stored} model, but --config {given_config} is a config of {wanted}: "
                           f"pass a config of {stored} (`faircl configs` lists them), or a checkpoint of {wanted}")
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
    cli = None
    try:
        cli = run_cli([a for a in argv if a != "--debug"])
        ok = True
    except SystemExit:
        # Lightning turns Ctrl-C during a run into exit status 1 after a graceful shutdown: report it as the
        # interruption it is (130), with how to resume
        from faircl.cli.runs import interruption  # deferred: torch and Lightning

        said = interruption()
        if said is None:
            raise
        _restore_ctrl_c()
        raise KeyboardInterrupt(said) from None
    finally:
        sys.argv = saved
        end_distributed(barrier=ok)
        if ok:
            end_ranks(getattr(cli, "trainer", None))  # the command ends when every rank it started has ended


#: jsonargparse's wrapper around the error a class raised while it was built from the options
UNION_FAILURE = "Does not validate against any of the Union subtypes"
#: what an operating system says when the user may not write (or read) a path
_DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)


def _is_denied(err: BaseException) -> bool:
    return isinstance(err, PermissionError) or (isinstance(err, OSError) and err.errno in _DENIED)


def _restore_ctrl_c() -> None:
    """Give Ctrl-C back: Lightning ignores SIGINT for the rest of the process after its graceful shutdown, which would
    leave a notebook (or any caller of :func:`main`) and every process it starts later unable to be interrupted."""
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: signal handlers belong to the main thread
        pass


def is_usage_error(err: BaseException) -> bool:
    """Whether ``err`` is the user's to fix (exit status 2, one line): a usage, config, data or checkpoint error, or a
    path the user may not write."""
    if isinstance(err, (CLIError, ValueError, TypeError, FileNotFoundError, NotADirectoryError)) or _is_denied(err):
        return True
    if type(err).__name__ == "ArgumentError":  # an argument the parser (jsonargparse) rejects
        return True
    # Lightning's MisconfigurationException: an accelerator that is not available, max_epochs below a resumed
    # checkpoint's epoch, an invalid Trainer argument (named, not imported: `--help` must not load Lightning)
    return any(c.__name__ == "MisconfigurationException" for c in type(err).__mro__)


def _wrapped_reason(err: BaseException) -> BaseException | None:
    """The error a class raised inside jsonargparse's "Does not validate against any of the Union subtypes" (a
    method's or datamodule's own check, e.g. "batch_size must be >= 1, got 0"), or ``None``."""
    seen: set[int] = set()
    inner: BaseException | None = err
    while inner is not None and UNION_FAILURE in str(inner) and id(inner) not in seen:
        seen.add(id(inner))
        inner = inner.__cause__ or inner.__context__
    return inner if inner is not None and inner is not err else None


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


def user_message(err: BaseException) -> str:
    """The one line that tells the user what is wrong (without the ``faircl: error:`` prefix): the message of a
    :class:`CLIError`; for an option the parser rejects, the option, its value and what was expected; for a class
    that refused its arguments, the class and its own message (not jsonargparse's "Does not validate against any of
    the Union subtypes"); for a path the user may not write, the path. Shared by every command (``faircl sweep``
    too)."""
    text = str(err).strip()
    if isinstance(err, CLIError):
        return text
    if _is_denied(err) and isinstance(err, OSError):
        path = err.filename if err.filename is not None else ""
        return (f"{str(path)!r}: {err.strerror or 'permission denied'}; choose a folder you may write to "
                "(--trainer.default_root_dir DIR, --out DIR) or change its permissions")
    if type(err).__name__ == "ArgumentError" and _argument_message(text):
        return str(_argument_message(text))
    reason = _wrapped_reason(err) if UNION_FAILURE in text else None
    if reason is not None:
        found = re.search(r"class_path='([\w.]+)'", text)
        owner = f"{found.group(1).rsplit('.', 1)[-1]}: " if found else ""
        said = " ".join(ln.strip() for ln in str(reason).splitlines() if ln.strip())[:600]
        return owner + (said if isinstance(reason, (ValueError, TypeError)) and said else user_message(reason))
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
            if "-h" in argv[1:] or "--help" in argv[1:]:
                print(CONFIGS_USAGE)
            else:
                print("\n".join(shipped_configs()))
        elif command == "export":
            _export([a for a in argv[1:] if a != "--debug"])
        elif command == "findml":
            _findml([a for a in argv[1:] if a != "--debug"])
        elif command in TRAINING or command.startswith("-"):
            _train(argv)
        elif command in TOOLS and importlib.util.find_spec(TOOLS[command]) is not None:
            tool = getattr(importlib.import_module(TOOLS[command]), command)
            return int(tool([a for a in argv[1:] if a != "--debug"]) or 0)
        else:
            raise CLIError(f"unknown command {command!r}; choose one of fit, validate, test, predict, configs, "
                           "export, findml, sweep, compare, bench (faircl --help)")
    except SystemExit as exc:  # --help, --print_config and the argument errors of a parser
        code = exc.code
        if isinstance(code, str):
            print(f"faircl: error: {code}", file=sys.stderr)
            return 2
        return int(code or 0)
    except KeyboardInterrupt as exc:
        print("faircl: interrupted" + (f"; {exc}" if str(exc) else ""), file=sys.stderr)
        return 130
    except Exception as err:
        if not is_usage_error(err):
            traceback.print_exc()
            return 1
        if debug:
            traceback.print_exc()
        print(f"faircl: error: {user_message(err)}", file=sys.stderr)
        if not debug:
            print("(add --debug or set FAIRCL_DEBUG=1 to see the traceback)", file=sys.stderr)
        return 2
    return 0


def main_sequence(commands: list[list[str]]) -> int:
    """Run several ``faircl`` commands in this process, in order (e.g. a ``fit`` and its ``test``, as one run of a
    sweep or a bench does in one forked child); stops at the first that fails and returns its status, else 0."""
    for args in commands:
        code = main(list(args))
        if code:
            return code
    return 0
