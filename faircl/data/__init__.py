"""DataModules, datasets, samplers and augmentations. ``from faircl.data import HateSpeech`` works for all.

Layout: :mod:`~faircl.data.io` (reading tables, the split rule, unknown values, errors), :mod:`~faircl.data.base`
(``FairDataset``, ``FairDataModule``), :mod:`~faircl.data.samplers`, :mod:`~faircl.data.synthetic`, and one package per
modality with one module per source: :mod:`~faircl.data.text`, :mod:`~faircl.data.vision`,
:mod:`~faircl.data.counterfactual` (CDA, LLM augmentation, tuples) and :mod:`~faircl.data.augment`.

:data:`DATAMODULES` lists every DataModule selectable with ``--data <Name>``; a new DataModule is added there.
"""

from faircl.data.augment import (EDA, BackTranslationAug, ContextualLMAug, CounterfactualSwap, FeatureNoise,
                                 ModelDirError, SimCLRTransform, TwoViews, WordNetUnavailableError, prepare_wordnet)
from faircl.data.base import FairDataModule, FairDataset, encode_groups
from faircl.data.counterfactual import (CDA, AttributeLexicon, CounterfactualTuples, LLMAugmenter, OpenAIChatBackend,
                                        PolarityReport, SourcedTuples, TupleDataset, make_cda_tuples, polarity_check,
                                        read_texts, read_tuple_file, write_tuple_file)
from faircl.data.feature_cache import FeatureCache
from faircl.data.io import UNKNOWN_VALUES, DataError, read_table, stratified_split
from faircl.data.samplers import GroupBalancedBatchSampler, SamplesPerClassSampler, StratifiedBatchSampler
from faircl.data.synthetic import BiasedFeatures, ColoredDigits, SynthBios, SynthBiosText
from faircl.data.text import BiasInBios, HateSpeech, Jigsaw, JigsawTemplates, Moji, TextCSV, TextDataModule
from faircl.data.vision import (CUB200, CelebA, ImageCSV, ImageFairDataModule, StereoDigits, StereoUTKFace, UTKFace,
                                imbalance_rows, induce_imbalance, subset)
from faircl.data.vocab import WordVocab

#: Every selectable DataModule, by class name (the shared bases ``TextDataModule`` and ``ImageFairDataModule`` are
#: not selectable: their subclasses implement their hooks).
DATAMODULES: dict[str, type[FairDataModule]] = {
    cls.__name__: cls
    for cls in (
        BiasedFeatures, SynthBios, ColoredDigits,
        BiasInBios, Moji, Jigsaw, HateSpeech, JigsawTemplates, TextCSV, SynthBiosText,
        UTKFace, CelebA, CUB200, ImageCSV, StereoDigits, StereoUTKFace,
        CounterfactualTuples, SourcedTuples,
    )
}


def available_datamodules() -> dict[str, type]:
    """Every selectable DataModule, by class name (a copy of :data:`DATAMODULES`)."""
    return dict(DATAMODULES)


__all__ = [
    "DATAMODULES", "available_datamodules",
    "DataError", "FairDataModule", "FairDataset", "encode_groups", "UNKNOWN_VALUES", "read_table", "stratified_split",
    "BiasedFeatures", "ColoredDigits", "SynthBios",
    "TextDataModule", "BiasInBios", "HateSpeech", "Jigsaw", "JigsawTemplates", "Moji", "TextCSV", "SynthBiosText",
    "ImageFairDataModule", "UTKFace", "CelebA", "CUB200", "ImageCSV", "StereoDigits", "StereoUTKFace", "imbalance_rows", "induce_imbalance", "subset",
    "CDA", "AttributeLexicon", "CounterfactualTuples", "LLMAugmenter", "OpenAIChatBackend", "PolarityReport",
    "SourcedTuples", "TupleDataset", "make_cda_tuples", "polarity_check", "read_texts", "read_tuple_file", "write_tuple_file",
    "GroupBalancedBatchSampler", "SamplesPerClassSampler", "StratifiedBatchSampler",
    "EDA", "BackTranslationAug", "ContextualLMAug", "CounterfactualSwap", "FeatureNoise", "ModelDirError",
    "SimCLRTransform", "TwoViews", "WordNetUnavailableError", "prepare_wordnet",
    "FeatureCache", "WordVocab",
]
