"""Methods: LightningModules built on :class:`FairModule`, one short module per method.

:data:`METHODS` maps the class name of every concrete method to its class; the CLI selects from it
(``--model ConFair``). A new method is added here with an explicit import.
"""

from faircl.methods.adversarial import Adversarial, DiverseAdversarial
from faircl.methods.base import FairModule
from faircl.methods.ccd import CCD
from faircl.methods.ce import CE
from faircl.methods.confair import ConFair
from faircl.methods.dml import DML
from faircl.methods.fair_sampling_simclr import FairSamplingSimCLR, SimCLR
from faircl.methods.inlp import INLP
from faircl.methods.one_stage_cl import OneStageCL
from faircl.methods.parade import PARADE
from faircl.methods.two_stage_cl import TwoStageCL

METHODS: dict[str, type[FairModule]] = {
    cls.__name__: cls
    for cls in (CE, ConFair, TwoStageCL, OneStageCL, Adversarial, DiverseAdversarial, INLP, DML, PARADE,
                FairSamplingSimCLR, SimCLR, CCD)
}


def available_methods() -> dict[str, type[FairModule]]:
    """Every concrete method by class name (a copy of :data:`METHODS`)."""
    return dict(METHODS)


__all__ = ["METHODS", "available_methods", "FairModule", "Adversarial", "CCD", "CE", "ConFair", "DML",
           "DiverseAdversarial", "FairSamplingSimCLR", "INLP", "OneStageCL", "PARADE", "SimCLR", "TwoStageCL"]
