"""What a bench checks before any run, beyond its protocol files (:mod:`faircl.bench.spec` checks those, whatever
the options): the classes they and the options name, and the options against each other.

Each problem is one line (a :class:`~faircl.runs.user_error.UserError`: exit status 2) naming the option or the
protocol file and its key, and nothing has run: no run folder is made, no worker forked.

- :func:`check_importable`: the module of a class named by its dotted path (``--method my_method.MyLoss``, a
  protocol's class) imports: a syntax error or an exception its code raises names its file and line;
- :func:`check_bench`: ``--against`` names another method than ``--method``; the datamodule and the baselines of each
  protocol that will run import, are a datamodule and methods, and build with the protocol's arguments; the method
  builds as its runs will (whatever its ``__init__`` raises).
"""

from __future__ import annotations

import importlib
import inspect
import traceback
from typing import Any, Callable

from faircl.bench.runner import MethodSpec, resolve_method
from faircl.bench.spec import Protocol
from faircl.data import DATAMODULES
from faircl.data.base import FairDataModule
from faircl.runs.user_error import UserError

__all__ = ["check_bench", "check_importable"]

#: builds a method as its runs will on a protocol, raising a :class:`UserError` where its class refuses its
#: arguments (the front end's, with the data sizes it stands in for the runs' linked ones)
Build = Callable[[MethodSpec, Protocol], None]


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _raised_at(err: BaseException) -> str:
    """Where ``err`` was raised: ``file, line N`` (of the innermost frame)."""
    frames = traceback.extract_tb(err.__traceback__)
    return f"{frames[-1].filename}, line {frames[-1].lineno}" if frames else "?"


def check_importable(class_path: str, where: str) -> None:
    """Import the module of a dotted ``class_path``: where importing it fails with anything but a missing module (a
    syntax error, an exception its code raises), one line naming ``where``, the file and the line."""
    module = class_path.rpartition(".")[0]
    if not module:
        return
    try:
        importlib.import_module(module)
    except ImportError:
        return  # a module that is not found: the resolver's own line says where it was looked for
    except SyntaxError as err:
        raise UserError(f"bench: {where} {class_path!r}: {err.filename}, line {err.lineno}: SyntaxError: "
                        f"{err.msg}") from None
    except Exception as err:
        raise UserError(f"bench: {where} {class_path!r}: importing {module} raised {type(err).__name__} "
                        f"({_raised_at(err)}): {_one_line(err)}") from None


def _method(name: str, where: str) -> tuple[str, type]:
    """:func:`resolve_method` of a class a protocol or an option names, its one line naming ``where``."""
    check_importable(name, where)
    try:
        return resolve_method(name)
    except UserError as err:  # worded for --method: say which key named it
        raise UserError(str(err).replace(f"--method {name!r}", f"{where} {name!r}", 1)
                        .replace("e.g. --method my_method", "e.g. my_method", 1)) from None


def _built(where: str, cls: type, make: Callable[..., Any], args: tuple[Any, ...] = (),
           kwargs: dict[str, Any] | None = None, reword: bool = True) -> None:
    """``make(*args, **kwargs)`` (building ``cls``), whatever it raises one line naming ``where`` and where it was
    raised; with ``reword=False`` a refusal that ``make`` worded itself stands."""
    try:
        make(*args, **(kwargs or {}))
    except UserError as err:
        cause = err.__context__  # a refusal the builder worded, its own cause suppressed
        if cause is None or not reword:
            raise
        raise UserError(f"bench: {where}: {cls.__name__} refused its arguments: {_one_line(cause)}") from None
    except (ValueError, TypeError) as err:
        raise UserError(f"bench: {where}: {cls.__name__} refused its arguments: {_one_line(err)}") from None
    except Exception as err:
        raise UserError(f"bench: {where}: {cls.__name__}.__init__ raised {type(err).__name__} ({_raised_at(err)}): "
                        f"{_one_line(err)}") from None


def _check_against(method: MethodSpec, against: list[str], protocols: list[Protocol]) -> None:
    """Each ``--against`` names another method than ``--method``: the same class with the same arguments is the
    method itself, and a claim against itself could only read no change."""
    baselines = {name for p in protocols for name in p.baselines}
    given = dict(method.init_args)
    defaults = {n: q.default for n, q in inspect.signature(method.cls).parameters.items()
                if q.default is not q.empty} if method.cls is not None else {}
    same_args = all(n in defaults and defaults[n] == v for n, v in given.items())
    for name in against:
        if name in baselines:
            continue  # a protocol's own baseline: --against runs it as that protocol does
        class_path, _ = _method(name, "--against")
        if class_path == method.class_path and same_args:
            raise UserError(f"bench: --against {name}: that is the method under test (--method "
                            f"{method.class_path}{', ' + str(given) if given else ''}): a method against itself "
                            "reads no change; --against takes another method (a faircl method's name or a class's "
                            "dotted path), or --method with other arguments")


def check_bench(protocols: list[Protocol], method: MethodSpec, against: list[str], build: Build) -> None:
    """Before any run of ``method`` on ``protocols`` (those that will run): ``--against`` names another method; each
    protocol's datamodule and baselines resolve and build with its arguments; the method builds as on the first
    protocol (``build``: the front end's builder). Raises a one-line :class:`UserError` for the first problem."""
    _check_against(method, against, protocols)
    if protocols and method.cls is not None:
        first = protocols[0]
        _built(f"--method {method.class_path} (built as on {first.name}, {first.source})", method.cls, build,
               (method, first), reword=False)
    for p in protocols:
        data_path = p.data["class_path"]
        data = _datamodule(data_path, f"{p.source}: data.class_path")
        _built(f"{p.source}: data ({data_path})", data, data, kwargs=dict(p.data.get("init_args") or {}))
        for name, spec in p.baselines.items():
            key = f"{p.source}: baselines.{name}"
            path, cls = _method(spec["class_path"], f"{key}.class_path")
            _built(f"{key} ({spec['class_path']})", cls, build,
                   (MethodSpec(name, path, dict(spec.get("init_args") or {}), cls), p))


def _datamodule(class_path: str, where: str) -> type:
    """The datamodule class a protocol names: a faircl datamodule (its name is checked with the file) or a dotted
    path to a :class:`~faircl.data.base.FairDataModule` subclass."""
    if "." not in class_path:
        return DATAMODULES[class_path]
    check_importable(class_path, where)
    module, _, attr = class_path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), attr, None)
    except ImportError as err:
        raise UserError(f"bench: {where} {class_path!r}: cannot import {module!r} ({err}); run faircl bench from the "
                        f"folder that holds {module.replace('.', '/')}.py, or put it on PYTHONPATH") from None
    if not (inspect.isclass(cls) and issubclass(cls, FairDataModule)):
        raise UserError(f"bench: {where} {class_path!r}: {module} has no FairDataModule subclass named {attr!r} (a "
                        f"faircl datamodule by its name: {', '.join(sorted(DATAMODULES))})")
    return cls
