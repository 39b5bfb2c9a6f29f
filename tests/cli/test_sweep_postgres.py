"""`faircl sweep` on a real database server, as on many machines: a throwaway PostgreSQL server (the installed
``initdb`` / ``pg_ctl``, run as an unprivileged user when the tests run as root), two workers in separate processes
sharing one study through ``--storage postgresql://...`` (the second without the first's run folder: it reads the
sweep's definition from the study), one of them killed mid-trial, and a prompt resume that finishes the budget.
Skipped, with the reason, where no server can start (no binaries, no driver, no unprivileged user)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

FAIRCL = shutil.which("faircl", path=str(Path(sys.executable).parent)) or shutil.which("faircl")
FAST = ["--config", "confair/biased_features", "--data.n_train=384", "--data.n_val=128", "--data.n_test=256",
        "--data.batch_size=64", "--model.encoder_kwargs={hidden_dim: 16}", "--model.lr=0.01",
        "--trainer.max_epochs=2", "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
TRIALS = 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_user() -> tuple[list[str], pwd.struct_passwd | None]:
    """The command prefix that runs the server as an unprivileged user (PostgreSQL refuses root), and that user."""
    if os.geteuid() != 0:
        return [], None
    runuser = shutil.which("runuser")
    for name in ("postgres", "nobody"):
        try:
            user = pwd.getpwnam(name)
        except KeyError:
            continue
        if runuser:
            return [runuser, "-u", name, "--"], user
    pytest.skip("running as root and neither runuser nor a 'postgres' / 'nobody' user to run PostgreSQL as")


@pytest.fixture(scope="module")
def postgres_url():
    """A PostgreSQL server on a free local port for this module; its URL (user ``faircl``, trust authentication)."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if not (initdb and pg_ctl):
        pytest.skip("PostgreSQL's initdb / pg_ctl are not on PATH")
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        pytest.skip("no PostgreSQL driver: install the test extra (psycopg2-binary)")
    prefix, user = _as_user()
    root = Path(tempfile.mkdtemp(prefix="faircl-pg-"))
    if user is not None:
        os.chown(root, user.pw_uid, user.pw_gid)
    data, port = root / "data", _free_port()
    made = subprocess.run([*prefix, initdb, "-D", str(data), "-U", "faircl", "--auth=trust", "-E", "UTF8", "-N"],
                          capture_output=True, text=True)
    if made.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"initdb failed: {(made.stderr or made.stdout).strip().splitlines()[-1:]}")
    options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={root} -c fsync=off"
    started = subprocess.run([*prefix, pg_ctl, "-D", str(data), "-l", str(root / "server.log"), "-o", options, "-w",
                              "-t", "60", "start"], capture_output=True, text=True)
    if started.returncode != 0:
        log = (root / "server.log").read_text() if (root / "server.log").is_file() else started.stderr
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"the PostgreSQL server did not start: {log.strip().splitlines()[-1:]}")
    try:
        yield f"postgresql+psycopg2://faircl@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def _env() -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("FAIRCL_DEBUG", None)
    return env


