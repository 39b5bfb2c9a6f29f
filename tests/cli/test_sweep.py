"""`faircl sweep` and `faircl compare` through the console command, in separate processes: two workers on one
embedded study, compare on it, resume after SIGKILL mid-trial, one-line errors before training, constrained selection
against a hand-computed answer; plus the parsing of search ranges and objectives."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from faircl.runs.user_error import UserError
from faircl.cli.search import parse_objectives, parse_search

FAIRCL = shutil.which("faircl", path=str(Path(sys.executable).parent)) or shutil.which("faircl")
FAST = ["--config", "confair/biased_features", "--data.n_train=384", "--data.n_val=128", "--data.n_test=256",
        "--data.batch_size=64", "--model.encoder_kwargs={hidden_dim: 16}", "--model.lr=0.01",
        "--trainer.max_epochs=2", "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
needs_cli = pytest.mark.skipif(FAIRCL is None, reason="the faircl console command is not installed")


def _env() -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("FAIRCL_DEBUG", None)
    return env


def start(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([FAIRCL, *args], cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(proc: subprocess.Popen, code: int = 0) -> tuple[str, str]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == code, out[-3000:] + err[-3000:]
    return out, err


def study_trials(folder: Path) -> list:
    import optuna

    storage = f"sqlite:///{(folder / 'study.db').resolve()}"
    return optuna.load_study(study_name=folder.resolve().name, storage=storage).get_trials(deepcopy=False)


def check_trial_folders(folder: Path, complete: list) -> None:
    """Every complete trial has one folder holding one fit and one test run of its own arguments."""
    dirs = sorted(p.name for p in (folder / "trials").iterdir() if (p / "trial.json").is_file())
    assert dirs == [f"trial_{t.number:04d}" for t in complete]
    for t in complete:
        trial_dir = folder / "trials" / f"trial_{t.number:04d}"
        info = json.loads((trial_dir / "trial.json").read_text())
        assert info["trial"] == t.number and info["params"] == t.params
        runs = sorted((trial_dir / "seed_0" / "lightning_logs").iterdir())
        assert [r.name for r in runs] == ["version_0", "version_1"]  # one fit, one test: run once
        fit_cfg = yaml.safe_load((runs[0] / "config.yaml").read_text())
        assert fit_cfg["model"]["init_args"]["lambda_fair"] == pytest.approx(t.params["model.lambda_fair"])
        assert (runs[0] / "checkpoints" / "last.ckpt").is_file() and list(runs[0].glob("checkpoints/best-*.ckpt"))
        assert (runs[1] / "report.json").is_file() and (runs[1] / "report.png").is_file()
        assert info["mean"]["val/accuracy"] == pytest.approx(t.values[0])


# ---------------------------------------------------------------------------------------------------- parsing
def test_search_ranges_parse_and_malformed_ones_are_one_line_errors():
    p = parse_search("model.lambda_fair=log:0.01:10")
    assert (p.path, p.kind, p.low, p.high, p.log) == ("model.lambda_fair", "float", 0.01, 10.0, True)
    assert parse_search("model.init_args.temperature=0.05:1:0.05").step == 0.05
    assert parse_search("model.init_args.temperature=0.05:1").path == "model.temperature"
    q = parse_search("data.batch_size=int:log:16:256")
    assert (q.kind, q.log, q.low, q.high) == ("int", True, 16, 256)
    c = parse_search("model.fcl_conditioning=choice:none,class")
    assert c.choices == ("none", "class") and parse_search("model.leakage=choice:true,false").choices == (True, False)
    for bad, says in [("model.lambda_fair", "expected PATH="), ("model.lambda_fair=1", "expected PATH="),
                      ("model.lambda_fair=log:0:1", "LOW > 0"), ("model.lambda_fair=2:1", "LOW must be below"),
                      ("model.lambda_fair=a:1", "not a number"), ("optimizer.lr=0:1", "must start with model."),
                      ("model.num_layers=int:1.5:4", "whole-number"), ("model.x=choice:a,,b", "separated by commas"),
                      ("model.x=0:1:5", "STEP"), ("model.x=nan:1", "finite")]:
        with pytest.raises(UserError, match=says) as err:
            parse_search(bad)
        assert "\n" not in str(err.value)
    assert parse_objectives("val/accuracy:max,val/tpr_gap_rms:min") == [("val/accuracy", "maximize"),
                                                                        ("val/tpr_gap_rms", "minimize")]
    for bad in ("val/accuracy", "val/accuracy:up", "test/accuracy:max", "val/dto:min,val/dto:max"):
        with pytest.raises(UserError):
            parse_objectives(bad)


# ---------------------------------------------------------------------------------------------------- sweep
@needs_cli
@pytest.mark.slow
@pytest.mark.e2e
def test_two_workers_share_one_study_then_compare_draws_the_front(tmp_path):
    """Two worker processes on one embedded study at once (4 trials): no trial lost or run twice; `faircl compare`
    on the sweep: one row per trial, a non-empty front without dominated settings, a valid PNG."""
    args = ["sweep", *FAST, "--search", "model.lambda_fair=log:0.01:10", "--trials", "4",
            "--objectives", "val/accuracy:max,val/tpr_gap_rms:min", "--out", "sw", "--heartbeat", "2"]
    workers = [start(*args, cwd=tmp_path)]
    deadline = time.time() + 120
    while not (tmp_path / "sw" / "sweep.json").is_file() and time.time() < deadline and workers[0].poll() is None:
        time.sleep(0.2)
    workers.append(start(*args, "--resume", cwd=tmp_path))  # a second worker joins the sweep
    logs = [finish(w)[1] for w in workers]
    assert not any("limit_val_batches" in log for log in logs)  # the pre-flight probe's own setting: no note
    trials = study_trials(tmp_path / "sw")
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert len(complete) == len(trials) and 4 <= len(trials) <= 5  # two workers asking at once may add one
    ran = [{int(line.split()[3]) for line in log.splitlines() if line.startswith("faircl sweep: trial ")}
           for log in logs]
    assert ran[0] and ran[1] and not ran[0] & ran[1] and ran[0] | ran[1] == {t.number for t in trials}
    check_trial_folders(tmp_path / "sw", complete)

    out, _ = finish(start("compare", "sw", "--out", "cmp", "--select", "accuracy>=0.5", "--minimise", "dp_gap",
                          cwd=tmp_path))
    assert "runs in" in out
    with (tmp_path / "cmp" / "runs.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(complete) and sorted(int(r["trial"]) for r in rows) == [t.number for t in complete]
    assert all(Path(tmp_path / r["checkpoint"]).is_file() for r in rows)
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    pts = {s["name"]: (s["mean"]["accuracy"], s["mean"]["tpr_gap_rms"]) for s in result["settings"]}
    front = set(result["front"])
    assert front

    def dominated(name):
        a, g = pts[name]
        return any(a2 >= a and g2 <= g and (a2 > a or g2 < g) for other, (a2, g2) in pts.items() if other != name)

    assert all(not dominated(n) for n in front) and all(dominated(n) for n in set(pts) - front)
    png = (tmp_path / "cmp" / "front.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    assert matplotlib.image.imread(str(tmp_path / "cmp" / "front.png")).shape[0] > 100


def _trial_children(marker: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "faircl.cli.trial" in cmd and marker in cmd:
                pids.append(int(proc.name))
    return pids


@needs_cli
@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="looks for the trial's process in /proc")
def test_a_killed_sweep_resumes_keeping_finished_trials_and_retrying_the_interrupted_one(tmp_path):
    args = ["sweep", *FAST, "--search", "model.lambda_fair=log:0.01:10", "--trials", "2", "--out", "sw",
            "--heartbeat", "1", "--objectives", "val/accuracy:max"]
    worker = start(*args, cwd=tmp_path)
    spec = tmp_path / "sw" / "trials" / "trial_0001" / "trial_spec.json"
    deadline = time.time() + 240
    while not spec.is_file() and time.time() < deadline and worker.poll() is None:
        time.sleep(0.2)
    assert spec.is_file(), worker.communicate()[1][-3000:]
    # kill once trial 1's run has started (its log exists): a fixed pause could outlast a fast run and kill nothing
    while not list(spec.parent.glob("seed_*.log")) and time.time() < deadline and worker.poll() is None:
        time.sleep(0.02)
    assert list(spec.parent.glob("seed_*.log")), "trial 1's run never started"
    finished = tmp_path / "sw" / "trials" / "trial_0000"
    kept = {p: p.stat().st_mtime for p in finished.rglob("*") if p.is_file()}
    os.kill(worker.pid, signal.SIGKILL)
    worker.communicate()
    marker = str(spec.parent)
    for _ in range(50):  # the trial's process follows its worker (no orphan writing into the sweep)
        if not _trial_children(marker):
            break
        time.sleep(0.1)
    assert not _trial_children(marker)

    assert json.loads((tmp_path / "sw" / "sweep.json").read_text())["heartbeat"] == 1
    _, err = finish(start("sweep", "--out", "sw", "--resume", cwd=tmp_path))  # the heartbeat stored with the study
    trials = study_trials(tmp_path / "sw")
    states = {t.number: t.state.name for t in trials}
    assert states == {0: "COMPLETE", 1: "FAIL", 2: "COMPLETE"}, err[-2000:]
    assert trials[2].params == trials[1].params and trials[2].system_attrs["failed_trial"] == 1
    assert "retry of trial 1" in err
    assert {p: p.stat().st_mtime for p in finished.rglob("*") if p.is_file()} == kept
    check_trial_folders(tmp_path / "sw", [trials[0], trials[2]])
    assert not (tmp_path / "sw" / "trials" / "trial_0001" / "trial.json").exists()


def _wait_for(path: Path, proc: subprocess.Popen, seconds: float = 240) -> None:
    deadline = time.time() + seconds
    while not path.is_file() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert path.is_file(), proc.communicate()[1][-3000:]


@needs_cli
@pytest.mark.slow
@pytest.mark.long  # an extra resume case (about two minutes); the killed-sweep resume test runs always
def test_a_prompt_resume_retries_the_killed_trial_after_its_own_last_trial(tmp_path):
    """A worker (30 s heartbeats, so its dead trial looks alive for a minute) is killed in trial 1 of 3. A prompt
    resume runs trial 2, then finds the budget spent by the dead "running" trial 1: it waits (at the stored
    heartbeat) until trial 1 is found stale and runs its retry. Every trial of the budget completes, none twice."""
    args = ["sweep", *FAST, "--search", "model.lambda_fair=log:0.01:10", "--trials", "3", "--out", "sw",
            "--heartbeat", "30", "--objectives", "val/accuracy:max", "--pruner", "none"]
    worker = start(*args, cwd=tmp_path)
    _wait_for(tmp_path / "sw" / "trials" / "trial_0001" / "trial_spec.json", worker)
    os.kill(worker.pid, signal.SIGKILL)
    worker.communicate()
    begun = time.time()
    _, err = finish(start("sweep", "--out", "sw", "--resume", cwd=tmp_path))
    trials = study_trials(tmp_path / "sw")
    states = {t.number: t.state.name for t in trials}
    assert states == {0: "COMPLETE", 1: "FAIL", 2: "COMPLETE", 3: "COMPLETE"}, err[-2000:]
    assert trials[3].params == trials[1].params and trials[3].system_attrs["failed_trial"] == 1
    assert "retry of trial 1" in err and time.time() - begun >= 60  # the dead trial was judged at 2 × 30 s
    check_trial_folders(tmp_path / "sw", [trials[0], trials[2], trials[3]])


@needs_cli
def test_resume_refuses_a_folder_without_a_sweep_and_a_changed_heartbeat(tmp_path, monkeypatch, capsys):
    """`--resume` on a folder that holds no sweep (a typo) is one line and exit 2, with or without a definition,
    and creates nothing; a resume with another --heartbeat than the study's is refused the same way."""
    procs = {"bare": start("sweep", "--resume", "--out", "typo_dir", cwd=tmp_path),
             "defined": start("sweep", *FAST, "--search", "model.lambda_fair=0:1", "--trials", "1", "--resume",
                              "--out", "typo_dir2", cwd=tmp_path)}
    for name, proc in procs.items():
        out, err = finish(proc, 2)
        errors = [line for line in (out + err).splitlines() if "error" in line]
        assert len(errors) == 1 and errors[0].startswith("faircl: error: --resume: ") and "holds no sweep" in errors[0]
        assert "Traceback" not in err and len(err.strip().splitlines()) <= 2, err  # the error and the --debug hint
    assert not (tmp_path / "typo_dir").exists() and not (tmp_path / "typo_dir2").exists()

    from faircl.cli.dispatch import main

    (tmp_path / "sw").mkdir()
    record = {"fit_args": FAST, "search": [], "objectives": [["val/accuracy", "maximize"]], "seeds": [0],
              "sampler": None, "pruner": "none", "storage": "sqlite:///x.db", "study": "sw", "trials": 2,
              "heartbeat": 1}
    (tmp_path / "sw" / "sweep.json").write_text(json.dumps(record))
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["sweep", "--out", "sw", "--resume", "--heartbeat", "5"]) == 2
    err = capsys.readouterr().err
    assert "--heartbeat 5: the sweep in 'sw' beats every 1 s" in err and "Traceback" not in err
    assert not (tmp_path / "x.db").exists()
    # a database URL whose driver is not installed: one line naming the URL without its password
    import importlib.util

    if importlib.util.find_spec("psycopg") is None:
        url = "postgresql+psycopg://me:secret@127.0.0.1:9/db"
        assert main(["sweep", "--storage", url, "--study", "s", "--resume", "--out", "elsewhere"]) == 2
        err = capsys.readouterr().err
        assert "--storage postgresql+psycopg://me:***@127.0.0.1:9/db: no database driver" in err
        assert "secret" not in err and "Traceback" not in err


