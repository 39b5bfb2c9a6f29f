"""`faircl sweep --launcher slurm` and the journal storage (`--storage journal:PATH`).

Without a cluster (these always run): `--launcher slurm` where no cluster answers is one line, exit 2, nothing made;
`--storage` is checked before anything (an unknown scheme, a journal whose folder cannot be written); a journal's
check of dead workers (a process gone, another host's worker left running, a trial with no owner) and a worker that
does not wait for ever on a trial it cannot check; a sweep on a journal file, resumed; a worker killed mid-trial, its
trial found dead by the next worker and run again. With the cluster (skipped, with the reason, where none answers;
`.ci/slurm-up` starts one): two workers as one array on one study in a journal file."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

from faircl.runs.user_error import UserError

FAIRCL = shutil.which("faircl", path=str(Path(sys.executable).parent)) or shutil.which("faircl")
FAST = ["--config", "confair/biased_features", "--data.n_train=384", "--data.n_val=128", "--data.n_test=256",
        "--data.batch_size=64", "--model.encoder_kwargs={hidden_dim: 16}", "--model.lr=0.01",
        "--trainer.max_epochs=2", "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
SEARCH = ["--search", "model.lambda_fair=log:0.01:10", "--objectives", "val/accuracy:max"]
needs_cli = pytest.mark.skipif(FAIRCL is None, reason="the faircl console command is not installed")


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **extra}
    env.pop("FAIRCL_DEBUG", None)
    return env


def start(*args: str, cwd: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen([FAIRCL, *args], cwd=cwd, env=_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(proc: subprocess.Popen, code: int = 0, timeout: float = 300) -> tuple[str, str]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == code, out[-3000:] + err[-3000:]
    return out, err


def journal_trials(folder: Path, journal: Path | None = None) -> list:
    import optuna

    from faircl.cli.study import open_storage

    storage = open_storage(f"journal:{journal or folder / 'study.journal'}")
    return optuna.load_study(study_name=folder.resolve().name, storage=storage).get_trials(deepcopy=False)


def check_trial_folders(folder: Path, complete: list) -> list[dict]:
    """Every complete trial has one folder holding one fit and one test run of its own arguments, as a sweep on a
    database leaves it; returns the seeds' records."""
    dirs = sorted(p.name for p in (folder / "trials").iterdir() if (p / "trial.json").is_file())
    assert dirs == [f"trial_{t.number:04d}" for t in complete]
    records = []
    for t in complete:
        trial_dir = folder / "trials" / f"trial_{t.number:04d}"
        info = json.loads((trial_dir / "trial.json").read_text())
        assert info["trial"] == t.number and info["params"] == t.params
        runs = sorted((trial_dir / "seed_0" / "lightning_logs").iterdir())
        assert [r.name for r in runs] == ["version_0", "version_1"]  # one fit, one test: run once
        fit_cfg = yaml.safe_load((runs[0] / "config.yaml").read_text())
        assert fit_cfg["model"]["init_args"]["lambda_fair"] == pytest.approx(t.params["model.lambda_fair"])
        assert (runs[0] / "checkpoints" / "last.ckpt").is_file() and (runs[1] / "report.json").is_file()
        assert info["mean"]["val/accuracy"] == pytest.approx(t.values[0])
        records.append(json.loads((trial_dir / "seed_0" / "run.json").read_text()))
    return records


def _one_error(err: str, *says: str) -> str:
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("faircl: error: "), err
    assert all(s in errors[0] for s in says), errors[0]
    assert "Traceback" not in err
    return errors[0]


# ---------------------------------------------------------------------------------------------------- no cluster
@needs_cli
def test_launcher_slurm_without_a_cluster_is_one_line_exit_2_and_makes_nothing(tmp_path):
    """No sbatch on PATH: refused before the pre-flight probe, nothing made (no sweep folder, no journal)."""
    proc = start("sweep", *FAST, *SEARCH, "--trials", "2", "--launcher", "slurm", "--workers", "2", "--out", "sw",
                 cwd=tmp_path, PATH=str(Path(FAIRCL).parent))
    _, err = finish(proc, 2, timeout=120)
    _one_error(err, "--launcher slurm: no SLURM cluster: sbatch is not on PATH", "--launcher local")
    assert not list(tmp_path.iterdir())


