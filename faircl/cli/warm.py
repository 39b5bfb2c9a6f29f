"""A worker's warm-up (:mod:`faircl.cli.workers`): one tiny ``faircl fit`` + ``faircl test`` in the fork server before
its first fork, so that every forked run starts with what a second run in one process finds ready — Lightning's and
jsonargparse's caches, torch's first-call set-up of its operators, matplotlib's fonts — and costs its own work only.

The warm-up runs on one torch thread, so no OpenMP team exists in the server when it forks (a team does not survive a
fork); :func:`restore_threads`, called by each child, gives the run the thread count the server started with. A
warm-up that fails is skipped: the runs are then merely slower. After it the server's objects are frozen
(:func:`gc.freeze`), so a run's garbage collections leave the shared memory alone.
"""

from __future__ import annotations

import contextlib
import gc
import io
import logging
import os
import tempfile

import torch

from faircl.cli.command import main

__all__ = ["DEFAULT_THREADS", "WARMED", "restore_threads", "warm_up"]

#: the torch thread count of this process before the warm-up (``OMP_NUM_THREADS`` or torch's default)
DEFAULT_THREADS = torch.get_num_threads()
#: a config every install ships (a 1-epoch fit of a small MLP on synthetic features)
CONFIG = "ce/biased_features"


def warm_up() -> bool:
    """One quiet 1-epoch fit + test of :data:`CONFIG` in a temporary folder, on one thread; ``True`` if it ran."""
    torch.set_num_threads(1)
    out = io.StringIO()
    # Lightning's log handlers hold the original streams: no redirection reaches them, so logging is off meanwhile
    before = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with tempfile.TemporaryDirectory(prefix="faircl-warm-") as root, contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(out):
            args = ["--config", CONFIG, "--trainer.max_epochs=1", "--trainer.enable_progress_bar=false",
                    "--data.n_train=256", "--data.n_val=128", "--data.n_test=128",
                    f"--trainer.default_root_dir={root}"]
            return main(["fit", *args]) == 0 and main(["test", *args, "--ckpt_path=best"]) == 0
    except Exception:  # a warm-up never takes the worker down
        return False
    finally:
        logging.disable(before)


def restore_threads() -> None:
    """Give a forked run the server's original torch thread count (its own OpenMP team starts on first use)."""
    torch.set_num_threads(DEFAULT_THREADS)


WARMED = warm_up() if os.environ.get("FAIRCL_NO_WARMUP") != "1" else False
# Every object the server holds now (torch, Lightning, faircl, their caches) moves to the permanent generation: a
# child's garbage collections never walk it, so they neither spend the time nor write the objects' headers, which
# would copy the server's memory page by page into every forked run.
gc.collect()
gc.freeze()
