"""The names a run's command line chooses, checked once jsonargparse has parsed it: the method and the datamodule
(registered, or importable subclasses), a checkpoint's method against the requested one, the accelerator."""

from __future__ import annotations

import importlib
from typing import Any

import torch

import faircl.data
from faircl.data.base import FairDataModule
from faircl.methods import METHODS
from faircl.methods.base import FairModule
from faircl.runs.checkpoint_lookup import short_name
from faircl.runs.user_error import UserError


def datamodules() -> dict[str, type[FairDataModule]]:
    """The selectable datamodules by class name (``faircl.data.DATAMODULES``)."""
    registry = getattr(faircl.data, "DATAMODULES", None)
    return dict(registry) if registry is not None else faircl.data.available_datamodules()


def import_class(path: str, base: type, kind: str) -> type:
    module, _, name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise UserError(f"cannot import {kind} {path!r}: {err} (is its package on the Python path?)") from err
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise UserError(f"{kind} {path!r} is not a subclass of {base.__module__}.{base.__name__}")
    return cls


def check_name(key: str, value: str) -> None:
    """Fail, listing the choices, when the method (``key`` ``model``) or datamodule (``data``) ``value`` is neither a
    registered class (by name, or faircl's import path of it) nor an importable ``FairModule`` / ``FairDataModule``
    subclass by import path; a base that registered classes share (``TextDataModule``) is refused."""
    choices = {"model": METHODS, "data": datamodules()}[key]
    kind = "method" if key == "model" else "datamodule"
    if value in choices or (value.startswith("faircl.") and value.rsplit(".", 1)[-1] in choices):
        return
    if "." in value:
        cls = import_class(value, FairModule if key == "model" else FairDataModule, kind)
        if not any(c is not cls and issubclass(c, cls) for c in choices.values()):
            return  # a base that registered classes share is not one to run (TextDataModule, FairModule)
    name = value.rsplit(".", 1)[-1]
    raise UserError(f"unknown {kind} {name!r} for --{key}; available: {', '.join(sorted(choices))}, or an import "
                   f"path such as mypkg.mymodule.My{'Method' if key == 'model' else 'Data'}")


def same_method(ckpt: str, wanted: str, stored: str | None) -> None:
    """Refuse a checkpoint of another method than the requested one."""
    if stored is not None and short_name(wanted) != short_name(stored):
        raise UserError(f"--ckpt_path {ckpt} holds a {short_name(stored)} model, but the method requested is "
                       f"{short_name(wanted)}: pass a checkpoint of a {short_name(wanted)} run, or --model "
                       f"{short_name(stored)} (or leave --model out to use the checkpoint's method)")


def check_accelerator(trainer: Any) -> None:
    """Refuse a GPU accelerator where no GPU is available, before anything is built."""
    value = trainer.get("accelerator") if trainer is not None else None
    if isinstance(value, str) and value.lower() in ("gpu", "cuda") and not torch.cuda.is_available():
        raise UserError(f"--trainer.accelerator {value}: no GPU is available to this process "
                       "(torch.cuda.is_available() is False); use --trainer.accelerator cpu (or auto)")
