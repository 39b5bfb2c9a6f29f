"""Which inputs a method can train on, and the encoder that follows the datamodule's ``input_kind``.

A :class:`~faircl.data.base.FairDataModule` declares what its ``x`` holds (``input_kind``: ``features``, ``tokens``,
``text``, ``images`` or ``tuples``). A method declares what it accepts with two class attributes of
:class:`~faircl.methods.base.FairModule`:

- ``input_kinds``: the input kinds it can train on (CCD: counterfactual ``tuples`` only; the others: everything
  an encoder reads);
- ``requires_views``: it trains on two augmented views (the datamodule's ``two_views=True``).

A pair that does not fit fails when the trainer sets the model up, with a :class:`NotApplicableError` whose message
starts with ``not applicable:``. The encoder ``"auto"`` is the default encoder of the input kind
(:data:`faircl.models.DEFAULT_ENCODERS`); the resolved name is written to ``hparams`` so that a checkpoint rebuilds
the same modules.
"""

from __future__ import annotations

from typing import Any

from faircl.data.base import FairDataModule
from faircl.models import check_encoder_input, default_encoder

__all__ = ["InputCapabilities", "NotApplicableError", "TRAINABLE_KINDS", "encoder_kind", "match_datamodule",
           "resolve_encoder"]

#: Input kinds a method with an encoder over ``x`` trains on (every kind but counterfactual tuples).
TRAINABLE_KINDS = ("features", "tokens", "text", "images")

# Lightning's per-run attributes of a module, kept when the module is rebuilt for its datamodule.
_RUNTIME_ATTRS = ("_trainer", "_fabric", "_fabric_optimizers", "_current_fx_name", "_device", "_dtype",
                  "_compiler_ctx", "_jit_is_scripting", "_example_input_array")


class NotApplicableError(ValueError):
    """A method cannot train on a datamodule (wrong kind of input, or two views needed and not provided)."""


class InputCapabilities:
    """What a method can train on (a base of :class:`~faircl.methods.base.FairModule`), checked at set-up against
    the attached datamodule by :func:`match_datamodule`; override the attributes in a method class."""

    #: input kinds the method trains on
    input_kinds: tuple[str, ...] = TRAINABLE_KINDS
    #: the method trains on two augmented views (``x2``; the datamodule's ``two_views=True``)
    requires_views: bool = False

    def setup(self, stage: str) -> None:
        match_datamodule(self, getattr(self, "attached_datamodule", None))
        super().setup(stage)


def encoder_kind(input_kind: str) -> str:
    """What the encoder reads for a datamodule's ``input_kind``: every version of a counterfactual tuple is a text."""
    return "text" if input_kind == "tuples" else input_kind


def resolve_encoder(module: Any, encoder: str, input_kind: str | None, input_dim: int) -> str:
    """The encoder name ``module`` builds in ``__init__``, recorded in ``module.hparams["encoder"]``.

    ``"auto"`` with a known ``input_kind`` gives that kind's default encoder. Without ``input_kind`` (a plain
    ``Trainer`` before the datamodule is attached) it builds the feature MLP (``input_dim >= 1``) and
    :func:`match_datamodule` rebuilds the model for the datamodule's kind at set-up if that guess was wrong.
    An explicit encoder and a known ``input_kind`` must fit (``ValueError`` naming both).
    """
    if encoder == "auto":
        kind = input_kind if input_kind is not None else ("features" if input_dim >= 1 else "text")
        name = default_encoder(encoder_kind(kind))
        module.hparams["encoder"] = name
        return name
    if input_kind is not None:
        check_encoder_input(encoder, encoder_kind(input_kind), source=f"input_kind={input_kind!r}")
    return encoder


def check_applicable(module: Any, dm: FairDataModule) -> None:
    """:class:`NotApplicableError` when ``module``'s capabilities do not fit the datamodule ``dm``."""
    method, data, kind = type(module).__name__, type(dm).__name__, dm.input_kind
    kinds = getattr(module, "input_kinds", None)
    if kinds is not None and kind not in kinds:
        raise NotApplicableError(f"not applicable: {method} trains on {' / '.join(kinds)} inputs, but {data} "
                                 f"emits {kind!r} inputs")
    if getattr(module, "requires_views", False) and not getattr(dm, "two_views", False):
        raise NotApplicableError(f"not applicable: {method} trains on two augmented views, but {data} has "
                                 "two_views=False; set it to true (`--data.init_args.two_views true`)")


def match_datamodule(module: Any, dm: FairDataModule | None) -> None:
    """Check ``module`` against the attached datamodule and make its encoder follow ``dm.input_kind``.

    Raises:
        NotApplicableError: the method cannot train on this datamodule (see :func:`check_applicable`).
        ValueError: an explicit encoder or ``input_kind`` that does not fit the datamodule's input, naming both.
    """
    if dm is None:
        return
    check_applicable(module, dm)
    kind, data = dm.input_kind, type(dm).__name__
    declared = module.hparams.get("input_kind")
    if declared is not None and declared != kind:
        raise ValueError(f"{type(module).__name__} was built for input_kind={declared!r} but {data} emits {kind!r} "
                         "inputs; build it with the datamodule's input_kind")
    name = module.hparams.get("encoder")
    if module.hparams_initial.get("encoder") == "auto" and declared is None:
        if name != default_encoder(encoder_kind(kind)):
            _rebuild(module, kind)
        module.hparams["input_kind"] = kind
        return
    if isinstance(name, str):
        check_encoder_input(name, encoder_kind(kind), source=data)


def _rebuild(module: Any, input_kind: str) -> None:
    """Re-run ``module``'s constructor for ``input_kind`` and take over the fresh modules, buffers and attributes."""
    old = dict(module.hparams)
    args = {k: v for k, v in old.items() if not k.startswith("_")}
    args.update(encoder="auto", input_kind=input_kind)
    fresh = type(module)(**args)
    keep = {k: module.__dict__[k] for k in _RUNTIME_ATTRS if k in module.__dict__}
    module.__dict__.update(fresh.__dict__)
    module.__dict__.update(keep)
    for k, v in old.items():  # e.g. the CLI's class path
        if k.startswith("_"):
            module._hparams[k] = v
            module._hparams_initial[k] = v
