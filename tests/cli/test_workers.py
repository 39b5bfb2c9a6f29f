"""Runs forked from a pre-imported worker (:mod:`faircl.cli.workers`): the exit status of each run, its log, and a
crash or a signal that ends one run only."""

from __future__ import annotations

import operator
import os

import pytest

from faircl.cli.workers import RunPool, needs_fresh_process


@pytest.fixture(scope="module")
def bare_pool():
    return RunPool(preload=())


def test_exit_status_crash_and_signal_end_one_run_only(bare_pool, tmp_path):
    assert bare_pool.run(int, ("3",)) == 3
    assert bare_pool.run(operator.truediv, (1, 0), log=tmp_path / "crash.log") == 1  # an exception: exit 1
    assert "ZeroDivisionError" in (tmp_path / "crash.log").read_text()
    assert bare_pool.run(os.abort) == -6  # killed by SIGABRT
    assert bare_pool.run(int, ("0",)) == 0  # the pool still runs after all of it


def test_runs_in_their_folder_with_their_environment(bare_pool, tmp_path):
    (tmp_path / "here").mkdir()
    assert bare_pool.run(os.mkdir, ("made",), cwd=tmp_path / "here") == 0
    assert (tmp_path / "here" / "made").is_dir()
    assert bare_pool.run(os.getenv, ("FAIRCL_T_X",), env={"FAIRCL_T_X": "7"}) == 7  # the run's value is its exit
    assert bare_pool.run(os.getenv, ("FAIRCL_T_X",)) == 0  # unset again in the next run
    assert "FAIRCL_T_X" not in os.environ  # the parent's environment is untouched


@pytest.mark.slow
def test_the_faircl_command_through_a_preloaded_pool(tmp_path):
    from faircl.cli import main, prefault

    pool = RunPool()
    assert pool.run(main, (["configs"],), log=tmp_path / "configs.log") == 0
    pool.settle()  # the spare has had time to copy ahead the pages a run writes
    assert pool.run(_prefaulted_percent) >= (90 if prefault.supported() else 0)
    assert "confair/biased_features" in (tmp_path / "configs.log").read_text()
    assert pool.run(main, (["fit", "--config", "no/such"],), log=tmp_path / "bad.log") == 2
    assert "no/such" in (tmp_path / "bad.log").read_text()


def _prefaulted_percent() -> int:
    """(In a forked run) the percentage of the server's learned pages (:data:`faircl.cli.warm.PREFAULT`) that are
    this run's own as it starts: copied ahead by its child while it waited."""
    import faircl.cli.warm as warm
    from faircl.cli import prefault

    learned = sum(n for _, n in warm.PREFAULT)
    own = sum(n for _, n in prefault.written_pages([(a, a + n) for a, n in warm.PREFAULT]))
    return round(100 * own / learned) if learned else 0


def test_multi_process_commands_need_a_fresh_process():
    assert needs_fresh_process(["--trainer.devices", "2"]) and needs_fresh_process(["--trainer.devices=2"])
    assert needs_fresh_process(["--trainer.strategy=ddp"]) and needs_fresh_process(["--trainer.num_nodes", "2"])
    assert not needs_fresh_process(["--trainer.devices", "1", "--trainer.max_epochs", "2"])
    assert not needs_fresh_process(["--config", "ce/biased_features"])


def test_a_target_given_by_name_is_imported_in_the_child(bare_pool):
    assert bare_pool.run("operator:add", (2, 3)) == 5
    assert bare_pool.run("no_such_module_here:f") == 1


@pytest.mark.slow
def test_a_trial_seed_the_method_refuses_ends_its_log_with_the_reason(tmp_path):
    """A searched value that only a trial meets (the sweep's pre-check passed another): exit 2 and the one-line
    reason as the log's last line, which is the line the sweep quotes."""
    import json

    from faircl.cli import trial

    spec = {"fit_args": ["--config", "confair/biased_features", "--model.temperature=-1", "--trainer.max_epochs=1"],
            "seeds": [0], "storage": "", "study": "", "trial_id": 0, "trial": 0, "prune": None, "pruner": "none"}
    (tmp_path / "trial_spec.json").write_text(json.dumps(spec))
    pool = RunPool(preload=())
    log = tmp_path / "seed_0.log"
    assert pool.run("faircl.cli.trial:pooled_seed", (str(tmp_path), 0), log=log) == 2
    assert log.read_text().strip().splitlines()[-1] == "faircl: error: ConFair: temperature must be > 0, got -1.0"
    assert trial.PRUNED_EXIT != 2


_OWNER = """
import sys, time
from faircl.cli.workers import RunPool
RunPool(preload=()).run("time:sleep", (60,))
"""


