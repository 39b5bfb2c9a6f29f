"""Shared fixtures: the real-data folder, offline settings, a tiny Hugging Face model, free ports and a 2-process
spawn for DDP tests (a quiet trainer is in faircl.testing)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
import torch.multiprocessing as mp

from faircl.testing import make_tiny_bert, rerun_on_exit_abort, run_then_leave

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
LONG = os.environ.get("FAIRCL_LONG_TESTS") == "1"


def pytest_collection_modifyitems(config, items):
    """Tests marked ``long`` (minutes each: extra resume cases, whole benchmark smoke runs) run only with
    ``FAIRCL_LONG_TESTS=1`` (``make test-long``); ``make test`` reports them as skipped with this reason. Tests
    marked ``e2e`` are chosen by marker alone: ``make test`` leaves them out (``-m "not e2e"``), ``make test-e2e``
    runs them. Tests
    marked ``ddp`` run once more when a process aborted at exit (:func:`faircl.testing.rerun_on_exit_abort`)."""
    for item in items:
        if "ddp" in item.keywords and isinstance(item, pytest.Function):
            item.obj = rerun_on_exit_abort(item.obj)
    if LONG:
        return
    skip = pytest.mark.skip(reason="long test: runs with FAIRCL_LONG_TESTS=1 (make test-long)")
    for item in items:
        if "long" in item.keywords:
            item.add_marker(skip)


def shared_data_dir() -> Path:
    """``$FAIRCL_DATA`` or ``../shared/data`` beside the repository."""
    return Path(os.environ.get("FAIRCL_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real public data folder; skips the test with a reason when it is absent (a user's fresh clone)."""
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"real data folder {path} not found (set FAIRCL_DATA to its location)")
    return path


@pytest.fixture()
def in_tmp(tmp_path, monkeypatch) -> Path:
    """Run the test inside a temporary working directory (logs and checkpoints land there)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def free_port() -> Callable[[], int]:
    """A function returning a free TCP port on 127.0.0.1 (for a process group's rendezvous)."""
    return _free_port


@pytest.fixture()
def spawn_ddp() -> Callable[..., None]:
    """``spawn_ddp(worker, *args, nprocs=2)``: run ``worker(rank, port, *args)`` in ``nprocs`` spawned processes
    (``port``: a free port for ``init_process_group``) and wait for them. Each process ends right after ``worker``
    returns (:func:`faircl.testing.run_then_leave`)."""
    def run(worker: Callable[..., None], *args, nprocs: int = 2) -> None:
        for attempt in range(3):
            try:
                mp.spawn(run_then_leave, args=(worker, _free_port(), *args), nprocs=nprocs, join=True)
                return
            except mp.ProcessRaisedException as err:  # the port was free when drawn, not when the store bound it
                if attempt == 2 or not _port_taken(str(err)):
                    raise
    return run


def _port_taken(message: str) -> bool:
    """Whether a rank failed because the rendezvous port was taken meanwhile (another process bound it)."""
    text = message.lower()
    return any(s in text for s in ("address already in use", "eaddrinuse", "errno 98", "connection refused",
                                   "socket timeout"))


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> str:
    """A tiny random BERT directory (:func:`faircl.testing.make_tiny_bert`), loadable offline."""
    return make_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))
