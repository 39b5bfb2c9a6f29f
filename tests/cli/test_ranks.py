"""The end of a command started on several processes by Lightning's launcher: rank 0 waits for the ranks it started,
stops one stuck in its teardown (saying so, and taking it out of the list Lightning's child-process observer
watches, which would otherwise stop rank 0 too), and a rank > 0 arms a dump of its stacks."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

from faircl.runs import ranks


def _trainer(procs: list) -> SimpleNamespace:
    return SimpleNamespace(strategy=SimpleNamespace(launcher=SimpleNamespace(procs=procs)))


def test_rank_zero_waits_for_a_rank_that_exits_and_stops_one_that_does_not(monkeypatch, capsys):
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setattr(ranks, "GRACE_S", 1.0)
    quick = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    procs = [quick, stuck]
    ranks.end_ranks(_trainer(procs))
    assert quick.returncode == 0  # waited for, not stopped
    assert stuck.returncode is not None and stuck.returncode < 0  # stopped by a signal
    assert procs == [quick]  # the stopped rank left the observer's list: it does not stop rank 0
    err = capsys.readouterr().err
    assert f"rank 2 (pid {stuck.pid})" in err and "stopped it" in err
    assert f"pid {quick.pid}" not in err


def test_one_process_and_no_launcher_are_no_ops(monkeypatch, capsys):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    ranks.end_ranks(SimpleNamespace(strategy=SimpleNamespace()))  # a strategy without a launcher
    ranks.end_ranks(_trainer([]))
    assert capsys.readouterr().err == ""


def test_a_rank_above_zero_arms_the_stack_dump_and_waits_for_nobody(monkeypatch):
    armed = []
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(ranks.faulthandler, "dump_traceback_later", lambda t, **kw: armed.append(t))
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        ranks.end_ranks(_trainer([stuck]))  # rank 1 never holds children; even if it did, it does not wait
        assert stuck.poll() is None
    finally:
        stuck.kill()
        stuck.wait()
    assert armed == [ranks.STACKS_AFTER_S]