@needs_cli
@pytest.mark.slow
@pytest.mark.e2e
def test_sigterm_of_a_worker_is_one_line_exit_130_and_requeues_its_trial(tmp_path):
    args = ["sweep", *FAST, "--search", "model.lambda_fair=log:0.01:10", "--trials", "2", "--out", "sw",
            "--objectives", "val/accuracy:max"]
    worker = start(*args, cwd=tmp_path)
    _wait_for(tmp_path / "sw" / "trials" / "trial_0000" / "trial_spec.json", worker)
    time.sleep(2.0)  # the trial's process is starting or training
    worker.send_signal(signal.SIGTERM)
    out, err = finish(worker, 130)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "failed with" not in err, err[-3000:]
    assert "limit_val_batches" not in err
    said = [line for line in err.splitlines() if "interrupted" in line]
    assert len(said) == 1 and "faircl sweep --out sw --resume" in said[0]
    states = sorted(t.state.name for t in study_trials(tmp_path / "sw"))
    assert states == ["FAIL", "WAITING"]  # the interrupted trial is queued again for the next worker


@needs_cli
@pytest.mark.slow
def test_bad_input_is_one_line_and_exit_2_before_any_training(tmp_path, monkeypatch, capsys):
    from faircl.cli.dispatch import main

    base = ["sweep", *FAST, "--trials", "2"]
    cases = {
        "unknown": (["--search", "model.lambda_fcll=0:1"], "ConFair has no argument 'lambda_fcll'"),
        "malformed": (["--search", "model.lambda_fair=log:0:1"], "a log range needs LOW > 0"),
        "objective": (["--search", "model.lambda_fair=0:1", "--objectives", "val/acc:max"], "never logs 'val/acc'"),
        "linked": (["--search", "model.num_groups=int:2:4"], "linked from the datamodule"),
    }
    # two through the console command, in parallel; two in this process (the same entry point)
    procs = {k: start(*base, *cases[k][0], "--out", k, cwd=tmp_path) for k in ("unknown", "objective")}
    errs = {k: finish(p, 2)[1] for k, p in procs.items()}
    monkeypatch.chdir(tmp_path)
    for k in ("malformed", "linked"):
        capsys.readouterr()
        assert main([*base, *cases[k][0], "--out", k]) == 2
        errs[k] = capsys.readouterr().err
    for name, err in errs.items():
        errors = [line for line in err.splitlines() if "error" in line]
        assert len(errors) == 1 and errors[0].startswith("faircl: error: ") and cases[name][1] in errors[0], err
        assert "Traceback" not in err
        assert not (tmp_path / name / "trials").exists() and not (tmp_path / name / "study.db").exists()