@needs_cli
def test_bad_storage_and_workers_are_one_line_and_exit_2_before_anything(tmp_path, monkeypatch, capsys):
    from faircl.cli.dispatch import main
    from faircl.cli.study import check_storage, journal_path

    monkeypatch.chdir(tmp_path)
    assert check_storage("journal:j/study.journal") == f"journal:{tmp_path.resolve() / 'j' / 'study.journal'}"
    assert check_storage("runs/s.log") == f"journal:{tmp_path.resolve() / 'runs' / 's.log'}"
    assert journal_path("journal:///srv/s.journal") == Path("/srv/s.journal")
    assert journal_path("sqlite:///x.log") is None and check_storage("postgresql://me@host/db") == "postgresql://me@host/db"
    assert not list(tmp_path.iterdir())  # checked, not made
    (tmp_path / "a_file").write_text("")
    cases = {"foo://x": "--storage foo://x: not a storage faircl knows; accepted: journal:PATH",
             "study.db": "--storage study.db: not a storage faircl knows; accepted: journal:PATH",
             "journal:": "no journal file named",
             "journal:a_file/study.journal": "cannot write the journal's folder",
             f"journal:{tmp_path}": "is a folder, not a journal file"}
    for url, says in cases.items():
        with pytest.raises(UserError, match=re.escape(says)):
            check_storage(url)
    capsys.readouterr()
    for i, (url, says) in enumerate(list(cases.items())[:2]):  # through the command: before the pre-flight probe
        assert main(["sweep", *FAST, *SEARCH, "--storage", url, "--out", f"sw{i}"]) == 2
        _one_error(capsys.readouterr().err, says)
    assert main(["sweep", *FAST, *SEARCH, "--workers", "2", "--out", "sw"]) == 2
    _one_error(capsys.readouterr().err, "--workers 2: expected 1, or with --launcher slurm")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(UserError, match="cannot write the journal's folder"):
            check_storage(f"journal:{locked}/study.journal")


def _worker(study, out: Path, url: str, trials: int):
    from faircl.cli.sweep import Worker
    from faircl.runs.executors import FreshProcesses

    definition = {"fit_args": [], "search": [], "objectives": [["val/accuracy", "maximize"]], "seeds": [0],
                  "sampler": None, "pruner": "none"}
    return Worker(study, definition, out, url, trials, heartbeat=1, executor=FreshProcesses())


