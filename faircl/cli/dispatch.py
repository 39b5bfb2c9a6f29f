"""The ``faircl`` command line: dispatch, help, version and exit status.

``faircl configs``, ``--help`` and ``--version`` answer without importing torch or Lightning; the training commands
(``fit``, ``validate``, ``test``, ``predict``) run :mod:`faircl.runs.lightning_cli`, ``export`` :mod:`faircl.runs.outputs` and
``findml`` :mod:`faircl.eval.findml`.

Exit status: 0 on success, 2 on a usage, config, data or checkpoint error (the problem in one line on stderr; the
traceback with ``--debug`` or ``FAIRCL_DEBUG=1``), 1 on any other failure (with its traceback).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import signal
import sys
import traceback
from typing import Any

from faircl import __version__
from faircl.runs.config_files import read_config, resolve_config, shipped_configs
from faircl.runs.user_error import UserError, is_usage_error, user_message
from faircl.runs.ranks import end_ranks

TRAINING = ("fit", "validate", "test", "predict")
#: sub-commands served by their own module, whose function ``<name>(argv) -> int`` parses its own arguments
#: (dispatched by name when the module is installed; ``faircl.bench`` sits above this layer and is never imported here)
TOOLS = {"sweep": "faircl.cli.sweep", "compare": "faircl.cli.compare", "bench": "faircl.cli.bench"}

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
    from faircl.runs import checkpoint_lookup, outputs  # deferred: torch and Lightning, only for this command

    ckpt = opts.ckpt_path
    if ckpt in ("best", "last"):
        ckpt = str(checkpoint_lookup.find_checkpoint(opts.root, ckpt))
    path = outputs.export_encoder(ckpt, opts.out, overwrite=opts.overwrite)
    print(f"encoder of {ckpt} exported to {path}")


def _findml(argv: list[str]) -> None:
    """``faircl findml``: the finDML report; the config may be a shipped name, the checkpoint is checked first."""
    from faircl.eval import findml  # deferred: torch and scikit-learn, only for this command

    opts = findml.parser(config_type=resolve_config).parse_args(argv)
    # a missing, corrupt or unsafe file, or a checkpoint of another method than the config's: one line, before any
    # data is read
    from faircl.runs.checkpoint_lookup import checkpoint_class, checkpoint_dict, short_name  # deferred: torch
    stored = short_name(checkpoint_class(checkpoint_dict(opts.ckpt)))
    wanted = short_name(read_config(opts.config).get("model"))
    if wanted and stored and wanted != stored:
        raise UserError(f"--ckpt {opts.ckpt} holds a {stored} model, but --config {opts.config} is a config of "
                       f"{wanted}: pass a config of {stored} (`faircl configs` lists them), or a checkpoint of {wanted}")
    findml.run(opts)


def _train(argv: list[str]) -> None:
    from faircl.runs.lightning_cli import run_cli  # deferred: torch and Lightning, only for the training commands
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
        from faircl.runs.callbacks import interruption  # deferred: torch and Lightning

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


def _restore_ctrl_c() -> None:
    """Give Ctrl-C back: Lightning ignores SIGINT for the rest of the process after its graceful shutdown, which would
    leave a notebook (or any caller of :func:`main`) and every process it starts later unable to be interrupted."""
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: signal handlers belong to the main thread
        pass


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
            raise UserError(f"unknown command {command!r}; choose one of fit, validate, test, predict, configs, "
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