def test_a_run_ends_when_the_process_that_started_it_is_killed(tmp_path):
    """The fork server outlives a killed owner (its children hold its keep-alive pipe): the run must not."""
    import signal
    import subprocess
    import sys
    import time

    owner = subprocess.Popen([sys.executable, "-c", _OWNER])
    try:
        deadline, runs = time.time() + 60, []
        while time.time() < deadline and not runs:  # owner -> fork server -> the run (sleep 60)
            out = subprocess.run(["pgrep", "-f", "multiprocessing.forkserver"], capture_output=True, text=True).stdout
            servers = [int(p) for p in out.split()]
            kids = [subprocess.run(["pgrep", "-P", str(s)], capture_output=True, text=True).stdout.split()
                    for s in servers if _parent(s) == owner.pid]
            runs = [int(k) for ks in kids for k in ks]
            time.sleep(0.2)
        assert runs, "the run did not start"
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        deadline = time.time() + 20
        while time.time() < deadline and any(_alive(r) for r in runs):
            time.sleep(0.1)
        assert not any(_alive(r) for r in runs), "the run went on after the process that started it was killed"
    finally:
        owner.kill()


def _parent(pid: int) -> int:
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_warm_up_is_a_quiet_fit_and_test_on_one_thread(tmp_path):
    """The server's warm-up (a tiny fit + test of each run its owner names, before its first fork), as the server
    runs it (an import in a fresh process, where Lightning's log handlers write to the console): it runs the named
    runs, skips one that fails, runs on one torch thread, writes nothing to the user's console and nothing into the
    folder it runs in, removes the variable that named the runs, and a forked run gets the original thread count
    back. A bench worker's preload leaves a vision run nothing to import."""
    import json
    import subprocess
    import sys

    code = ("import os, torch, faircl.cli.preload\nbefore = torch.get_num_threads()\nimport faircl.cli.warm as w\n"
            "assert [r['ok'] for r in w.WARMED] == [True, False], w.WARMED\n"
            "assert w.WARMED[0]['args'][:2] == ['--config', 'confair/biased_features']\n"
            "assert w.WARM_ENV not in os.environ and torch.get_num_threads() == 1\n"
            "w.restore_threads(); assert torch.get_num_threads() == w.DEFAULT_THREADS == before\n"
            # a probe forked from the server learned the pages a run writes (where the system lets it read them)
            "from faircl.cli import prefault\n"
            "assert w.PREFAULT_COST['bytes'] > 2 ** 20 or not prefault.enabled(), w.PREFAULT_COST\n"
            # after a bench worker's preload, what a forked vision run would import on first use is there already:
            # ColoredDigits' digits (sklearn.datasets, 0.1 s a run) and the epoch-history callback every run names
            "import contextlib, importlib, io, sys\nfrom faircl.bench.runner import BENCH_PRELOAD\n"
            "[importlib.import_module(m) for m in BENCH_PRELOAD]\nloaded = set(sys.modules)\n"
            "from faircl.data import ColoredDigits\n"
            "with contextlib.redirect_stdout(io.StringIO()): ColoredDigits().setup('fit')\n"
            "importlib.import_module('faircl.bench.history')\n"
            "new = sorted(m for m in set(sys.modules) - loaded if m.split('.')[0] in ('sklearn', 'scipy', 'faircl'))\n"
            "assert not new, new\n")
    runs = [["--config", "confair/biased_features", "--data.n_train=128", "--data.n_val=64", "--data.n_test=64"],
            ["--config", "no/such/config"]]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "FAIRCL_WARM_ARGS": json.dumps(runs)}
    env.pop("FAIRCL_NO_WARMUP", None)
    env.pop("OMP_NUM_THREADS", None)
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout == "" and res.stderr == "", (res.stdout + res.stderr)[-2000:]
    assert not list(tmp_path.iterdir())  # the warm-up ran in a temporary folder of its own


def test_the_runs_to_warm_up_with_reach_the_server_only(tmp_path):
    """``RunPool(warm=...)`` hands its runs to the server it starts (in the environment of that start only); the
    server's warm-up reads them; without a readable list it warms up with its default run."""
    import subprocess
    import sys

    code = ("import json, os\nfrom faircl.cli.workers import RunPool\n"
            "pool = RunPool(preload=(), warm=[['--config', 'x.yaml', 7]])\n"
            "assert pool.run('faircl_t_env:check', ()) == 0\n"  # the bare server keeps the variable: its run sees it
            "assert 'FAIRCL_WARM_ARGS' not in os.environ\n")
    (tmp_path / "faircl_t_env.py").write_text(
        "import json, os\ndef check():\n    return 0 if json.loads(os.environ['FAIRCL_WARM_ARGS']) == "
        "[['--config', 'x.yaml', '7']] else 1\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    env.pop("FAIRCL_WARM_ARGS", None)
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]