# ---------------------------------------------------------------------------------------------------- compare
def _fake_run(root: Path, name: str, lam: float, seed: int, val: dict, test: dict, method: str = "ConFair") -> None:
    """The files `faircl fit` + `faircl test` leave: a fit run with metrics.csv and a checkpoint, a test run."""
    fit, tst = root / name / "lightning_logs" / "version_0", root / name / "lightning_logs" / "version_1"
    (fit / "checkpoints").mkdir(parents=True)
    tst.mkdir(parents=True)
    ckpt = fit / "checkpoints" / "best-epoch=2-step=30.ckpt"
    ckpt.write_bytes(b"")
    keys = sorted(val)
    lines = ["epoch,step," + ",".join(f"val/{k}" for k in keys), "1,19," + ",".join("0.1" for _ in keys),
             "2,29," + ",".join(str(val[k]) for k in keys)]
    (fit / "metrics.csv").write_text("\n".join(lines) + "\n")
    init = {"lambda_fair": lam} if method == "ConFair" else {}
    config = {"seed_everything": seed, "model": {"class_path": f"faircl.methods.{method}", "init_args": init},
              "data": {"class_path": "faircl.data.BiasedFeatures", "init_args": {"bias": 0.8}},
              "trainer": {"default_root_dir": str(root / name)}}
    (tst / "config.yaml").write_text(yaml.safe_dump(config))
    (tst / "report.json").write_text(json.dumps({"metrics": test, "meta": {"checkpoint": str(ckpt)}}))


