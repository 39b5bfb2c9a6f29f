"""Smoke runs of the fairness benchmark scripts (``--quick``) at tiny size: each writes a results file whose first
section is the summary table (claim — protocol — paper effect — our effect — Holm p — MDE — utility — bias — verdict)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEADER = ("| claim | protocol | paper effect | our effect [95% CI] | Holm p | MDE | holds-MDE | "
          "utility change [95% CI] | baseline bias vs null | verdict |")


def _run(args: list[str], data_dir: Path, timeout: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "FAIRCL_DATA": str(data_dir), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _summary_first(md: str) -> list[str]:
    lines = md.splitlines()
    table = [ln for ln in lines if ln.startswith("|")]
    assert HEADER in lines, md[:2000]
    # the summary is the first table of the file
    assert table[0] == HEADER
    rows = []
    for ln in lines[lines.index(HEADER) + 2:]:
        if not ln.startswith("|"):
            break
        rows.append(ln)
    return rows


@pytest.mark.slow
@pytest.mark.long  # a whole benchmark script's smoke run (over a minute): make test-long
def test_text_fairness_quick(data_dir, tmp_path):
    out = tmp_path / "text_fairness.md"
    res = _run(["benchmarks/text_fairness.py", "--quick", "--no-hate", "--methods", "CE,Con_*,Con_*^ft,TwoStageCL",
                "--data", str(data_dir), "--out", str(out)], data_dir, 600)
    assert res.returncode == 0, res.stderr[-3000:]
    md = out.read_text()
    rows = _summary_first(md)
    line = md.splitlines()[2]
    assert line.startswith("Regenerate: `.venv/bin/python benchmarks/text_fairness.py --quick") and "wall time" in line
    command = line.split("`")[1]
    assert "--data" not in command and "--out" not in command and str(tmp_path) not in command
    assert any("Con_* (l2 h, Shen) lowers GAP vs CE" in r and "| -26.3 |" in r for r in rows)
    assert all(r.split(" | ")[2] not in ("", "nan") for r in rows)
    # leakage's bias is tested on the test and the validation split
    leak = [r for r in rows if "lowers Leak@h" in r]
    assert leak and all("test " in r and "; validation " in r for r in leak), leak
    # the real Bias in Bios samples are back, labelled by the rule (Shen's Bios effects beside ours)
    bios = [r for r in rows if "Bias in Bios samples" in r]
    # ConFair at fairlib's batch (here the whole 154-row train split), paired with CE at that batch and as many steps
    assert any("Con_*^ft lowers GAP vs CE (batch 1024)" in r and "| -9.3 |" in r for r in bios), bios
    assert "| CE (batch 1024) |" in md and "| 154 × 8 |" in md
    assert "**holds**" not in "".join(bios) or all("Holm p" in r for r in bios)
    assert any("TwoStageCL λ=1 τ=0.1 lowers the EO gap vs TwoStageCL λ=0 τ=0.1" in r for r in rows)
    # the control: the attribute permuted in every split, so every claim reads untestable
    control = md[md.index("## Control"):].split("\n\n")[2].splitlines()[2:]
    assert control and all("**untestable**" in r for r in control), control
    assert "Polish hate speech" in md and "users" in md  # why it was removed
    raw = gzip.decompress(out.with_name(out.stem + ".json.gz").read_bytes()).decode()
    assert '"test_pred"' in raw and '"selected_epoch"' in raw
    # --render rewrites the same file from the JSON
    again = tmp_path / "again.md"
    res = _run(["benchmarks/text_fairness.py", "--render", str(out.with_name(out.stem + ".json.gz")), "--out", str(again)],
               data_dir, 300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert again.read_text().replace("again_tradeoff", "text_fairness_tradeoff") == md


@pytest.mark.slow
def test_vision_fairness_render_has_summary(tmp_path):
    # the recorded raw results re-rendered (no training): the summary table leads the file
    raw = REPO / "benchmarks" / "results" / "vision_fairness.json.gz"
    if not raw.is_file():
        pytest.skip("no recorded vision results")
    out = tmp_path / "vision.md"
    res = _run(["benchmarks/vision_fairness.py", "--render", str(raw), "--out", str(out)], REPO, 300)
    assert res.returncode == 0, res.stderr[-3000:]
    text = out.read_text()
    lines = text.splitlines()
    assert lines[2].startswith("Regenerate: `.venv/bin/python benchmarks/vision_fairness.py")
    assert lines[3].startswith("Wall time of this run:")
    rows = _summary_first(text)
    sys.path.insert(0, str(REPO / "benchmarks"))
    from _vision_report import CLAIMS, load_raw

    recorded = load_raw(raw)
    assert len(rows) == len(CLAIMS) * len(recorded["parts"]) and all("**" in r for r in rows)
    assert "Verdict rule" in text[:text.index(HEADER)] and "Selection:" in text[:text.index(HEADER)]
    assert "(null 95%" in text[:text.index("## The same claims")]  # baselines checked against the null
    # the recorded file is this rendering (apart from the plot's name)
    recorded_md = (REPO / "benchmarks" / "results" / "vision_fairness.md").read_text()
    assert text.replace("vision_tradeoff", "vision_fairness_tradeoff") == recorded_md


@pytest.mark.slow
def test_vision_fairness_quick(data_dir, tmp_path):
    out = tmp_path / "vision.md"
    res = _run(["benchmarks/vision_fairness.py", "--quick", "--datasets", "digits", "--data-dir", str(data_dir),
                "--out", str(out)], data_dir, 600)
    assert res.returncode == 0, res.stderr[-3000:]
    text = out.read_text()
    rows = _summary_first(text)
    verdicts = ("holds", "contradicted", "does not hold", "inconclusive", "untestable", "degenerate")
    assert rows and all(any(f"**{v}**" in r for v in verdicts) for r in rows)
    # both negative modes of FairSamplingSimCLR and both ConFair variants are judged
    for variant in ("FairSampling (weighted)", "FairSampling (sampled)", "Con_* (l2 h, Shen)",
                    "Con_* (raw h, fairlib)"):
        assert any(f"{variant} lowers" in r for r in rows), variant
    import re

    assert re.search(r"train \d+ rows, P\(a = y\) = 0\.(79|80)\d", text)  # the realised train stereotype
    raw = gzip.decompress(out.with_name("vision.json.gz").read_bytes()).decode()
    assert '"test_pred"' in raw and '"val_pred"' in raw and '"selected_epoch"' in raw


@pytest.mark.slow
@pytest.mark.long  # a whole benchmark script's smoke run (over a minute): make test-long
def test_embedding_fairness_quick(data_dir, tmp_path):
    out = tmp_path / "embedding.md"
    res = _run(["benchmarks/embedding_fairness.py", "--quick", "--data-dir", str(data_dir), "--out", str(out)],
               data_dir, 1500)
    if res.returncode != 0 and "not found" in (res.stderr + res.stdout):
        pytest.skip(f"embedding benchmark inputs absent: {(res.stderr + res.stdout)[-300:]}")
    assert res.returncode == 0, res.stderr[-3000:]
    md = out.read_text()
    rows = _summary_first(md)
    # --quick runs 2 seeds: every claim gets a verdict of the shared rule; the held-out-source CCED claim leads
    verdicts = ("holds", "contradicted", "does not hold", "inconclusive", "untestable", "degenerate")
    assert rows and all(any(f"**{v}**" in r for v in verdicts) for r in rows)
    assert "CCD lowers CCED on held-out sources" in rows[0]
    assert "not defined" in rows[0]  # CCED has no null; every other claim prints the original's bias vs its null
    assert all("(null 95%: " in r and "; validation" in r for r in rows[2:6])
    assert "## The original encoder's bias against its null" in md
    assert any("CCD keeps utility" in r for r in rows)
    assert "| **all held-out sources** | held out |" in md
    assert "variance (paper, literal)" in md
    assert md.splitlines()[2].startswith(
        "Regenerate: `.venv/bin/python benchmarks/embedding_fairness.py --quick` (took")
