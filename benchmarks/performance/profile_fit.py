"""cProfile of a ``CE`` fit over frozen 384-d features: where a training step spends the time around the model.

    .venv/bin/python benchmarks/performance/profile_fit.py [--epochs 6] [--top 25]

Shen et al.'s main setting: an MLP 2 × 300 (tanh) over 384-d features, batch 1024, Adam lr 3e-3; ``BiasedFeatures``
with 10,240 train rows (10 steps an epoch) and 2,000 validation rows (validated every epoch). Prints the profile's
top entries by internal time and by cumulative time, and the number of calls of the data path's functions.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import logging
import pstats
import sys
import warnings
from pathlib import Path

import lightning as L
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from faircl.data.synthetic import BiasedFeatures  # noqa: E402
from faircl.methods.ce import CE  # noqa: E402
from faircl.testing import quiet_trainer_kwargs  # noqa: E402


def datamodule() -> BiasedFeatures:
    """The 384-d feature data, loaded (generation is not part of the profile)."""
    dm = BiasedFeatures(n_train=10240, n_val=2000, n_test=2000, dim=384, batch_size=1024, seed=0)
    dm._reported = True
    dm.setup()
    return dm


def fit(dm: BiasedFeatures, epochs: int) -> None:
    """One CE fit of ``epochs`` epochs on the loaded ``dm``."""
    L.seed_everything(0, verbose=False)
    model = CE(num_classes=dm.num_classes, num_groups=dm.num_groups, input_dim=dm.input_dim, encoder="mlp",
               encoder_kwargs={"hidden_dim": 300, "num_layers": 2, "activation": "tanh"}, lr=3e-3, leakage=False)
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=epochs, num_sanity_val_steps=0))
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.fit(model, datamodule=dm)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    torch.set_num_threads(args.threads)
    dm = datamodule()
    fit(dm, 1)  # warm-up: imports, first-call allocations
    prof = cProfile.Profile()
    prof.enable()
    fit(dm, args.epochs)
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)
    text = out.getvalue()
    print(text)
    return text


if __name__ == "__main__":
    main(sys.argv[1:])
