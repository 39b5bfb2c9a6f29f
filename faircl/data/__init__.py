"""DataModules, datasets, samplers and augmentations. ``from faircl.data import HateSpeech`` works for all."""

from faircl.data.base import DataError, FairDataModule, FairDataset, encode_groups
from faircl.data.synthetic import BiasedFeatures, ColoredDigits, SynthBios


def __getattr__(name: str):
    import sys

    from faircl._lazy import find_class

    return find_class(sys.modules[__name__], name)


def available_datamodules() -> dict[str, type]:
    """Every FairDataModule subclass of the package, by class name."""
    import sys

    from faircl._lazy import import_all, subclasses

    import_all(sys.modules[__name__])
    return subclasses(FairDataModule)


__all__ = ["DataError", "FairDataModule", "FairDataset", "encode_groups", "BiasedFeatures", "ColoredDigits",
           "SynthBios", "available_datamodules"]
