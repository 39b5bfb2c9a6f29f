"""Which inputs a method can train on, and the encoder that ``encoder="auto"`` builds for a datamodule's input.

A :class:`~faircl.data.base.FairDataModule` declares what its ``x`` holds (``input_kind``: ``features``, ``tokens``,
``text``, ``images`` or ``tuples``). A method declares what it accepts with two class attributes of
:class:`~faircl.methods.base.FairModule`:

- ``input_kinds``: the input kinds it can train on (CCD: counterfactual ``tuples`` only; the others: everything
  an encoder reads);
- ``requires_views``: it trains on two augmented views (the datamodule's ``two_views=True``).

The model is built once, in its constructor, for the ``input_kind`` it is given (the ``faircl`` command links it
from the datamodule). A pair that does not fit fails with a :class:`NotApplicableError` whose message starts with
``not applicable:`` and names both sides: at construction when ``input_kind`` is given, else when the trainer sets
the model up with its datamodule. Nothing is rebuilt behind the user's back. The encoder ``"auto"`` is the default
encoder of the input kind (:data:`faircl.models.DEFAULT_ENCODERS`); the resolved name is written to ``hparams`` so
that a checkpoint rebuilds the same modules.
"""

from __future__ import annotations

from typing import Any

from faircl.data.base import FairDataModule
from faircl.models import check_encoder_input, default_encoder

__all__ = ["NotApplicableError", "TRAINABLE_KINDS", "check_applicable", "check_datamodule", "encoder_kind",
           "resolve_encoder"]

#: Input kinds a method with an encoder over ``x`` trains on (every kind but counterfactual tuples).
TRAINABLE_KINDS = ("features", "tokens", "text", "images")


class NotApplicableError(ValueError):
    """A method cannot train on a datamodule (wrong kind of input, or two views needed and not provided)."""


def encoder_kind(input_kind: str) -> str:
    """What the encoder reads for a datamodule's ``input_kind``: every version of a counterfactual tuple is a text."""
    return "text" if input_kind == "tuples" else input_kind


def guessed_kind(input_dim: int) -> str:
    """The input kind assumed without ``input_kind``: feature vectors when ``input_dim >= 1``, else texts."""
    return "features" if input_dim >= 1 else "text"


def resolve_encoder(method: type, encoder: str, input_kind: str | None, input_dim: int) -> str:
    """The encoder name a ``method`` (class) builds for ``encoder`` on ``input_kind`` inputs.

    ``"auto"`` gives the default encoder of ``input_kind`` (of :func:`guessed_kind` when it is ``None``, e.g. a model
    built before a datamodule is chosen; :func:`check_datamodule` then verifies the guess at set-up).

    Raises:
        NotApplicableError: ``input_kind`` is not one of ``method.input_kinds``.
        ValueError: an explicit encoder that cannot read ``input_kind`` inputs, naming both.
    """
    if input_kind is not None:
        kinds = getattr(method, "input_kinds", TRAINABLE_KINDS)
        if input_kind not in kinds:
            raise NotApplicableError(f"not applicable: {method.__name__} trains on {' / '.join(kinds)} inputs, but "
                                     f"input_kind={input_kind!r}")
    if encoder == "auto":
        return default_encoder(encoder_kind(input_kind if input_kind is not None else guessed_kind(input_dim)))
    if input_kind is not None:
        check_encoder_input(encoder, encoder_kind(input_kind), source=f"input_kind={input_kind!r}")
    return encoder


def check_applicable(method: type, dm: FairDataModule) -> None:
    """:class:`NotApplicableError` when the capabilities of ``method`` (a class) do not fit the datamodule ``dm``."""
    name, data, kind = method.__name__, type(dm).__name__, dm.input_kind
    kinds = getattr(method, "input_kinds", None)
    if kinds is not None and kind not in kinds:
        raise NotApplicableError(f"not applicable: {name} trains on {' / '.join(kinds)} inputs, but {data} "
                                 f"emits {kind!r} inputs")
    if getattr(method, "requires_views", False) and not getattr(dm, "two_views", False):
        raise NotApplicableError(f"not applicable: {name} trains on two augmented views, but {data} has "
                                 "two_views=False; set it to true (`--data.init_args.two_views true`)")


def check_encoder_for(method: type, encoder: str, dm: FairDataModule) -> str:
    """``dm.input_kind`` once ``method`` (a class) with ``encoder`` is known to train on ``dm``; the check the
    ``faircl`` command runs before it builds the model with the datamodule's ``input_kind``.

    Raises:
        NotApplicableError: see :func:`check_applicable`.
        ValueError: an explicit encoder that cannot read the datamodule's input, naming both.
    """
    check_applicable(method, dm)
    if encoder != "auto":
        check_encoder_input(encoder, encoder_kind(dm.input_kind), source=type(dm).__name__)
    return dm.input_kind


def check_datamodule(module: Any, dm: FairDataModule | None) -> None:
    """Check a built ``module`` against the datamodule it is about to train on (``FairModule.setup``).

    A module built without ``input_kind`` records the datamodule's kind in ``hparams["input_kind"]`` when its
    encoder reads it, so its checkpoints say what they were trained on.

    Raises:
        NotApplicableError: the method cannot train on this datamodule, or the model was built for another input
            kind (an ``input_kind`` that differs, or ``encoder="auto"`` resolved without ``input_kind`` to another
            kind's encoder); the message names both sides and the argument to pass.
        ValueError: an explicit encoder that cannot read the datamodule's input, naming both.
    """
    if dm is None:
        return
    method, data, kind = type(module).__name__, type(dm).__name__, dm.input_kind
    check_applicable(type(module), dm)
    declared = module.hparams.get("input_kind")
    if declared is not None and declared != kind:
        raise NotApplicableError(f"not applicable: {method} was built for input_kind={declared!r} but {data} emits "
                                 f"{kind!r} inputs; build it with input_kind={kind!r} (the datamodule's input_kind)")
    name = module.hparams.get("encoder")
    if declared is None and module.hparams_initial.get("encoder") == "auto":
        wanted = default_encoder(encoder_kind(kind))
        if name != wanted:
            guess = guessed_kind(int(module.hparams.get("input_dim", 0)))
            raise NotApplicableError(
                f"not applicable: {method} was built for {guess!r} inputs (encoder='auto' without input_kind chose "
                f"{name!r}) but {data} emits {kind!r} inputs; build it with input_kind={kind!r} "
                "(e.g. input_kind=datamodule.input_kind), which builds the encoder " + repr(wanted))
    elif isinstance(name, str):
        check_encoder_input(name, encoder_kind(kind), source=data)
    if declared is None:
        module.hparams["input_kind"] = kind