def test_a_journal_fails_the_trials_of_dead_workers_only_and_never_waits_for_ever(tmp_path, capsys):
    """Running trials on a journal: a worker process that is gone, and a trial that never recorded its worker
    (older than a minute), are failed and queued again once; a live worker's trial and another host's are left
    running; a worker whose budget is filled by another host's trial stops waiting, saying so."""
    import optuna
    from optuna.trial import TrialState, create_trial

    from faircl.cli.study import OWNER, _started, fail_dead_trials, open_storage, this_worker
    from faircl.cli.sweep import work

    url = f"journal:{tmp_path / 'study.journal'}"
    study = optuna.create_study(study_name="s", storage=open_storage(url))
    gone = subprocess.Popen(["sleep", "60"])
    dead_owner = {"host": socket.gethostname(), "pid": gone.pid, "started": _started(gone.pid), "job_id": None}
    gone.kill()
    gone.wait()
    other = {"host": "elsewhere.invalid", "pid": 1, "started": None, "job_id": None}
    for owner in (dead_owner, this_worker(), other, None):
        trial = create_trial(state=TrialState.RUNNING, params={}, distributions={},
                             user_attrs={OWNER: owner} if owner else {})
        trial.datetime_start = datetime.now() - timedelta(minutes=5)
        study.add_trial(trial)
    recent = create_trial(state=TrialState.RUNNING, params={}, distributions={})  # its worker may be recording itself
    study.add_trial(recent)
    unknown = fail_dead_trials(study, heartbeat=1)
    assert [t.number for t in unknown] == [2]
    assert fail_dead_trials(study, heartbeat=1)[0].number == 2  # judged once: no second retry
    states = {t.number: t.state for t in study.get_trials()}
    assert states == {0: TrialState.FAIL, 1: TrialState.RUNNING, 2: TrialState.RUNNING, 3: TrialState.FAIL,
                      4: TrialState.RUNNING, 5: TrialState.WAITING, 6: TrialState.WAITING}
    retries = sorted(t.system_attrs["failed_trial"] for t in study.get_trials(states=(TrialState.WAITING,)))
    assert retries == [0, 3]
    assert capsys.readouterr().err.count("worker is gone") == 2

    # another study, its budget (1) filled by another host's running trial: work() returns at once, in one line
    lone = optuna.create_study(study_name="t", storage=open_storage(url))
    lone.add_trial(create_trial(state=TrialState.RUNNING, params={}, distributions={}, user_attrs={OWNER: other}))
    begun = time.monotonic()
    work(lone, _worker(lone, tmp_path, url, 1), trials=1, heartbeat=1)
    assert time.monotonic() - begun < 5
    said = [line for line in capsys.readouterr().err.splitlines() if "cannot check" in line]
    assert len(said) == 1 and "host elsewhere.invalid, pid 1" in said[0] and "--resume" in said[0]


@needs_cli
@pytest.mark.slow
def test_a_sweep_on_a_journal_file_runs_and_resumes(tmp_path):
    journal = tmp_path / "j" / "study.journal"
    _, err = finish(start("sweep", *FAST, *SEARCH, "--storage", f"journal:{journal.relative_to(tmp_path)}",
                          "--trials", "2", "--seeds", "1", "--out", "sw", cwd=tmp_path))
    assert "Traceback" not in err
    record = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    assert record["storage"] == f"journal:{journal.resolve()}"  # absolute: any worker's folder finds it
    assert not (tmp_path / "sw" / "study.db").exists()
    assert [t.state.name for t in journal_trials(tmp_path / "sw", journal)] == ["COMPLETE", "COMPLETE"]
    _, err = finish(start("sweep", "--out", "sw", "--resume", "--trials", "3", cwd=tmp_path))  # its storage, stored
    trials = journal_trials(tmp_path / "sw", journal)
    # the median pruner (from the third trial) reads the first two's epochs from the journal: it may prune the third
    assert [t.state.name for t in trials][:2] == ["COMPLETE"] * 2 and trials[2].state.name in ("COMPLETE", "PRUNED")
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    records = check_trial_folders(tmp_path / "sw", complete)
    assert {r["launcher"] for r in records} == {"local"} and all(t.user_attrs["worker"]["pid"] for t in trials)
    assert all(t.intermediate_values for t in trials)  # the pruning callback reported every epoch
    assert (tmp_path / "sw" / "trials.csv").is_file()


