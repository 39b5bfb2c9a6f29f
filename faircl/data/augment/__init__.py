"""Augmentations that draw random views of text, images and feature vectors — all offline.

* :class:`TwoViews` turns any one-view transform into a pair of independent draws.
* :class:`EDA` — easy data augmentation (Wei & Zou 2019; the "EDA" strategy of Chi et al. 2022, App. B.3):
  random swap, random deletion, synonym replacement and random insertion, with synonyms from WordNet.
* :class:`CounterfactualSwap` — swaps words by a pair list (``he``↔``she``), preserving case and punctuation.
* :class:`ContextualLMAug` and :class:`BackTranslationAug` — nlpaug's masked-LM and back-translation
  augmenters, loaded from local model directories only.
* :class:`SimCLRTransform` (torchvision ``transforms.v2``) and :class:`FeatureNoise` for images and fixed
  feature vectors.

``FairDataModule.view_transform`` wants a *one-view* transform (it calls it once for ``x`` and once for ``x2``):
pass :class:`EDA`, :class:`FeatureNoise` or ``SimCLRTransform(...).transform`` there, and use :class:`TwoViews` /
:class:`SimCLRTransform` where a pair is wanted in one call.

Randomness: every augmenter takes ``seed``. With a seed, the sequence of outputs is reproducible; inside a
``DataLoader`` worker the seed is mixed with the worker's seed so that workers do not repeat each other. With
``seed=None`` each call draws from torch's global generator, which ``torch.manual_seed`` and the ``DataLoader``
seed.

WordNet is prepared offline (see :mod:`faircl.data.augment.text`).
"""

from faircl.data.augment.base import TwoViews
from faircl.data.augment.image import FeatureNoise, SimCLRTransform
from faircl.data.augment.lm import BackTranslationAug, ContextualLMAug, ModelDirError
from faircl.data.augment.text import (DEFAULT_GENDER_PAIRS, EDA, STOPWORDS, CounterfactualSwap,
                                      WordNetUnavailableError, find_wordnet_source, load_wordnet, prepare_wordnet)

__all__ = [
    "TwoViews",
    "EDA",
    "CounterfactualSwap",
    "DEFAULT_GENDER_PAIRS",
    "STOPWORDS",
    "ContextualLMAug",
    "BackTranslationAug",
    "SimCLRTransform",
    "FeatureNoise",
    "WordNetUnavailableError",
    "ModelDirError",
    "prepare_wordnet",
    "find_wordnet_source",
    "load_wordnet",
]
