"""Lazy access to every class defined in the modules of a package (used by ``faircl.methods`` and ``faircl.data``)."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def import_all(package: ModuleType) -> list[ModuleType]:
    """Import every (non-private) module of ``package`` and return them."""
    mods = []
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("_"):
            mods.append(importlib.import_module(f"{package.__name__}.{info.name}"))
    return mods


def subclasses(base: type) -> dict[str, type]:
    """All concrete subclasses of ``base`` defined so far, by class name.

    Private classes (``_Name``) and shared bases that set ``_abstract = True`` in their own body (their subclasses
    implement a hook) are left out; the subclasses of either are listed.
    """
    out: dict[str, type] = {}
    stack = [base]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if not (sub.__name__.startswith("_") or sub.__dict__.get("_abstract", False)):
                out[sub.__name__] = sub
            stack.append(sub)
    return out


def find_class(package: ModuleType, name: str):
    """Find class ``name`` in any module of ``package`` (raises AttributeError if absent)."""
    for mod in import_all(package):
        obj = getattr(mod, name, None)
        if isinstance(obj, type) and obj.__module__ == mod.__name__:
            return obj
    raise AttributeError(f"module {package.__name__!r} has no attribute {name!r}")
