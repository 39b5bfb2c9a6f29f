"""Text DataModules: one module per source, sharing :class:`~faircl.data.text.base.TextDataModule`.

===================  ==========================================================  ==============================
DataModule           files (under ``data_dir``)                                   task / protected attribute
===================  ==========================================================  ==============================
``BiasInBios``       ``hard_text, profession, gender`` CSV(s) or pickles          profession / gender
``Moji``             DeepMoji features ``{train,dev,test}/{pos,neg}_{pos,neg}.npy``  sentiment / race (AAE vs SAE)
``Jigsaw``           Kaggle unintended-bias ``train.csv`` (or WILDS CivilComments)  toxicity ≥ 0.5 / identity
``HateSpeech``       Huang et al. (2020) ``<Language>_{train,valid,test}.tsv``    hate / gender, age, country, ethnicity
``JigsawTemplates``  Dixon et al. (2018) ``en_sentence_templates.csv``            toxicity / identity term (eval only)
``TextCSV``          any CSV/TSV with named text, label and attribute columns      configured
===================  ==========================================================  ==============================
"""

from faircl.data.io import stratified_split
from faircl.data.text.base import FEATURES, REPRESENTATIONS, RawSplit, TextDataModule, make_eda
from faircl.data.text.bios import BIOS_PROFESSIONS, BiasInBios
from faircl.data.text.csv import TextCSV
from faircl.data.text.hate_speech import HATE_ATTRIBUTES, HateSpeech
from faircl.data.text.jigsaw import Jigsaw
from faircl.data.text.moji import Moji
from faircl.data.text.templates import JigsawTemplates

__all__ = [
    "BIOS_PROFESSIONS", "FEATURES", "HATE_ATTRIBUTES", "REPRESENTATIONS", "BiasInBios", "HateSpeech", "Jigsaw",
    "JigsawTemplates", "Moji", "RawSplit", "TextCSV", "TextDataModule", "make_eda", "stratified_split",
]
