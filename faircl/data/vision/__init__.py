"""Image DataModules: UTKFace, CelebA (with Fitzpatrick skin tone), CUB-200-2011, a generic image folder + CSV, and
the embedded :class:`~faircl.data.synthetic.ColoredDigits` (re-exported here).

One module per source, sharing :class:`~faircl.data.vision.base.ImageFairDataModule` (reading, caching, SimCLR views,
seeded stratified splits, ``max_rows``, induced imbalance and missing-image handling).
"""

from faircl.data.synthetic import ColoredDigits
from faircl.data.vision.base import MISSING_POLICIES, ImageFairDataModule, ImageTable
from faircl.data.vision.celeba import (FITZPATRICK_NAMES, CelebA, fitzpatrick_type, individual_typology_angle,
                                       read_celeba_attributes, read_celeba_landmarks, read_celeba_partition,
                                       skin_patches_ita, srgb_to_lab)
from faircl.data.vision.csv import ImageCSV
from faircl.data.vision.cub import CUB200
from faircl.data.vision.images import IMAGENET_MEAN, IMAGENET_STD, load_image, simclr_view_transform
from faircl.data.vision.imbalance import imbalance_rows, induce_imbalance, subset
from faircl.data.vision.stereo import StereoDigits, StereoUTKFace, exact_stereotype
from faircl.data.vision.utkface import UTK_GENDERS, UTK_RACES, UTKFace

__all__ = [
    "ColoredDigits", "ImageFairDataModule", "ImageTable", "UTKFace", "CelebA", "CUB200", "ImageCSV",
    "induce_imbalance", "imbalance_rows", "subset", "srgb_to_lab", "individual_typology_angle", "fitzpatrick_type",
    "skin_patches_ita", "FITZPATRICK_NAMES", "load_image", "simclr_view_transform", "read_celeba_attributes",
    "read_celeba_partition", "read_celeba_landmarks", "IMAGENET_MEAN", "IMAGENET_STD", "MISSING_POLICIES",
    "UTK_GENDERS", "UTK_RACES", "StereoDigits", "StereoUTKFace", "exact_stereotype",
]
