"""The ``faircl`` command line: dispatch, help, version and exit status.

``faircl configs``, ``--help`` and ``--version`` answer without importing torch or Lightning; the training commands
(``fit``, ``validate``, ``test``, ``predict``) run :mod:`faircl.cli.app`, ``export`` :mod:`faircl.cli.outputs` and
``findml`` :mod:`faircl.eval.findml`.

Exit status: 0 on success, 2 on a usage, config, data or checkpoint error (the problem in one line on stderr; the
traceback with ``--debug`` or ``FAIRCL_DEBUG=1``), 1 on any other failure (with its traceback).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import importlib.util
import os
import signal
import sys
import traceback
import typing
from types import TracebackType, UnionType
from typing import Any

from faircl import __version__
from faircl.cli.config_files import CLIError, option_value, read_config, resolve_configs, shipped_configs
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


def export_parser() -> Any:
    """The parser of ``faircl export`` (jsonargparse; its errors are raised, one line, exit status 2)."""
    from jsonargparse import ArgumentParser  # deferred: `faircl --help` answers without it

    p = ArgumentParser(prog="faircl export", exit_on_error=False, default_env=False,
                       description="Save the text encoder of a checkpoint as a Hugging Face folder.")
    p.add_argument("--ckpt_path", type=str, required=True,
                   help="a checkpoint file, or best | last: the newest run under --root")
    p.add_argument("--root", type=str, default=".", help="where best / last look for runs (default: this folder)")
    p.add_argument("--out", type=str, required=True, help="the folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace the files of an earlier export in --out")
    return p


def _export(argv: list[str]) -> None:
    opts = export_parser().parse_args(argv)
    from faircl.cli import checkpoint_lookup, outputs  # deferred: torch and Lightning, only for this command

    ckpt = opts.ckpt_path
    if ckpt in ("best", "last"):
        ckpt = str(checkpoint_lookup.find_checkpoint(opts.root, ckpt))
    path = outputs.export_encoder(ckpt, opts.out, overwrite=opts.overwrite)
    print(f"encoder of {ckpt} exported to {path}")


def _findml(argv: list[str]) -> None:
    """``faircl findml``: the finDML report; the config may be a shipped name, the checkpoint is checked first."""
    if "-h" in argv or "--help" in argv:
        from faircl.eval import findml  # deferred: torch and scikit-learn, only for this command
        findml.main(["--help"])
        return
    given_config = option_value(argv, "config")
    argv, files = resolve_configs(argv)
    ckpt = option_value(argv, "ckpt")
    if ckpt is not None:
        # a missing, corrupt or unsafe file, or a checkpoint of another method than the config's: one line, before
        # any data is read
        from faircl.cli.checkpoint_lookup import checkpoint_class, checkpoint_dict, short_name  # deferred: torch
        stored = short_name(checkpoint_class(checkpoint_dict(ckpt)))
        wanted = short_name(read_config(files[-1]).get("model")) if files else None
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
        from faircl.cli.callbacks import interruption  # deferred: torch and Lightning

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


def _chain(err: BaseException) -> list[BaseException]:
    """``err`` and the exceptions it was raised from or while handling (``__cause__`` / ``__context__``), outer
    first."""
    chain: list[BaseException] = []
    while err is not None and all(err is not seen for seen in chain):
        chain.append(err)
        err = err.__cause__ or err.__context__
    return chain


def _frames(tb: TracebackType | None) -> list[Any]:
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _raised_by_parser(err: BaseException) -> bool:
    """Whether the parser (jsonargparse or argparse) raised ``err`` itself, not a class it was building."""
    frames = _frames(err.__traceback__)
    module = frames[-1].f_globals.get("__name__", "") if frames else ""
    return module.split(".")[0] in ("jsonargparse", "argparse")


def _owner(err: BaseException) -> str | None:
    """The class whose ``__init__`` raised ``err`` (the instance being built, so a subclass's name when the check is
    in its base), or ``None``."""
    for frame in reversed(_frames(err.__traceback__)):
        owner = frame.f_locals.get("self")
        if frame.f_code.co_name == "__init__" and owner is not None:
            return type(owner).__name__
    return None


def _type_name(hint: Any) -> str:
    if hint is type(None):
        return "null"
    args = typing.get_args(hint)
    if args and typing.get_origin(hint) in (typing.Union, UnionType):
        return " or ".join(_type_name(a) for a in args)
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _refused_option(chain: list[BaseException]) -> str | None:
    """For a value the parser refused: the option, the value given and what was expected, from the parser's actions
    that were checking it when the error rose, outer option first. Each is on the exception's traceback with the value
    in hand (jsonargparse's ``ActionTypeHint._check_type``: ``self``, ``orig_val``, ``self._typehint``; a
    ``NestedArg(key, val)`` for ``--model.init_args.X V``; jsonargparse 4.39 to 4.53)."""
    checks: list[tuple[argparse.Action, Any]] = []
    for exc in chain:
        for frame in _frames(exc.__traceback__):
            action = frame.f_locals.get("self")
            if isinstance(action, argparse.Action) and "orig_val" in frame.f_locals:
                if all(action is not seen for seen, _ in checks):
                    checks.append((action, frame.f_locals["orig_val"]))
    if not checks:
        return None
    outer, inner = checks[0][0], checks[-1][0]
    value = checks[-1][1]
    if type(value).__name__ == "NestedArg":  # `--model.init_args.X V`, X unknown to the chosen class
        return (f"--{outer.dest}.init_args.{value.key} {value.val}: not accepted by the chosen {outer.dest} (no such "
                f"argument, or a value of the wrong type; its arguments: faircl fit --{outer.dest}.help <class name>)")
    option = ".init_args.".join(action.dest for action, _ in checks)
    hint = getattr(inner, "_typehint", None) or inner.type
    expected = f" (expected {_type_name(hint)})" if hint is not None else ""
    return f"--{option} {value}: not a valid value{expected}"


def user_message(err: BaseException) -> str:
    """The one line that tells the user what is wrong (without the ``faircl: error:`` prefix), taken from the
    exception and those it was raised from: the message of a :class:`CLIError`; for a class that refused its
    arguments while the parser built it, the class and its own message (a method's or datamodule's check, e.g.
    "BiasedFeatures: batch_size must be >= 1, got 0", not the parser's union wrapper around it); for a value the
    parser refused, the option, its value and what was expected; for a path the user may not write, the path.
    Shared by every command (``faircl sweep`` and ``faircl bench`` too)."""
    if isinstance(err, CLIError):
        return str(err).strip()
    if _is_denied(err) and isinstance(err, OSError):
        path = err.filename if err.filename is not None else ""
        return (f"{str(path)!r}: {err.strerror or 'permission denied'}; choose a folder you may write to "
                "(--trainer.default_root_dir DIR, --out DIR) or change its permissions")
    chain = _chain(err)
    reason = chain[-1]  # the innermost error: when a class the parser was building raised it, it is the reason
    if len(chain) > 1 and not _raised_by_parser(reason) and any(_raised_by_parser(e) for e in chain[:-1]):
        if isinstance(reason, CLIError):
            return str(reason).strip()
        said = " ".join(ln.strip() for ln in str(reason).splitlines() if ln.strip())[:600]
        if isinstance(reason, (ValueError, TypeError)) and said:
            owner = _owner(reason)
            return f"{owner}: {said}" if owner else said
        return user_message(reason)
    if type(err).__name__ == "ArgumentError":
        refused = _refused_option(chain)
        if refused is not None:
            return refused
    lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
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