@needs_cli
@pytest.mark.slow
def test_constrained_selection_dto_and_baseline_against_hand_computed_answers(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(0)
    # (lambda, val accuracy, val gap) per setting; three seeds each, jittered
    table = {0.0: (0.90, 0.20), 0.1: (0.86, 0.12), 0.5: (0.82, 0.07), 1.0: (0.79, 0.03), 5.0: (0.70, 0.01)}
    vals: dict[float, list[tuple[float, float]]] = {}
    tests: dict[float, list[dict]] = {}
    for lam, (acc, gap) in table.items():
        for seed in range(3):
            va, vg = acc + rng.normal(0, 0.004), gap + rng.normal(0, 0.004)
            test = {"accuracy": va - 0.01, "balanced_accuracy": va - 0.02, "tpr_gap_rms": vg + 0.01,
                    "dp_gap": vg / 2, "leakage_h": 0.6}
            vals.setdefault(lam, []).append((va, vg))
            tests.setdefault(lam, []).append(test)
            method = "CE" if lam == 0.0 else "ConFair"
            _fake_run(tmp_path / "runs", f"lam{lam}_s{seed}", lam, seed,
                      {"accuracy": va, "tpr_gap_rms": vg, "balanced_accuracy": va - 0.01}, test, method)
    out, _ = finish(start("compare", "runs", "--out", "cmp", "--select", "accuracy>=0.80", "--minimise", "tpr_gap_rms",
                          "--baseline", "model=CE", cwd=tmp_path))
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert result["split"] == "val"
    name = {tuple(s["values"].get(k) for k in ("model", "model.lambda_fair")): s["name"] for s in result["settings"]}
    by_lam = {lam: next(n for (m, lf), n in name.items() if (lf if lf is not None else 0.0) == lam) for lam in table}

    # by hand: the mean validation accuracy >= 0.80 and the lowest mean validation gap among those
    ok = {lam: np.mean([v[1] for v in vs]) for lam, vs in vals.items() if np.mean([v[0] for v in vs]) >= 0.80}
    assert result["selected"]["min tpr_gap_rms s.t. accuracy>=0.8"] == by_lam[min(ok, key=ok.get)] == by_lam[0.5]
    dto = {lam: np.mean([math.hypot(1 - a, g) for a, g in vs]) for lam, vs in vals.items()}
    assert result["selected"]["DTO"] == by_lam[min(dto, key=dto.get)]
    bal = {lam: np.mean([math.hypot(1 - (a - 0.01), g) for a, g in vs]) for lam, vs in vals.items()}
    assert result["selected"]["balanced DTO"] == by_lam[min(bal, key=bal.get)]
    with (tmp_path / "cmp" / "runs.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 15

    # baseline (CE): the paired-seed difference of the test gap is the mean of the per-seed differences
    base = result["baseline"]
    assert base["setting"] == by_lam[0.0]
    diff = base["differences"][by_lam[5.0]]["tpr_gap_rms"]
    hand = np.mean([tests[5.0][s]["tpr_gap_rms"] - tests[0.0][s]["tpr_gap_rms"] for s in range(3)])
    assert diff["mean"] == pytest.approx(hand) and diff["lo"] < diff["mean"] < diff["hi"]
    words = {v["verdict"] for v in base["verdicts"]}
    from faircl.eval.verdicts import WORDS

    assert words <= set(WORDS)
    assert len(base["verdicts"]) == 4 and "**" in (tmp_path / "cmp" / "baseline.md").read_text()

    # a constraint nothing meets, an unknown metric, a malformed constraint (same entry point, in this process)
    from faircl.cli.dispatch import main

    monkeypatch.chdir(tmp_path)
    assert main(["compare", "runs", "--out", "cmp2", "--select", "accuracy>=0.99"]) == 0
    assert "none satisfies" in (tmp_path / "cmp2" / "selection.md").read_text()
    selected = json.loads((tmp_path / "cmp2" / "compare.json").read_text())["selected"]
    assert selected["min tpr_gap_rms s.t. accuracy>=0.99"] is None
    capsys.readouterr()
    assert main(["compare", "runs", "--out", "cmp3", "--select", "acc>=0.5"]) == 2
    assert "no run reports 'acc'" in capsys.readouterr().err
    assert main(["compare", "runs", "--out", "cmp4", "--select", "accuracy=>0.5"]) == 2
    assert "expected METRIC>=VALUE" in capsys.readouterr().err
    assert main(["compare", "runs", "--out", "cmp", "--select", "accuracy>=0.5"]) == 2  # no overwriting
    assert "--overwrite" in capsys.readouterr().err
