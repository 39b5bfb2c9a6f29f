"""What the user gave on the command line and in config files, read before LightningCLI parses it, and checked
against the data and a checkpoint: the linked arguments, an injected optimiser's learning rate, the method's options
given next to a checkpoint."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from faircl.runs.config_files import option_value
from faircl.runs.user_error import UserError

LINKED = ("num_classes", "num_groups", "input_dim")


def linked_values_given(argv: list[str], configs: list[tuple[Path, dict[str, Any]]]) -> dict[str, tuple[Any, str]]:
    """The values the user gave for the arguments the CLI links from the data into the model (``num_classes``,
    ``num_groups``, ``input_dim``): ``{name: (value, where)}``, the command line winning over configs."""
    given: dict[str, tuple[Any, str]] = {}
    for path, cfg in configs:
        node = cfg.get("model") if isinstance(cfg, dict) else None
        if isinstance(node, dict):
            init = node.get("init_args") if isinstance(node.get("init_args"), dict) else node
            for name in LINKED:
                if name in init and init[name] is not None:
                    given[name] = (init[name], f"model.init_args.{name}: {init[name]} in {str(path)!r}")
    for name in LINKED:
        for key in (f"model.init_args.{name}", f"model.{name}"):
            value = option_value(argv, key)
            if value is not None:
                given[name] = (value, f"--{key} {value}")
    return given


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


def sets_optimizer_lr(argv: list[str], configs: list[dict[str, Any]]) -> bool:
    """Whether the command line or a config sets the learning rate of an injected ``--optimizer``."""
    if any(re.match(r"--optimizer(\.init_args)?\.lr(=|$)", a) for a in argv):
        return True
    for cfg in configs:
        node = cfg.get("optimizer") if isinstance(cfg, dict) else None
        if isinstance(node, dict) and ("lr" in node or "lr" in (node.get("init_args") or {})):
            return True
    return False


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


def given_model_options(argv: list[str]) -> list[str]:
    """The method's arguments set on the command line, as dotted paths: ``--model.init_args.encoder_kwargs.hidden_dim
    32`` → ``encoder_kwargs.hidden_dim``; ``--model.lr=0.1`` → ``lr``."""
    keys = []
    for arg in argv:
        if not arg.startswith("--model."):
            continue
        key = arg[len("--model."):].split("=", 1)[0]
        key = key[len("init_args."):] if key.startswith("init_args.") else key
        if key and key not in ("help", "class_path", "dict_kwargs") and not key.startswith("dict_kwargs."):
            keys.append(key)
    return keys
