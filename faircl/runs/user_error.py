"""The user's error: :class:`UserError` and the one line that tells the user what is wrong.

Every ``faircl`` command and every run ends a problem the user can fix (a usage, config, data or checkpoint error, or a
path the user may not write) with exit status 2 and one line on stderr: :func:`is_usage_error` tells such errors from
failures of faircl's own (exit status 1, with the traceback) and :func:`user_message` writes the line.
"""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

__all__ = ["ParserRefusal", "UserError", "is_usage_error", "parser_refusal", "user_message"]


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


#: the lines of a jsonargparse error that only say how it tried (the union it tried, the value's Python type)
_TRIED = ("Does not validate against", "Subtypes:", "Errors:", "Given value type:", "- Expected a path but",
          "Expected a path but")


def _expected(line: str) -> str | None:
    """``Expected a <class 'int'>`` → ``int``; ``Expected a typing.Literal['a', 'b']`` → ``one of 'a', 'b'``."""
    match = re.match(r"-?\s*Expected a (?:<class '([\w.]+)'>|typing\.Literal\[(.*)\])", line)
    if match is None:
        return None
    name, choices = match.groups()
    if choices is not None:
        return f"one of {choices}"
    return "null" if name == "NoneType" else name.rsplit(".", 1)[-1]


@dataclass
class ParserRefusal:
    """What a parser's error says was refused: ``option`` (dotted, ``model.init_args.lr``), the ``value`` given,
    what was ``expected`` (type names, in the parser's order), the class whose arguments were read (``owner``), and
    whether the option is one that class does not take (``unknown``) or a class name that resolves to no class
    (``no_class``)."""

    option: str
    value: str | None = None
    expected: list[str] = field(default_factory=list)
    owner: str | None = None
    unknown: bool = False
    no_class: bool = False
    reason: str | None = None

    def line(self) -> str:
        if self.unknown:
            owner = self.owner.rsplit(".", 1)[-1] if self.owner else "the chosen class"
            top = self.option.split(".", 1)[0]
            return (f"--{self.option}{' ' + self.value if self.value is not None else ''}: not accepted by {owner} "
                    f"(no such argument; its arguments: faircl fit --{top}.help {owner})")
        if self.reason:
            return f"--{self.option} {self.value}: {self.reason}"
        if self.no_class:
            return f"--{self.option} {self.value}: no class of that name or import path"
        # null last: the union's order differs between jsonargparse versions
        expected = " or ".join(sorted(dict.fromkeys(e for e in self.expected if e), key=lambda e: e == "null"))
        return f"--{self.option} {self.value}: not a valid value" + (f" (expected {expected})" if expected else "")


def parser_refusal(err: BaseException) -> ParserRefusal | None:
    """Read a jsonargparse ``ArgumentError`` (jsonargparse 4.39 to 4.53): the option it names, the value given and
    what was expected. ``None`` when the error names no option (an unrecognized argument, a missing one: its own
    line says it).

    The message nests one ``Parser key "K":`` per level (``- Problem with given class_path 'C':`` between a class's
    key and its arguments' keys); the innermost key is the option refused and the lines after it say why."""
    if type(err).__name__ != "ArgumentError":
        return None
    keys: list[str] = []
    refusal: ParserRefusal | None = None
    depth = -1  # the indentation of the innermost key: lines indented less are about an outer level
    for raw in str(err).splitlines():
        line, indent = raw.strip(), len(raw) - len(raw.lstrip())
        if not line or (refusal is not None and indent <= depth and not line.startswith("- Problem with")):
            continue
        key = re.match(r'Parser key "([^"]+)":\s*(.*)', line)
        cls = re.match(r"- Problem with given class_path '([^']+)':", line)
        unknown = re.match(r"(?:- )?(?:Validation failed: )?(?:Option|Key) '([^']+)' is not (?:accepted|expected)",
                           line)  # 4.40 and later | 4.39
        if key:
            keys.append(key.group(1))
            refusal, depth = ParserRefusal(".".join(keys), owner=refusal.owner if refusal else None), indent
            line = key.group(2)
        elif cls:
            keys.append("init_args")
            refusal = ParserRefusal(".".join(keys), owner=cls.group(1))
            continue
        elif unknown and refusal is not None:
            keys.append(unknown.group(1))
            refusal = ParserRefusal(".".join(keys), owner=refusal.owner, unknown=True)
            continue
        if refusal is None or not line or line.startswith(_TRIED):
            continue
        got, given = re.search(r"Got value: (.*)$", line), re.match(r"Given value: (.*)$", line)
        if (got or given) and refusal.value is None:
            value = (got or given).group(1)
            nested = re.fullmatch(r"NestedArg\(key='[^']*', val=(.*)\)", value)  # --model.init_args.X V
            refusal.value = nested.group(1).strip("'\"") if nested else value
        if refusal.option.endswith(".init_args") and not line.startswith("- "):  # the class itself failed
            refusal = ParserRefusal(refusal.option.rsplit(".", 2)[0], value=refusal.owner, reason=line)
            keys = keys[:-1]
        elif line.lstrip("- ").startswith(("Expected a dot import path string", "Import path does not correspond")):
            refusal.no_class = not refusal.option.endswith("init_args")
        elif not given:
            refusal.expected.append(_expected(line) or "")
    if refusal is None or refusal.option.endswith("init_args"):
        return None
    refusal.no_class = refusal.no_class and not [e for e in refusal.expected if e and e != "null"]
    named = re.search(r"'class_path': '([^']+)'", refusal.value or "")  # a class given as a mapping
    if refusal.no_class and named:
        refusal.value = named.group(1)
    return refusal


def _class_refusal(err: BaseException) -> str | None:
    """For a class the parser built, whose own check refused its arguments, and whose error the parser folded into its
    union message rather than chaining it (jsonargparse before 4.40): ``Owner: its own message``."""
    text = str(err)
    if not text.startswith("Does not validate against any of the Union subtypes"):
        return None
    own = [ln.strip()[2:] for ln in text.splitlines()
           if ln.strip().startswith("- ") and not ln.strip().startswith(("- Expected a", "- Problem with"))]
    owner = re.search(r"class_path='([^']+)'", text)
    if len(own) != 1:
        return None
    return f"{owner.group(1).rsplit('.', 1)[-1]}: {own[0]}" if owner else own[0]


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
    refused = parser_refusal(err)
    if refused is not None:
        return refused.line()
    built = _class_refusal(err) if _raised_by_parser(err) else None
    if built is not None:
        return built
    lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
    first = " ".join(lines[:2])[:600] if lines else ""
    return f"{type(err).__name__}: {first}" if type(err).__name__ != "MisconfigurationException" else first
