"""``faircl bench`` as a researcher runs it: a class of their own, in a .py file of a fresh folder, through a suite of
protocols, against cached baselines, with planted answers.

- CE under another name never reads a fall or a rise on a protocol with a real bias;
- a method whose predictions ignore the attribute (it projects the attribute's directions out of the features before
  the encoder) lowers the gap there: "holds";
- on the attribute-permuted control every claim reads "untestable", for both;
- the second method reuses the first one's baseline runs (not retrained), and a bench killed mid-way resumes.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

FAIRCL = shutil.which("faircl", path=str(Path(sys.executable).parent)) or shutil.which("faircl")

PROTOCOL = """\
name: biased
version: 1
title: BiasedFeatures, tiny (the attribute is a shortcut in train)
input_kind: features
views: true
data:
  class_path: BiasedFeatures
  init_args: {n_train: 600, n_val: 300, n_test: 600, dim: 12, bias: 0.9, class_sep: 1.0, group_sep: 2.0,
              batch_size: 64, seed: 0}
model: {encoder: mlp, encoder_kwargs: {hidden_dim: 16}, lr: 0.01}
trainer: {max_epochs: 3}
selection: {monitor: val/accuracy, mode: max}
seeds: 3
baselines:
  CE: {class_path: CE}
claims:
  - {gap: tpr_gap_rms, baseline: CE}
"""
CONTROL = """\
name: biased_permuted
extends: biased
version: 1
title: the same with the attribute permuted (control)
control: true
data: {init_args: {permute_attribute: true}}
"""
PLANTED = '''\
import torch
from faircl.methods import CE


class Renamed(CE):
    """CE under another name: it removes nothing."""


class IgnoresAttribute(CE):
    """CE on the features with the attribute's directions projected out (the mean difference between groups within
    each class, from the training rows): its predictions cannot depend on the attribute's direction."""

    def __init__(self, input_dim: int = 0, **kwargs):
        super().__init__(input_dim=input_dim, **kwargs)
        self.register_buffer("keep", torch.eye(max(input_dim, 1)))

    def on_fit_start(self):
        super().on_fit_start()
        ds = self.trainer.datamodule.splits["train"]
        x, y, a = torch.as_tensor(ds.x, dtype=torch.float32), ds.y, ds.a
        dirs = []
        for c in y.unique():
            ref = x[(y == c) & (a == 0)]
            for g in a.unique():
                rows = x[(y == c) & (a == g)]
                if g > 0 and len(rows) and len(ref):
                    dirs.append(rows.mean(0) - ref.mean(0))
        u, s, _ = torch.linalg.svd(torch.stack(dirs).T, full_matrices=False)
        basis = u[:, s > s.max() * 1e-6]
        self.keep.copy_(torch.eye(x.shape[1]) - basis @ basis.T)

    def encode(self, x):
        return super().encode(x @ self.keep)
