"""Source-tagged CDA tuples of the embedding benchmark (benchmarks/embedding_fairness.py): readers and the per-seed
draw that keeps held-out sources out of training."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def ef():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("embedding_fairness_bench", BENCH / "embedding_fairness.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pools():
    def tuples(tag, n):
        return [(f"He {tag} {i}.", f"She {tag} {i}.", f"They {tag} {i}.") for i in range(n)]

    return {"a": tuples("a", 40), "b": tuples("b", 30), "c": tuples("c", 25), "d": tuples("d", 5)}


def test_draw_keeps_held_out_sources_out_of_training_and_splits_disjoint(ef):
    pools = _pools()
    split = ef.draw(pools, ("a", "b"), ("c", "d"), seed=0, n_train=21, n_val=4, n_test=6, n_out=8)
    assert set(split["train"]) == set(split["val"]) == set(split["test_in"]) == {"a", "b"}
    assert set(split["test_out"]) == {"c", "d"}
    # equal shares of the training sources (the remainder to the first), all of a small held-out source
    assert [len(split["train"][s]) for s in "ab"] == [11, 10]
    assert [len(split["test_in"][s]) for s in "ab"] == [3, 3]
    assert len(split["test_out"]["c"]) == 8 and len(split["test_out"]["d"]) == 5
    for s in "ab":
        parts = [set(split[k][s]) for k in ("train", "val", "test_in")]
        assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
        assert all(t in pools[s] for p in parts for t in p)  # tagged by the source they came from
    # the seed picks the draw: reproducible, and another seed draws other tuples
    again = ef.draw(pools, ("a", "b"), ("c", "d"), seed=0, n_train=21, n_val=4, n_test=6, n_out=8)
    other = ef.draw(pools, ("a", "b"), ("c", "d"), seed=1, n_train=21, n_val=4, n_test=6, n_out=8)
    assert again == split and other["train"] != split["train"]
    with pytest.raises(SystemExit, match="needed"):
        ef.draw(pools, ("a", "b"), ("c",), seed=0, n_train=60, n_val=4, n_test=6, n_out=8)


def test_pooled_cced_weights_sources_by_their_tuple_counts(ef):
    parts = {"x": [0] * 3, "y": [0] * 1}
    assert ef.pooled({"x": 0.1, "y": 0.5}, parts) == pytest.approx((3 * 0.1 + 0.5) / 4)


def test_read_winobias_strips_line_numbers_and_brackets(tmp_path):
    from faircl.data.counterfactual.sources import read_winobias

    p = tmp_path / "pro_stereotyped_type1.txt.dev"
    p.write_text("1 [The developer] argued with the designer because [he] did not like the design.\n\n"
                 "12 The mechanic gave [the clerk] a present because [she] won.\n")
    assert read_winobias(str(p)) == ["The developer argued with the designer because he did not like the design.",
                                        "The mechanic gave the clerk a present because she won."]


def test_shown_command_drops_machine_paths(ef):
    cmd = ef.shown_command(["--quick", "--data-dir", "/x", "--out=/y.md", "--betas", "0,1"])
    assert cmd == ".venv/bin/python benchmarks/embedding_fairness.py --quick --betas 0,1"


def test_real_sources_give_deduplicated_tagged_tuples(ef, data_dir):
    pools, reports = ef.build_tuples(data_dir, ["winogender", "bec_pro"])
    assert set(pools) == set(reports) == {"winogender", "bec_pro"}
    for tuples in pools.values():
        assert tuples and len(set(tuples)) == len(tuples)
        assert all(len(t) == 3 for t in tuples)
    # both genders of a template sentence give one tuple; no tuple is in two sources
    assert not set(pools["winogender"]) & set(pools["bec_pro"])
    assert ("He is a steel worker.", "She is a steel worker.", "They are a steel worker.") in pools["bec_pro"]
