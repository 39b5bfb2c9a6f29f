"""Runs forked from a pre-imported worker (:mod:`faircl.runs.pool`): each run's exit status and log, a crash or a
signal that ends one run only, Ctrl-C and a killed owner that end the run, and no module that forks when imported."""

from __future__ import annotations

import operator
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from faircl.runs.parse_only import parse_command
from faircl.runs.pool import RunPool, needs_fresh_process

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bare_pool():
    return RunPool(preload=())


def _say_and_exit(word: str, code: int) -> int:
    print(word)
    print(f"{word} on stderr", file=sys.stderr)
    return code


def test_exit_status_crash_and_signal_end_one_run_only(bare_pool, tmp_path):
    assert bare_pool.run(int, ("3",)) == 3
    assert bare_pool.run(operator.truediv, (1, 0), log=tmp_path / "crash.log") == 1  # an exception: exit 1
    assert "ZeroDivisionError" in (tmp_path / "crash.log").read_text()
    assert bare_pool.run(os.abort) == -signal.SIGABRT
    assert bare_pool.run(_kill_self, (signal.SIGKILL,)) == -signal.SIGKILL
    assert bare_pool.run(_kill_self, (signal.SIGTERM,)) == -signal.SIGTERM
    assert bare_pool.run(int, ("0",)) == 0  # the pool still runs after all of it


def _kill_self(sig: int) -> int:
    os.kill(os.getpid(), sig)
    time.sleep(5)
    return 0


def test_each_run_writes_its_own_log(bare_pool, tmp_path):
    assert bare_pool.run(_say_and_exit, ("first", 0), log=tmp_path / "a.log") == 0
    assert bare_pool.run(_say_and_exit, ("second", 4), log=tmp_path / "b.log") == 4
    assert (tmp_path / "a.log").read_text().split("\n")[:2] == ["first", "first on stderr"]
    assert (tmp_path / "b.log").read_text().split("\n")[:2] == ["second", "second on stderr"]
    (tmp_path / "a.log").write_text("old run's output\n")
    assert bare_pool.run(_say_and_exit, ("third", 0), log=tmp_path / "a.log") == 0
    assert "old run" not in (tmp_path / "a.log").read_text()  # a rerun's log starts empty


def test_runs_in_their_folder_with_their_environment(bare_pool, tmp_path):
    (tmp_path / "here").mkdir()
    assert bare_pool.run(os.mkdir, ("made",), cwd=tmp_path / "here") == 0
    assert (tmp_path / "here" / "made").is_dir()
    assert bare_pool.run(os.getenv, ("FAIRCL_T_X",), env={"FAIRCL_T_X": "7"}) == 7  # the run's value is its exit
    assert bare_pool.run(os.getenv, ("FAIRCL_T_X",)) == 0  # unset again in the next run
    assert "FAIRCL_T_X" not in os.environ  # the parent's environment is untouched


def test_a_target_given_by_name_is_imported_in_the_child(bare_pool):
    assert bare_pool.run("operator:add", (2, 3)) == 5
    assert bare_pool.run("no_such_module_here:f") == 1


def test_a_run_that_cannot_pickle_is_refused_with_the_reason(bare_pool):
    with pytest.raises(TypeError, match=r"must pickle to reach the worker .*module:function"):
        bare_pool.run(lambda: 0)
    with pytest.raises(TypeError, match="must pickle"):
        bare_pool.run(int, (threading.Lock(),))
    assert bare_pool.run(int, ("2",)) == 2  # the pool runs on


def _trainer(*options: str):
    return parse_command(["fit", "--config", "ce/biased_features", *options])[0].trainer


def test_multi_process_commands_need_a_fresh_process():
    # decided from the trainer settings jsonargparse parsed (options and configs alike), never from argv
    assert needs_fresh_process(_trainer("--trainer.devices", "2")) and needs_fresh_process(_trainer("--trainer.devices=2"))
    assert needs_fresh_process(_trainer("--trainer.strategy=ddp"))
    assert needs_fresh_process(_trainer("--trainer.num_nodes", "2"))
    assert needs_fresh_process(_trainer("--trainer.strategy", "ddp_spawn"))
    assert needs_fresh_process(_trainer("--trainer.devices=[0, 1]"))
    assert not needs_fresh_process(_trainer("--trainer.devices", "1", "--trainer.max_epochs", "2"))
    assert not needs_fresh_process(_trainer("--trainer.devices=auto", "--trainer.strategy=auto"))
    assert not needs_fresh_process(_trainer())


