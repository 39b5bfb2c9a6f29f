"""The SLURM executor (:mod:`faircl.runs.slurm`) on a real cluster: the jobs of a run as one array, each job's exit
status, SLURM id and logs reported as it ends, a task cancelled with scancel reported as failed (and completed by a
second run), Ctrl-C while waiting cancels the array. These skip, with the reason, where no cluster answers
(``.ci/slurm-up`` starts a one-node one); the settings' checks run everywhere."""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

from faircl.runs.executors import Job
from faircl.runs.slurm import SlurmExecutor, SlurmSettings, available

HERE = Path(__file__).resolve().parent


@pytest.fixture()
def cluster(slurm_cluster, monkeypatch, caplog):
    """A cluster that answers (else skip); the jobs import :mod:`slurm_job_targets` from this folder. Afterwards:
    nothing was logged about sacct (the executor follows its jobs with squeue)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
    caplog.set_level(logging.INFO, logger="submitit")
    yield
    assert "sacct" not in caplog.text


def _job(tmp: Path, name: str, target: str, *args: str, **env: str) -> Job:
    folder = tmp / name
    folder.mkdir()
    return Job(name, f"slurm_job_targets:{target}", args, folder, folder / "run.log", env)


def _executor(tmp: Path) -> SlurmExecutor:
    return SlurmExecutor(SlurmSettings(time_min=10, log_folder=tmp / "submitit"))


def _run(tmp: Path, jobs: list[Job]) -> dict[str, tuple[int, dict]]:
    """Run ``jobs``; ``{name: (status, info)}`` in the order they ended."""
    ended: dict[str, tuple[int, dict]] = {}
    _executor(tmp).run(jobs, lambda job, code, info: ended.__setitem__(job.name, (code, info)))
    return ended


@contextmanager
def _when(path: Path, then):
    """While in the block, a thread: once ``path`` has text (a task started), ``then(text)``."""
    stop = threading.Event()

    def watch():
        while not stop.wait(0.2):
            if path.exists() and path.read_text().strip():
                return then(path.read_text().strip())

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)


@pytest.mark.e2e
def test_three_jobs_report_their_status_slurm_id_and_logs(cluster, tmp_path, capfd):
    out = tmp_path / "written.txt"
    jobs = [_job(tmp_path, "writes", "write", str(out), FAIRCL_TEST_VALUE="given"),
            _job(tmp_path, "three", "status_3"), _job(tmp_path, "raises", "fail")]
    ended = _run(tmp_path, jobs)
    assert {name: code for name, (code, _) in ended.items()} == {"writes": 0, "three": 3, "raises": 1}
    ids = {name: info["job_id"] for name, (_, info) in ended.items()}
    arrays = {job_id.split("_")[0] for job_id in ids.values()}
    assert len(arrays) == 1 and sorted(job_id.split("_")[1] for job_id in ids.values()) == ["0", "1", "2"]
    assert out.read_text().split() == ["slurm", ids["writes"], "given"]  # as the job's run record reads them
    for job in jobs:
        code, info = ended[job.name]
        assert info["launcher"] == "slurm" and info["log"] == str(job.log) and job.log.exists()
        assert Path(info["slurm_log"]).exists() and info["slurm_log"].startswith(str(tmp_path / "submitit"))
    assert "returning status 3" in jobs[1].log.read_text() and "submitit" not in jobs[1].log.read_text()
    assert "Job completed successfully" in Path(ended["three"][1]["slurm_log"]).read_text()
    assert "RuntimeError: a planted failure" in Path(ended["raises"][1]["log"]).read_text()
    assert "sacct" not in capfd.readouterr().err


@pytest.mark.e2e
def test_a_single_job_is_submitted_as_a_plain_job(cluster, tmp_path):
    out = tmp_path / "written.txt"
    code, info = _run(tmp_path, [_job(tmp_path, "alone", "write", str(out))])["alone"]
    assert code == 0 and info["job_id"].isdigit() and out.read_text().split() == ["slurm", info["job_id"], "None"]


@pytest.mark.e2e
def test_a_cancelled_job_is_reported_with_its_log_and_a_second_run_completes_it(cluster, tmp_path):
    started = tmp_path / "started"
    jobs = [_job(tmp_path, "sleeps", "sleep_once", str(started)),
            _job(tmp_path, "writes", "write", str(tmp_path / "written.txt"))]
    cancelled = []
    with _when(started, lambda task: cancelled.append(subprocess.run(["scancel", task]).returncode)):
        ended = _run(tmp_path, jobs)
    assert cancelled == [0]
    code, info = ended["sleeps"]
    assert code != 0 and info["state"] == "CANCELLED" and info["job_id"] == started.read_text().strip()
    assert Path(info["slurm_log"]).exists() and "sleeping" in Path(info["log"]).read_text()
    assert ended["writes"][0] == 0
    again = _run(tmp_path, jobs)
    assert {name: code for name, (code, _) in again.items()} == {"sleeps": 0, "writes": 0}
    assert "started before" in jobs[0].log.read_text()


@pytest.mark.e2e
def test_ctrl_c_while_waiting_cancels_the_array(cluster, tmp_path):
    jobs = [_job(tmp_path, f"sleeps{i}", "sleep", str(tmp_path / f"started{i}"), "300") for i in range(3)]
    ended: dict = {}
    with _when(tmp_path / "started0", lambda _: os.kill(os.getpid(), signal.SIGINT)):
        with pytest.raises(KeyboardInterrupt, match=r"cancelled SLURM job array \d+ \(3 jobs\)") as err:
            _executor(tmp_path).run(jobs, lambda job, code, info: ended.__setitem__(job.name, code))
    array = re.search(r"array (\d+)", str(err.value)).group(1)
    assert ended == {}
    listed = subprocess.run(["squeue", "-h", "-r", "-j", array, "-o", "%i %T"], capture_output=True, text=True)
    assert listed.stdout.strip() == ""  # none pending or running (the array's tasks all ended, CANCELLED)


def test_no_cluster_is_reported_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert available() == "no SLURM cluster: sbatch is not on PATH"


def test_settings_from_a_mapping():
    s = SlurmSettings.from_mapping({"partition": "gpu", "gpus_per_task": 1, "mem_gb": 7.5, "log_folder": "logs/s",
                                    "extra_sbatch": ["qos=high", "--account=fair", "#SBATCH --exclusive"]})
    assert (s.partition, s.gpus_per_task, s.cpus_per_task, s.mem_gb, s.log_folder) == ("gpu", 1, 1, 7.5, Path("logs/s"))
    assert s.sbatch_options() == {"qos": "high", "account": "fair", "exclusive": True}
    assert SlurmSettings.from_mapping({}) == SlurmSettings()


@pytest.mark.parametrize(("section", "message"), [
    ({"partitoin": "gpu"}, r"sweep\.yaml slurm: unknown key 'partitoin' \(accepted: partition, gpus_per_task, "),
    ({"cpus_per_task": "4"}, r"slurm\.cpus_per_task: expected an integer >= 1, got '4'"),
    ({"time_min": 0}, r"slurm\.time_min: expected an integer >= 1, got 0"),
    ({"gpus_per_task": True}, r"slurm\.gpus_per_task: expected an integer >= 0, got True"),
    ({"mem_gb": "8G"}, r"slurm\.mem_gb: expected a number of GB > 0, got '8G'"),
    ({"partition": 3}, r"slurm\.partition: expected a partition name"),
    ({"extra_sbatch": "qos=high"}, r"slurm\.extra_sbatch: expected a list of sbatch options"),
    ({"extra_sbatch": ["qos="]}, r"slurm\.extra_sbatch: 'qos=' is not an sbatch option"),
    ({"log_folder": 5}, r"slurm\.log_folder: expected a folder path, got 5"),
])
def test_settings_name_the_key_they_refuse(section, message):
    where = "sweep.yaml slurm" if "partitoin" in section else "slurm"
    with pytest.raises(ValueError, match=message):
        SlurmSettings.from_mapping(section, where)