def _start(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([FAIRCL, *args], cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _finish(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    return err


def _wait_for(path: Path, proc: subprocess.Popen, seconds: float = 300) -> None:
    deadline = time.time() + seconds
    while not path.is_file() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert path.is_file(), proc.communicate()[1][-3000:]


def _ran(log: str) -> list[int]:
    """The trial numbers a worker started (its ``faircl sweep: trial N {...}`` lines)."""
    return [int(line.split()[3]) for line in log.splitlines() if line.startswith("faircl sweep: trial ")]


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.skipif(FAIRCL is None, reason="the faircl console command is not installed")
def test_two_workers_on_postgres_one_killed_and_a_resume_finishes_the_budget(postgres_url, tmp_path):
    import optuna

    study_name = f"pg_{os.getpid()}_{int(time.time())}"
    args = ["sweep", *FAST, "--search", "model.lambda_fair=log:0.01:10", "--trials", str(TRIALS), "--out", "a",
            "--storage", postgres_url, "--study", study_name, "--heartbeat", "2", "--objectives",
            "val/accuracy:max", "--pruner", "none"]
    first = _start(*args, cwd=tmp_path)  # machine A: starts the sweep in its run folder a/
    _wait_for(tmp_path / "a" / "trials" / "trial_0000" / "trial_spec.json", first)  # the study exists
    # machine B: no shared folder; the definition comes from the study in the database
    second = _start("sweep", "--storage", postgres_url, "--study", study_name, "--resume", "--out", "b", cwd=tmp_path)
    logs = {}
    # Kill A in the middle of its second trial, once the trial has started: A has printed its "faircl sweep: trial N"
    # line (the log's record of who started what) and the run has opened seed_0.log. The folder and trial_spec.json
    # come before that line, so a kill as soon as they exist could land before it (seen on a loaded machine: the
    # trial was in the study but in no worker's log). A forked trial takes about a second here: kill at once.
    deadline, killed = time.time() + 400, None
    while time.time() < deadline and first.poll() is None:
        specs = sorted((tmp_path / "a" / "trials").glob("trial_*/trial_spec.json"))
        if len(specs) >= 2 and (specs[-1].parent / "seed_0.log").is_file():
            killed = specs[-1].parent.name
            break
        time.sleep(0.05)
    assert killed is not None, f"machine A started no second trial (exit status {first.poll()})"
    finished_before = (tmp_path / "a" / "trials" / killed / "seed_0" / "result.json").exists()
    os.kill(first.pid, signal.SIGKILL)
    logs["a"] = first.communicate()[1]
    assert first.returncode == -signal.SIGKILL, "machine A finished before it could be killed"
    assert not finished_before, "machine A's second trial finished before the kill: the test could not kill it"
    time.sleep(5.0)  # the killed worker's forked run must end with it, not finish the trial unseen
    assert not (tmp_path / "a" / "trials" / killed / "seed_0" / "result.json").exists(), \
        "the run of the killed worker's trial went on after its worker was killed"
    # machine A comes back at once: its sweep.json names the database
    resumed = _start("sweep", "--out", "a", "--resume", cwd=tmp_path)
    logs["b"], logs["a2"] = _finish(second), _finish(resumed)

    study = optuna.load_study(study_name=study_name, storage=postgres_url)
    trials = study.get_trials(deepcopy=False)
    states = {t.number: t.state.name for t in trials}
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    dead = int(killed.split("_")[1])
    print(f"\nstudy {study_name}: {states}; killed trial {dead}; trials started by A: {_ran(logs['a'])}, "
          f"by B: {_ran(logs['b'])}, by the resumed A: {_ran(logs['a2'])}")
    assert states[dead] == "FAIL" and TRIALS <= len(complete) <= TRIALS + 1  # two workers may overshoot by one
    assert [s for s in states.values() if s not in ("COMPLETE", "FAIL")] == []
    retry = [t for t in complete if t.system_attrs.get("failed_trial") == dead]
    assert len(retry) == 1 and retry[0].params == trials[dead].params
    started = _ran(logs["a"]) + _ran(logs["b"]) + _ran(logs["a2"])
    assert sorted(started) == sorted(states) and len(set(started)) == len(started)  # no trial started twice
    # every complete trial has one folder, with one fit and one test, in the run folder of the worker that ran it
    for t in complete:
        dirs = [d for d in (tmp_path / "a" / "trials" / f"trial_{t.number:04d}",
                            tmp_path / "b" / "trials" / f"trial_{t.number:04d}") if (d / "trial.json").is_file()]
        assert len(dirs) == 1, t.number
        info = json.loads((dirs[0] / "trial.json").read_text())
        assert info["trial"] == t.number and info["params"] == t.params
        runs = sorted(p.name for p in (dirs[0] / "seed_0" / "lightning_logs").iterdir())
        assert runs == ["version_0", "version_1"]
    assert not (tmp_path / "a" / "trials" / killed / "trial.json").exists()