# An owner process: one run that writes its pid, then works (sleeps); Ctrl-C: the owner says so and exits 130.
_HELPER = """
import os, sys, time
def work(pid_file):
    print("working", flush=True)
    open(pid_file, "w").write(str(os.getpid()))
    time.sleep(120)
    return 0
"""
_OWNER = """
import sys
from faircl.runs.pool import RunPool
try:
    RunPool(preload=()).run("faircl_t_helper:work", (sys.argv[1],), log=sys.argv[2])
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


def _terminal_sigint() -> None:
    """Ctrl-C's disposition as a terminal's job has it: a test suite started in the background (``make test &``)
    ignores SIGINT, and a process that ignores it passes that on, so the owner would never see the Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_owner(tmp_path: Path) -> tuple[subprocess.Popen, int]:
    (tmp_path / "faircl_t_helper.py").write_text(_HELPER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(tmp_path / "pid"), str(tmp_path / "run.log")],
                             env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True,  # its own process group, as a terminal's job is
                             preexec_fn=_terminal_sigint)
    deadline = time.time() + 60
    while time.time() < deadline and not (tmp_path / "pid").is_file():
        time.sleep(0.05)
    assert (tmp_path / "pid").is_file(), "the run did not start"
    time.sleep(0.1)
    return owner, int((tmp_path / "pid").read_text())


def _gone(pid: int, within: float) -> bool:
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_ctrl_c_while_a_run_works_kills_it_and_the_owner_re_raises(tmp_path):
    owner, run = _start_owner(tmp_path)
    try:
        start = time.time()
        os.killpg(owner.pid, signal.SIGINT)  # a Ctrl-C: the whole process group gets it
        out, err = owner.communicate(timeout=30)
        assert time.time() - start < 10
        assert owner.returncode == 130 and out.strip() == "interrupted", (out, err)
        assert "Traceback" not in err, err  # no run (nor the fork server) prints a KeyboardInterrupt
        assert _gone(run, within=5), "the run went on after the Ctrl-C"
        assert "Traceback" not in (tmp_path / "run.log").read_text()
    finally:
        owner.kill()


_SLOW_PRELOAD = """
import pathlib, sys, time
pathlib.Path("importing").write_text("1")
time.sleep(4)
"""
_OWNER_OF_A_SLOW_SERVER = """
import sys
from faircl.runs.pool import RunPool
if __name__ == "__main__":
    try:
        RunPool(preload=("faircl_t_slow",)).run("faircl.cli:main", (["configs"],), log="run.log")
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
"""


