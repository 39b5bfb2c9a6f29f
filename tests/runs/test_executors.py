"""The local executors (:mod:`faircl.runs.executors`): a forked run and a fresh process each run ``target(*args)``,
report its status as it ends, and give the run the launcher and log its record names; a failing target is a status,
not an exception of the caller's."""

from __future__ import annotations

from pathlib import Path

import pytest

from faircl.runs.executors import FreshProcesses, Job, LocalPool, call_target, launch_info

HERE = Path(__file__).resolve().parent


def _jobs(tmp_path: Path) -> list[Job]:
    env = {"PYTHONPATH": str(HERE), "FAIRCL_TEST_VALUE": "seen"}
    out = []
    for name, target, args in (("writes", "write", (str(tmp_path / "written.txt"),)), ("three", "status_3", ()),
                               ("raises", "fail", ())):
        folder = tmp_path / name
        folder.mkdir()
        out.append(Job(name, f"slurm_job_targets:{target}", args, folder, folder / "run.log", env))
    return out


@pytest.mark.parametrize("executor", [LocalPool(preload=()), FreshProcesses()], ids=["local", "fresh"])
def test_each_job_ends_with_its_status_and_its_launcher_is_recorded(tmp_path, executor, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))  # the forked run imports the targets from this folder too
    ended: list[tuple[str, int, dict]] = []
    executor.run(_jobs(tmp_path), lambda job, code, info: ended.append((job.name, code, info)))
    assert [(name, code) for name, code, _ in ended] == [("writes", 0), ("three", 3), ("raises", 1)]
    assert all(info["launcher"] == executor.name and info["job_id"] is None for _, _, info in ended)
    assert (tmp_path / "written.txt").read_text().split() == [executor.name, "None", "seen"]
    assert "RuntimeError: a planted failure" in (tmp_path / "raises" / "run.log").read_text()
    assert "returning status 3" in (tmp_path / "three" / "run.log").read_text()


def test_call_target_appends_to_its_log_and_turns_an_exception_into_status_1(tmp_path, monkeypatch, capfd):
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.delenv("FAIRCL_LAUNCHER", raising=False)
    monkeypatch.delenv("FAIRCL_RUN_LOG", raising=False)
    for var in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID"):
        monkeypatch.delenv(var, raising=False)
    assert launch_info() == {"launcher": "direct", "job_id": None, "log": None}
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "12")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "3")
    assert launch_info()["job_id"] == "12_3" and launch_info()["launcher"] == "slurm"
    assert call_target("slurm_job_targets:fail", ()) == 1
    assert "a planted failure" in capfd.readouterr().err