'''

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.skipif(FAIRCL is None, reason="the faircl console command is not "
                                                                             "installed")]


def _env() -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("FAIRCL_DEBUG", None)
    env.pop("PYTHONPATH", None)  # the user's class is found from the current folder, as for a user
    return env


def _bench(folder: Path, method: str, out: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([FAIRCL, "bench", "protocols", "--method", f"planted.{method}", "--out", out,
                             "--cache", "cache", "--permutations", "200", "--bootstrap", "400"], cwd=folder,
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _done(proc: subprocess.Popen) -> tuple[str, str]:
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    return out, err


def _verdicts(folder: Path) -> dict[str, list[str]]:
    with open(folder / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(r["protocol"], []).append(r["verdict"])
    return out


@pytest.fixture(scope="module")
def benched(tmp_path_factory):
    """The two planted methods through a two-protocol suite, from a fresh folder; the second one killed once."""
    root = tmp_path_factory.mktemp("bench")
    (root / "protocols").mkdir()
    (root / "protocols" / "biased.yaml").write_text(PROTOCOL)
    (root / "protocols" / "biased_permuted.yaml").write_text(CONTROL)
    (root / "planted.py").write_text(textwrap.dedent(PLANTED))
    first = _done(_bench(root, "Renamed", "renamed"))
    baseline_runs = sorted((root / "cache").rglob("run.json"))
    stamps = {p: p.stat().st_mtime_ns for p in baseline_runs}
    # the second method: killed after its first run, then run again
    killed = _bench(root, "IgnoresAttribute", "ignores")
    deadline = time.time() + 300
    while time.time() < deadline and killed.poll() is None and not list((root / "ignores").rglob("run.json")):
        time.sleep(0.2)
    killed.send_signal(signal.SIGKILL)
    killed.communicate()
    finished_before = len(list((root / "ignores").rglob("run.json")))
    second = _done(_bench(root, "IgnoresAttribute", "ignores"))
    return {"root": root, "first": first, "second": second, "baseline_runs": baseline_runs, "stamps": stamps,
            "killed_code": killed.returncode, "finished_before": finished_before}


def test_ce_under_another_name_never_holds_and_the_control_is_untestable(benched):
    out, err = benched["first"]
    verdicts = _verdicts(benched["root"] / "renamed")
    assert verdicts["biased"] and all(v in ("no change", "no fall shown", "inconclusive") for v in verdicts["biased"]), verdicts
    assert verdicts["biased_permuted"] == ["untestable"] * len(verdicts["biased_permuted"]), verdicts
    assert "| biased |" in out and "**untestable**" in out  # the table is printed
    for name in ("results.md", "results.csv", "tradeoff.png", "bench.json"):
        assert (benched["root"] / "renamed" / name).is_file(), name
    info = json.loads((benched["root"] / "renamed" / "bench.json").read_text())
    assert info["method"]["class_path"] == "planted.Renamed"
    assert len(info["runs"]) == 12 and all("report" in r for r in info["runs"])  # 2 protocols x 3 seeds x 2
    assert "12 runs" in err


def test_a_method_that_ignores_the_attribute_lowers_the_gap_where_the_bias_is_real(benched):
    verdicts = _verdicts(benched["root"] / "ignores")
    assert verdicts["biased_permuted"] == ["untestable"], verdicts
    with open(benched["root"] / "ignores" / "results.csv") as fh:
        row = next(r for r in csv.DictReader(fh) if r["protocol"] == "biased")
    assert float(row["method_gap"]) < float(row["baseline_gap"]) and float(row["effect_hi"]) < 0
    # the fall is found on both gap axes; on 3 seeds of 600 rows the utility axis may stay open
    assert (row["direction"], row["size"]) == ("lowers", "reaches"), row
    assert row["verdict"] == ("reproduces" if row["utility"] == "kept" else "inconclusive"), row


def test_baselines_are_reused_and_a_killed_bench_resumes(benched):
    assert benched["killed_code"] == -signal.SIGKILL and benched["finished_before"] >= 1
    _, err = benched["second"]
    assert "6 cached baseline runs" in err, err[-2000:]  # the baselines of the first bench, reused
    for path, stamp in benched["stamps"].items():
        assert path.stat().st_mtime_ns == stamp, f"{path} was retrained"
    assert len(benched["baseline_runs"]) == 6  # 2 protocols x 3 seeds of CE, trained once
    runs = json.loads((benched["root"] / "ignores" / "bench.json").read_text())["runs"]
    assert len(runs) == 12 and not any(r.get("failed") for r in runs)


def test_max_seeds_reuses_the_runs_and_adds_seeds_only_where_a_word_is_open(benched):
    """The same bench again with --max-seeds 6: the first look is the three seeds already run (reused, nothing
    trained); the control is final there (untestable), so only the biased protocol, whose utility axis is still
    open at 3 seeds, gets seeds 3–5, and after look 2 every word is final."""
    root = benched["root"]
    proc = subprocess.Popen([FAIRCL, "bench", "protocols", "--method", "planted.IgnoresAttribute", "--out", "ignores",
                             "--cache", "cache", "--permutations", "200", "--bootstrap", "400", "--max-seeds", "6"],
                            cwd=root, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = _done(proc)
    assert "12 of 12 runs already done" in err, err[-2000:]
    assert "after look 1, 1 of 2 claims final; open: biased (1 claims) waits for seeds 3–5" in err, err[-2000:]
    assert "after look 2, 2 of 2 claims final" in err, err[-2000:]
    assert not list((root / "ignores").rglob("biased_permuted*/**/seed_3"))
    info = json.loads((root / "ignores" / "bench.json").read_text())
    assert info["design"]["max_seeds"] == 6 and info["design"]["seeds"] == {"biased": 6, "biased_permuted": 3}
    assert [k["seeds"]["biased"] for k in info["design"]["looks"]] == [3, 6]
    assert _verdicts(root / "ignores")["biased_permuted"] == ["untestable"]
    with open(root / "ignores" / "results.csv") as fh:
        looks = {r["protocol"]: r["look"] for r in csv.DictReader(fh)}
    assert looks == {"biased": "2", "biased_permuted": "1"}
