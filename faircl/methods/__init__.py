"""Methods: LightningModules built on :class:`FairModule`. ``from faircl.methods import ConFair`` works for all."""

from faircl.methods.base import FairModule
from faircl.methods.ce import CE


def __getattr__(name: str):
    import sys

    from faircl._lazy import find_class

    return find_class(sys.modules[__name__], name)


def available_methods() -> dict[str, type]:
    """Every FairModule subclass of the package, by class name."""
    import sys

    from faircl._lazy import import_all, subclasses

    import_all(sys.modules[__name__])
    return subclasses(FairModule)


__all__ = ["FairModule", "CE", "available_methods"]
