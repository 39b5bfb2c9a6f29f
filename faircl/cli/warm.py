"""A worker's warm-up (:mod:`faircl.cli.workers`): a tiny ``faircl fit`` + ``faircl test`` of each kind of run the
worker is about to fork, in the fork server before its first fork, so that every forked run starts with what a
second run in one process finds ready — jsonargparse's parsers of the run's classes and their docstrings,
Lightning's set-up, torch's first-call set-up of the run's operators (a convolution's kernels), matplotlib's fonts —
and costs its own work only.

The runs to warm up with come from the worker's owner (:class:`~faircl.cli.workers.RunPool`'s ``warm``, passed in
the environment variable :data:`WARM_ENV` as JSON: a list of ``faircl fit`` argument lists, e.g. a sweep's config or
a bench run's ``config.yaml``); without it, :data:`DEFAULT_ARGS`. Each is cut to one epoch of two batches per loop
(:data:`TINY`) in a temporary folder: the code paths and the shapes of the runs, not their work.

The warm-up runs on one torch thread, so no OpenMP team exists in the server when it forks (a team does not survive a
fork); :func:`restore_threads`, called by each child, gives the run the thread count the server started with. A
warm-up that fails is skipped: the runs are then merely slower. After it the server's objects are frozen
(:func:`gc.freeze`), so a run's garbage collections leave the shared memory alone; then a probe forked from the server
runs the first kind once more and records which of the server's pages it wrote (:data:`PREFAULT`), which each forked
child copies while it waits for its run (:mod:`faircl.cli.prefault`). ``FAIRCL_NO_WARMUP=1`` skips both.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from faircl.cli import prefault as faircl_prefault
from faircl.cli.dispatch import main
from faircl.cli.workers import WARM_ENV

__all__ = ["DEFAULT_ARGS", "DEFAULT_THREADS", "PREFAULT", "PREFAULT_COST", "TINY", "WARMED", "WARM_ENV", "prefault",
           "restore_threads", "warm_up"]

#: the torch thread count of this process before the warm-up (``OMP_NUM_THREADS`` or torch's default)
DEFAULT_THREADS = torch.get_num_threads()
#: without :data:`WARM_ENV`: a config every install ships (a small MLP on synthetic features)
DEFAULT_ARGS = (("--config", "ce/biased_features", "--data.n_train=256", "--data.n_val=128", "--data.n_test=128"),)
#: what cuts a warm-up run down: one epoch, two batches of each loop, on the CPU (a fork server must not start CUDA:
#: a forked child could not use it), no progress bar (its refresh thread must not be running when the server forks);
#: the rest as the run has it (its model summary, its callbacks)
TINY = ("--trainer.accelerator=cpu", "--trainer.devices=1", "--trainer.num_nodes=1", "--trainer.strategy=auto",
        "--trainer.max_epochs=1", "--trainer.max_steps=-1", "--trainer.limit_train_batches=2",
        "--trainer.limit_val_batches=2", "--trainer.limit_test_batches=2", "--trainer.enable_progress_bar=false")


def requested() -> list[list[str]]:
    """The runs named in :data:`WARM_ENV` (:data:`DEFAULT_ARGS` when unset or unreadable); the variable is removed,
    so the server's runs do not inherit it."""
    text = os.environ.pop(WARM_ENV, None)
    try:
        runs = json.loads(text) if text else None
    except ValueError:
        runs = None
    if not isinstance(runs, list) or not all(isinstance(r, list) and all(isinstance(a, str) for a in r)
                                             for r in runs):
        return [list(a) for a in DEFAULT_ARGS]
    return runs


def warm_up(runs: Sequence[Sequence[str]] | None = None) -> list[dict]:
    """One quiet tiny fit + test of each run (``faircl fit`` arguments; :func:`requested` when ``None``) in a
    temporary folder, on one thread. Returns per run: its arguments, whether fit and test both exited 0, seconds."""
    torch.set_num_threads(1)
    done = []
    for args in requested() if runs is None else runs:
        start = time.perf_counter()
        ok = _one(list(args))
        done.append({"args": list(args), "ok": ok, "seconds": round(time.perf_counter() - start, 3)})
    return done


def _one(args: list[str]) -> bool:
    out = io.StringIO()
    # Lightning's log handlers hold the original streams: no redirection reaches them, so logging is off meanwhile
    before = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with tempfile.TemporaryDirectory(prefix="faircl-warm-") as root, contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(out):
            common = [*args, *TINY, f"--trainer.default_root_dir={root}"]
            if main(["fit", *common]) != 0:
                return False
            ckpts = sorted(Path(root).rglob("*.ckpt"), key=lambda p: p.stat().st_mtime)
            return bool(ckpts) and main(["test", *common, f"--ckpt_path={ckpts[-1]}"]) == 0
    except (Exception, SystemExit):  # a warm-up never takes the worker down (a bad argument's SystemExit)
        return False
    finally:
        logging.disable(before)


def restore_threads() -> None:
    """Give a forked run the server's original torch thread count (its own OpenMP team starts on first use)."""
    torch.set_num_threads(DEFAULT_THREADS)


#: what the warm-up ran (:func:`warm_up`'s record; empty when skipped)
WARMED = warm_up() if os.environ.get("FAIRCL_NO_WARMUP") != "1" else []
# Every object the server holds now (torch, Lightning, faircl, their caches) moves to the permanent generation: a
# child's garbage collections never walk it, so they neither spend the time nor write the objects' headers, which
# would copy the server's memory page by page into every forked run.
gc.collect()
gc.freeze()


def _probe(args: list[str]) -> None:
    restore_threads()  # as a forked run has it
    _one(args)


#: the server's pages that a forked run of the first warm-up kind writes (:func:`faircl.cli.prefault.learn`, a probe
#: forked now): each forked child copies them while it waits for its run (:func:`prefault`)
_start = time.perf_counter()
PREFAULT = faircl_prefault.learn(lambda: _probe(WARMED[0]["args"])) if WARMED and WARMED[0]["ok"] else []
#: what learning :data:`PREFAULT` cost the server (seconds; once per worker) and what each child copies (bytes)
PREFAULT_COST = {"seconds": round(time.perf_counter() - _start, 3), "bytes": sum(n for _, n in PREFAULT)}


def prefault() -> int:
    """In a forked child: copy the pages of :data:`PREFAULT` now (bytes copied), before its run arrives."""
    return faircl_prefault.populate(PREFAULT)
