"""Helpers for tests: a tiny Hugging Face model; :func:`quiet_trainer_kwargs` (re-exported from :mod:`faircl.utils`);
:func:`run_then_leave`, the entry point of a test's spawned distributed worker;
:func:`rerun_on_exit_abort` for multi-process tests."""

from __future__ import annotations

import faulthandler
import functools
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from faircl.utils import quiet_trainer_kwargs

__all__ = ["EXIT_ABORT", "TINY_WORDS", "make_tiny_bert", "quiet_trainer_kwargs", "rerun_on_exit_abort",
           "run_then_leave"]


#: What a failure says when a process aborted in the C++ runtime (a joinable thread destroyed: the teardown of
#: torch's distributed or BLAS/OpenMP libraries at exit), not in the code under test.
EXIT_ABORT = ("terminate called without an active exception", "terminated with signal SIGABRT")


def rerun_on_exit_abort(test: Callable[..., None]) -> Callable[..., None]:
    """Run a multi-process test once more, with a warning that names the abort, when its first run failed because a
    process aborted with :data:`EXIT_ABORT` (seen on busy machines, rarely, after the processes' work was done). Any
    other failure, and an abort on the second run, fail the test as usual."""
    @functools.wraps(test)
    def run(*args, **kwargs):
        try:
            return test(*args, **kwargs)
        except Exception as err:  # any failure: re-raised unless it is the abort
            text = str(err)
            if not any(s in text for s in EXIT_ABORT):
                raise
            warnings.warn(f"a process aborted (run again once): {text[-1500:]}", stacklevel=1)
        return test(*args, **kwargs)
    return run


def run_then_leave(rank: int, worker: Callable[..., Any], *args: Any, hang_s: float = 300.0) -> None:
    """Entry point for ``torch.multiprocessing.spawn``: run ``worker(rank, *args)``, wait for every rank (a barrier,
    when the worker left a process group open), flush the streams and end the process at once (``os._exit(0)``).

    What a test checks is done when ``worker`` returns. Ending here skips the interpreter's teardown of torch's
    distributed, BLAS and OpenMP libraries, which in a spawned process can abort it after its work is done
    (SIGABRT, ``terminate called without an active exception``, seen on busy machines). The process group is not
    destroyed either: with torch 2.2's gloo, one rank once stayed in ``destroy_process_group`` for good after the
    other had left, and ``os._exit`` needs no teardown. A worker that raises propagates as usual (``spawn`` reports
    its traceback); a fatal signal inside it prints every thread's Python stack, and so does a rank still running
    after ``hang_s`` seconds, which then exits with 1 (a hang fails at once, with its stacks, not at the test's
    timeout).
    """
    import torch.distributed as dist

    faulthandler.enable()
    faulthandler.dump_traceback_later(hang_s, exit=True)
    worker(rank, *args)
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()  # no rank leaves while another still talks to it
    faulthandler.cancel_dump_traceback_later()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


#: Words of the tiny test vocabulary used by :func:`make_tiny_bert`.
TINY_WORDS = ("the", "a", "nurse", "surgeon", "he", "she", "is", "was", "kind", "cares", "for", "patients", "operates")


def make_tiny_bert(path: str | Path, hidden: int = 16, words: tuple[str, ...] = TINY_WORDS) -> str:
    """Save a randomly initialised 2-layer BERT and a WordPiece tokenizer over ``words`` to ``path`` (for tests)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True).save_pretrained(str(path))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(words) + 5, hidden_size=hidden, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64)
    BertModel(cfg).save_pretrained(str(path))
    return str(path)