def test_ctrl_c_while_the_server_imports_is_the_owners(tmp_path):
    """A Ctrl-C in the server's first seconds (its imports) stops the owner; the server prints no traceback."""
    (tmp_path / "faircl_t_slow.py").write_text(_SLOW_PRELOAD)
    (tmp_path / "owner.py").write_text(_OWNER_OF_A_SLOW_SERVER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    owner = subprocess.Popen([sys.executable, "owner.py"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_terminal_sigint)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (tmp_path / "importing").is_file():
            time.sleep(0.02)
        assert (tmp_path / "importing").is_file(), "the server did not start its imports"
        os.killpg(owner.pid, signal.SIGINT)
        out, err = owner.communicate(timeout=60)  # also waits for the server, which shares the owner's stderr
        assert owner.returncode == 130 and out.strip() == "interrupted", (out, err)
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    finally:
        owner.kill()


def test_a_run_ends_when_the_process_that_started_it_is_killed(tmp_path):
    """The fork server outlives a killed owner for a while: the run must not."""
    owner, run = _start_owner(tmp_path)
    try:
        assert not _gone(run, within=0.5)  # planted: it works while its owner lives
        owner.kill()
        owner.wait()
        assert _gone(run, within=20), "the run went on after the process that started it was killed"
    finally:
        owner.kill()


_NO_FORK = """
import importlib, os, pkgutil, sys
def refuse(*a, **k):
    raise AssertionError("a module forked when imported")
os.fork = refuse
import faircl
failed = []
for info in pkgutil.walk_packages(faircl.__path__, "faircl."):
    if info.name.endswith(".__main__"):  # the command itself: it runs when imported, by design
        continue
    try:
        importlib.import_module(info.name)
    except ImportError as err:  # an optional dependency not installed: not what this checks
        print("skipped", info.name, err)
    except BaseException as err:
        failed.append(f"{info.name}: {type(err).__name__}: {err}")
assert "faircl.runs.pool" in sys.modules
print("\\n".join(failed) or "ok")
"""


def test_no_module_forks_or_fits_when_imported():
    """Importing every faircl module with ``os.fork`` refusing succeeds: no import-time warm-up, probe or server."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    res = subprocess.run([sys.executable, "-c", _NO_FORK], capture_output=True, text=True, timeout=600, env=env,
                         cwd=REPO)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip().splitlines()[-1] == "ok", res.stdout[-3000:]
    refused = subprocess.run([sys.executable, "-c", _NO_FORK.replace("import faircl\n", "import faircl\nos.fork()\n")],
                             capture_output=True, text=True, timeout=60, env=env, cwd=REPO)
    assert "a module forked when imported" in refused.stderr  # planted: the check does refuse a fork


_PRELOADED = """
import sys
from pathlib import Path
from faircl.runs.pool import RunPool
tmp = Path(sys.argv[1])
pool = RunPool()
assert pool.run("faircl.cli:main", (["configs"],), log=tmp / "configs.log") == 0
assert pool.run("faircl.cli:main", (["fit", "--config", "no/such"],), log=tmp / "bad.log") == 2
assert pool.run("test_run_pool:_imports_on_first_use", (str(tmp / "new.txt"),)) == 0
"""


@pytest.mark.slow
def test_the_faircl_command_through_a_preloaded_pool(tmp_path):
    """The product's pool (:data:`PRELOAD`, in a process of its own: the first pool of a process starts its server):
    the command runs, its output in the log, a usage error is exit 2; a forked vision run imports nothing heavy."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(Path(__file__).parent)}
    res = subprocess.run([sys.executable, "-c", _PRELOADED, str(tmp_path)], capture_output=True, text=True,
                         timeout=900, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "confair/biased_features" in (tmp_path / "configs.log").read_text()
    assert "no/such" in (tmp_path / "bad.log").read_text()
    assert (tmp_path / "new.txt").read_text() == ""


def _imports_on_first_use(out: str) -> int:
    """(In a forked run) the heavy modules that a vision run's data imports on first use and the server had not
    imported."""
    import contextlib
    import io

    before = set(sys.modules)
    from faircl.data import ColoredDigits

    with contextlib.redirect_stdout(io.StringIO()):
        ColoredDigits().setup("fit")
    new = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in ("sklearn", "scipy", "torch", "lightning"))
    Path(out).write_text("\n".join(new))
    return 0


@pytest.mark.slow
def test_a_trial_seed_the_method_refuses_ends_its_log_with_the_reason(tmp_path):
    """A searched value that only a trial meets (the sweep's pre-check passed another): exit 2 and the one-line
    reason as the log's last line, which is the line the sweep quotes."""
    import json

    from faircl.cli import study

    spec = {"fit_args": ["--config", "confair/biased_features", "--model.temperature=-1", "--trainer.max_epochs=1"],
            "seeds": [0], "storage": "", "study": "", "trial_id": 0, "trial": 0, "prune": None, "pruner": "none"}
    (tmp_path / "trial_spec.json").write_text(json.dumps(spec))
    log = tmp_path / "seed_0.log"
    assert RunPool(preload=()).run("faircl.cli.trial:run_seed", (str(tmp_path), 0), log=log) == 2
    assert log.read_text().strip().splitlines()[-1] == "faircl: error: ConFair: temperature must be > 0, got -1.0"
    assert study.PRUNED_EXIT != 2
