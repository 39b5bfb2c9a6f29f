"""The user's error: :class:`UserError` and the one line that tells the user what is wrong.

Every ``faircl`` command and every run ends a problem the user can fix (a usage, config, data or checkpoint error, or a
path the user may not write) with exit status 2 and one line on stderr: :func:`is_usage_error` tells such errors from
failures of faircl's own (exit status 1, with the traceback) and :func:`user_message` writes the line.
"""

from __future__ import annotations

import argparse
import errno
import typing
from types import TracebackType, UnionType
from typing import Any

__all__ = ["UserError", "is_usage_error", "user_message"]


class UserError(Exception):
    """A usage or configuration error: printed as one line, exit status 2."""


#: what an operating system says when the user may not write (or read) a path
_DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)


def _is_denied(err: BaseException) -> bool:
    return isinstance(err, PermissionError) or (isinstance(err, OSError) and err.errno in _DENIED)


def is_usage_error(err: BaseException) -> bool:
    """Whether ``err`` is the user's to fix (exit status 2, one line): a usage, config, data or checkpoint error, or a
    path the user may not write."""
    if isinstance(err, (UserError, ValueError, TypeError, FileNotFoundError, NotADirectoryError)) or _is_denied(err):
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
    exception and those it was raised from: the message of a :class:`UserError`; for a class that refused its
    arguments while the parser built it, the class and its own message (a method's or datamodule's check, e.g.
    "BiasedFeatures: batch_size must be >= 1, got 0", not the parser's union wrapper around it); for a value the
    parser refused, the option, its value and what was expected; for a path the user may not write, the path.
    Shared by every command (``faircl sweep`` and ``faircl bench`` too)."""
    if isinstance(err, UserError):
        return str(err).strip()
    if _is_denied(err) and isinstance(err, OSError):
        path = err.filename if err.filename is not None else ""
        return (f"{str(path)!r}: {err.strerror or 'permission denied'}; choose a folder you may write to "
                "(--trainer.default_root_dir DIR, --out DIR) or change its permissions")
    chain = _chain(err)
    reason = chain[-1]  # the innermost error: when a class the parser was building raised it, it is the reason
    if len(chain) > 1 and not _raised_by_parser(reason) and any(_raised_by_parser(e) for e in chain[:-1]):
        if isinstance(reason, UserError):
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
