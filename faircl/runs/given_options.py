"""What the user gave in config files and on the command line, told apart and checked against the data and a
checkpoint: the linked arguments, an injected optimiser's learning rate, the method's options given next to a
checkpoint. Read from jsonargparse's own parse without the defaults (:class:`GivenOptions`), never from argv."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection

from faircl.runs.config_files import read_config
from faircl.runs.user_error import UserError

LINKED = ("num_classes", "num_groups", "input_dim")
#: the sections whose value is a class: in a config file, ``model: {lr: 0.1}`` means ``model.init_args.lr``
CLASS_SECTIONS = ("model", "data", "optimizer", "lr_scheduler")


@dataclass
class GivenOptions:
    """What a command's config files and options give: ``namespace`` is jsonargparse's parse of the command line
    without the defaults (one subcommand's node), ``files`` the config files it read, in order. A value is *on the
    command line* when no config file gives that value for it."""

    namespace: Any
    files: list[Path]

    @classmethod
    def of(cls, node: Any, drop: Collection[str] = ()) -> GivenOptions:
        """The options in ``node``, less the top-level keys ``drop`` (a command's own, beside the run's)."""
        if drop:
            node = node.clone()
            for key in drop:
                node.pop(key, None)
        return cls(node, [Path(str(f)) for f in (node.get("config") or []) if f is not None])  # None: an inline one

    def leaves(self) -> dict[str, Any]:
        """Every value given, by dotted key (``model.init_args.encoder_kwargs.hidden_dim``)."""
        return {k: v for k, v in argument_leaves(self.namespace).items() if k != "config"}

    def in_files(self) -> dict[str, tuple[Any, Path]]:
        """The values the config files give, by dotted key, with the file (a later file wins)."""
        out: dict[str, tuple[Any, Path]] = {}
        for path in self.files:
            cfg = dict(read_config(path))
            for key in CLASS_SECTIONS:
                node = cfg.get(key)
                if isinstance(node, dict) and "init_args" not in node:
                    cfg[key] = {"class_path": node.get("class_path"),
                                "init_args": {k: v for k, v in node.items() if k != "class_path"}}
            out.update({k: (v, path) for k, v in argument_leaves(cfg).items()})
        return out

    def command_line(self) -> dict[str, Any]:
        """The values given on the command line (by dotted key): given, and not the value a config file gives."""
        files = self.in_files()
        return {k: v for k, v in self.leaves().items() if k not in files or not _same(k, files[k][0], v)}

    def arguments(self) -> list[str]:
        """Options that give exactly what this command line gives: ``--config`` with every value given, its config
        files' included (inlined, so a file edited later changes nothing), as one JSON mapping, which jsonargparse
        reads as it reads a config file."""
        values = without_files(self.namespace.as_dict())
        return ["--config", json.dumps(values, default=str)] if values else []

    def model_options(self) -> list[str]:
        """The method's arguments set on the command line, as dotted paths: ``--model.init_args.encoder_kwargs.hidden_dim
        32`` → ``encoder_kwargs.hidden_dim``; ``--model.lr=0.1`` → ``lr``."""
        prefix = "model.init_args."
        return [k[len(prefix):] for k in self.command_line() if k.startswith(prefix)]

    def linked(self) -> dict[str, tuple[Any, str]]:
        """The values given for the arguments the CLI links from the data into the model (``num_classes``,
        ``num_groups``, ``input_dim``): ``{name: (value, where)}``."""
        leaves, files, cli = self.leaves(), self.in_files(), self.command_line()
        given: dict[str, tuple[Any, str]] = {}
        for name in LINKED:
            key = f"model.init_args.{name}"
            if leaves.get(key) is None:
                continue
            value = leaves[key]
            given[name] = (value, f"--{key} {value}" if key in cli else f"{key}: {value} in {str(files[key][1])!r}")
        return given

    def optimizer_lr(self) -> bool:
        """Whether the command line or a config sets the learning rate of an injected ``--optimizer``."""
        return "optimizer.init_args.lr" in self.leaves() or "optimizer.lr" in self.leaves()


def without_files(node: dict[str, Any]) -> dict[str, Any]:
    """A parsed config (``Namespace.as_dict()``) less jsonargparse's notes of the config files it read (``config``, ``__path__``)."""
    return {k: without_files(v) if isinstance(v, dict) else v for k, v in node.items() if k not in ("config", "__path__")}


def _same(key: str, in_file: Any, parsed: Any) -> bool:
    """Whether a config file's value of ``key`` is the parsed one (a class by name or by its import path)."""
    if key.endswith("class_path"):
        return str(in_file).rsplit(".", 1)[-1] == str(parsed).rsplit(".", 1)[-1]
    return in_file == parsed


def check_linked(given: dict[str, tuple[Any, str]], data: Any, origin: str = "") -> None:
    """Refuse a linked argument whose given value differs from the datamodule's (``UserError`` naming both)."""
    for name, (value, where) in given.items():
        have = getattr(data, name, None)
        try:
            same = have is None or int(value) == int(have)
        except (TypeError, ValueError):
            same = False
        if not same:
            raise UserError(f"{where}{origin} disagrees with the data: {type(data).__name__} has {name}={have}, and the "
                           f"model takes {name} from the data; leave it out, or change the data")


def argument_leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    """``{"encoder_kwargs.hidden_dim": 64, "lr": 0.001, ...}``: the leaves of a method's arguments (a Namespace),
    descending into dictionaries."""
    items = node.as_dict().items() if hasattr(node, "as_dict") else (node or {}).items()
    out: dict[str, Any] = {}
    for key, value in items:
        if isinstance(value, dict) and value:
            out.update(argument_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def set_argument_leaf(init: Any, leaf: str, value: Any) -> None:
    top, *rest = leaf.split(".")
    if not rest:
        init[top] = value
        return
    tree = copy.deepcopy(dict(init[top] or {}))
    node = tree
    for key in rest[:-1]:
        node = node.setdefault(key, {})
    node[rest[-1]] = value
    init[top] = tree
