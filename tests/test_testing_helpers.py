"""The helpers that keep multi-process tests honest on busy machines: a spawned worker ends right after its work
(skipping the interpreter's teardown), and a ``ddp`` test runs once more only when a process aborted at exit."""

from __future__ import annotations

import atexit
import functools
import os
import time
import warnings
from pathlib import Path

import pytest
import torch.multiprocessing as mp

from faircl.testing import rerun_on_exit_abort, run_then_leave


def _abort_at_exit(rank: int, out_dir: str) -> None:
    """Do the work (a file), then plant an abort in the interpreter's teardown."""
    Path(out_dir, f"rank{rank}.done").write_text("ok")
    atexit.register(os.abort)


def _fail(rank: int, out_dir: str) -> None:
    raise ValueError(f"rank {rank} failed on purpose")


def test_run_then_leave_skips_the_teardown_that_aborts(tmp_path):
    with pytest.raises(mp.ProcessExitedException, match="SIGABRT"):  # the plant works: a plain spawn aborts
        mp.spawn(_abort_at_exit, args=(str(tmp_path),), nprocs=1, join=True)
    (tmp_path / "rank0.done").unlink()
    mp.spawn(run_then_leave, args=(_abort_at_exit, str(tmp_path)), nprocs=1, join=True)
    assert (tmp_path / "rank0.done").read_text() == "ok"


def test_run_then_leave_reports_a_failing_worker(tmp_path):
    with pytest.raises(mp.ProcessRaisedException, match="rank 0 failed on purpose"):
        mp.spawn(run_then_leave, args=(_fail, str(tmp_path)), nprocs=1, join=True)


def _hang(rank: int, out_dir: str) -> None:
    time.sleep(120)


def test_run_then_leave_ends_a_hung_rank_with_its_stacks(tmp_path):
    """A rank still running after ``hang_s`` exits with 1 at once (spawn raises), not at the test's timeout."""
    start = time.monotonic()
    with pytest.raises(mp.ProcessExitedException, match="exit code 1"):
        mp.spawn(functools.partial(run_then_leave, hang_s=3), args=(_hang, str(tmp_path)), nprocs=1, join=True)
    assert time.monotonic() - start < 60


def _flaky(failures: list[BaseException]):
    calls = []

    def test():
        calls.append(1)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return "passed"
    return test, calls


def test_rerun_once_after_an_exit_abort_with_a_warning():
    test, calls = _flaky([RuntimeError("process 1 terminated with signal SIGABRT")])
    with pytest.warns(UserWarning, match="aborted"):
        assert rerun_on_exit_abort(test)() == "passed"
    assert len(calls) == 2


def test_no_rerun_for_other_failures_or_a_second_abort():
    test, calls = _flaky([AssertionError("rank 0: wrong gradient")])
    with pytest.raises(AssertionError, match="wrong gradient"):
        rerun_on_exit_abort(test)()
    assert len(calls) == 1
    abort = AssertionError("stderr:\nterminate called without an active exception\n")
    test, calls = _flaky([abort, abort])
    with pytest.warns(UserWarning), pytest.raises(AssertionError, match="terminate called"):
        rerun_on_exit_abort(test)()
    assert len(calls) == 2


def test_no_rerun_and_no_warning_when_it_passes():
    test, calls = _flaky([])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rerun_on_exit_abort(test)() == "passed"
    assert len(calls) == 1