@needs_cli
@pytest.mark.slow
@pytest.mark.e2e
def test_a_killed_worker_on_a_journal_is_found_gone_and_its_trial_run_again(tmp_path):
    """SIGKILL in trial 1 of 2 (a 30 s heartbeat: no waiting for it on a journal): the resumed worker finds trial
    1's process gone at once, fails it and runs it again with the same arguments."""
    args = ["sweep", *FAST, *SEARCH, "--storage", "journal:sw/study.journal", "--trials", "2", "--out", "sw",
            "--pruner", "none"]
    worker = start(*args, cwd=tmp_path)
    spec = tmp_path / "sw" / "trials" / "trial_0001" / "trial_spec.json"
    deadline = time.time() + 240
    while not list(spec.parent.glob("seed_*.log")) and time.time() < deadline and worker.poll() is None:
        time.sleep(0.05)
    assert list(spec.parent.glob("seed_*.log")), worker.communicate()[1][-3000:]
    os.kill(worker.pid, signal.SIGKILL)
    worker.communicate()
    begun = time.time()
    _, err = finish(start("sweep", "--out", "sw", "--resume", cwd=tmp_path))
    trials = journal_trials(tmp_path / "sw")
    assert {t.number: t.state.name for t in trials} == {0: "COMPLETE", 1: "FAIL", 2: "COMPLETE"}, err[-2000:]
    assert trials[2].params == trials[1].params and trials[2].system_attrs["failed_trial"] == 1
    assert "trial 1's worker is gone (host " in err and "retry of trial 1" in err
    assert time.time() - begun < 120  # not 2 × 30 s of heartbeats, then the trial
    check_trial_folders(tmp_path / "sw", [trials[0], trials[2]])


# ---------------------------------------------------------------------------------------------------- cluster
@pytest.fixture()
def cluster():
    from faircl.runs.slurm import available

    reason = available()
    if reason:
        pytest.skip(reason)


def _on_cluster(args: list[str], cwd: Path, tries: int = 4) -> tuple[str, str]:
    """Run a sweep on the cluster; a node busy completing another's job reads as no node up for a moment (the sweep
    then refuses before it makes anything): try again."""
    for _ in range(tries):
        proc = start(*args, cwd=cwd)
        try:
            out, err = proc.communicate(timeout=480)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # the sweep cancels its array
                proc.communicate(timeout=60)
        if proc.returncode == 2 and "no SLURM node is up" in err:
            time.sleep(3)
            continue
        assert proc.returncode == 0, out[-3000:] + err[-5000:]
        return out, err
    pytest.skip("the cluster's node stayed busy")


@needs_cli
@pytest.mark.slow
@pytest.mark.e2e
def test_two_slurm_workers_share_one_study_in_a_journal(cluster, tmp_path):
    """`--launcher slurm --workers 2`: one array of two tasks; the study (a journal file by default, said in one
    line) gets the budget's 2 trials, run in the array's tasks as the seeds' records say; trial folders as on this
    machine; each task's end is reported with its job id and log; nothing is left in the queue."""
    _, err = _on_cluster(["sweep", *FAST, *SEARCH, "--trials", "2", "--seeds", "1", "--out", "sw", "--launcher",
                          "slurm", "--workers", "2", "--slurm.time_min", "10", "--slurm.cpus_per_task", "1"], tmp_path)
    assert "Traceback" not in err
    assert len([line for line in err.splitlines() if "the study is kept in" in line]) == 1
    ended = re.findall(r"faircl sweep: worker (\d) \(SLURM job (\d+_\d)\) done; log (\S+)", err)
    assert sorted(w for w, _, _ in ended) == ["0", "1"], err[-3000:]
    assert len({job.split("_")[0] for _, job, _ in ended}) == 1  # one array
    assert all(Path(tmp_path / log).is_file() for _, _, log in ended)
    trials = journal_trials(tmp_path / "sw")
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE"], err[-3000:]
    records = check_trial_folders(tmp_path / "sw", trials)
    assert all(r["launcher"] == "slurm" for r in records)
    # each seed ran in a task of the array (a task that started late may find the budget spent by the other)
    assert {r["job_id"] for r in records} <= {job for _, job, _ in ended}
    assert json.loads((tmp_path / "sw" / "sweep.json").read_text())["storage"].startswith("journal:")
    assert not (tmp_path / "sw" / "study.db").exists() and list((tmp_path / "sw" / "slurm").glob("*_log.out"))
    array = ended[0][1].split("_")[0]
    left = subprocess.run(["squeue", "-h", "-j", array], capture_output=True, text=True).stdout.strip()
    assert not left, left