def test_the_warm_up_reads_its_runs_or_falls_back_to_its_default(monkeypatch):
    import gc
    import sys

    if "faircl.cli.warm" not in sys.modules:  # imported here without its warm-up, and without its freeze
        monkeypatch.setenv("FAIRCL_NO_WARMUP", "1")
        import faircl.cli.warm  # noqa: F401
        gc.unfreeze()
    w = sys.modules["faircl.cli.warm"]

    monkeypatch.setenv(w.WARM_ENV, '[["--config", "a.yaml"], ["--x=1"]]')
    assert w.requested() == [["--config", "a.yaml"], ["--x=1"]]
    assert w.WARM_ENV not in os.environ  # read once, removed
    for bad in ("not json", '{"a": 1}', '[["--config", 3]]', '["--config"]'):
        monkeypatch.setenv(w.WARM_ENV, bad)
        assert w.requested() == [list(a) for a in w.DEFAULT_ARGS]
    assert w.requested() == [list(a) for a in w.DEFAULT_ARGS]  # unset


def test_a_sequence_of_commands_stops_at_the_first_that_fails(capsys):
    from faircl.cli.dispatch import main_sequence

    assert main_sequence([["--version"], ["--version"]]) == 0
    assert capsys.readouterr().out.count("faircl ") == 2
    assert main_sequence([["--version"], ["no-such-command"], ["--version"]]) == 2
    assert capsys.readouterr().out.count("faircl ") == 1  # the third never ran


def _linger_until(path: str) -> int:
    """A run that returns 0 at once but whose process cannot end before ``path`` exists (a non-daemon thread, which
    the child's teardown waits for)."""
    import threading
    import time
    from pathlib import Path

    def wait() -> None:
        while not Path(path).exists():
            time.sleep(0.02)

    threading.Thread(target=wait, daemon=False).start()
    return 0


def test_the_status_comes_back_before_the_child_ends_and_the_next_child_is_forked_ahead(tmp_path):
    """A run's status is reported when the run returns, while its child still tears down; the next run goes to the
    spare child forked meanwhile, which ignores a Ctrl-C until it has a run; ``settle`` waits for both; ``close`` ends
    the spare and kills a child stuck after its report."""
    import signal
    import time

    pool = RunPool(preload=())
    release = tmp_path / "release"
    assert pool.run(_linger_until, (str(release),)) == 0  # returns although the child cannot end yet
    (lingering,) = pool._ending
    assert lingering.is_alive()
    pool._joined()
    spare_pid = pool._spare[0].pid
    assert pool.run(os.getpid) == spare_pid % 256  # the next run ran in the spare (its status: the pid, mod 256)
    release.touch()
    pool.settle()
    pool.settle()  # twice: the spare's READY taken once
    assert not pool._ending and not lingering.is_alive() and lingering.exitcode == 0
    spare_pid = pool._spare[0].pid
    os.kill(spare_pid, signal.SIGINT)  # a Ctrl-C of the process group: a spare leaves it to its owner
    time.sleep(0.3)
    assert pool.run(os.getpid) == spare_pid % 256
    assert pool.run(_linger_until, (str(tmp_path / "never"),)) == 0
    stuck = pool._ending[-1]
    pool._joined()
    spare = pool._spare[0]
    pool.close(timeout=0.5)  # the spare ends; a child stuck in its teardown after its report is killed
    assert not spare.is_alive() and spare.exitcode == 0 and pool._spare is None
    assert stuck.exitcode == -signal.SIGKILL


def test_a_dead_spare_or_an_unpicklable_run_does_not_stop_the_pool(bare_pool):
    import signal

    assert bare_pool.run(int, ("1",)) == 1
    bare_pool._joined()
    spare = bare_pool._spare[0]
    os.kill(spare.pid, signal.SIGKILL)
    spare.join()
    assert bare_pool.run(int, ("2",)) == 2  # a new child replaced the dead spare
    with pytest.raises(Exception):  # noqa: B017  (pickle raises one of several types)
        bare_pool.run(lambda: 0)
    assert bare_pool.run(int, ("3",)) == 3  # the spare kept for this run


_EXITS = """
from faircl.cli.workers import RunPool
pool = RunPool(preload=())
assert pool.run(int, ("5",)) == 5
pool._joined()
assert pool._spare is not None
print("ran")
"""


def test_a_process_with_a_spare_child_exits_at_once():
    """multiprocessing waits at exit for every child it started: the pool's exit hook ends the spare first."""
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", _EXITS], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ran", res.stderr[-2000:]
