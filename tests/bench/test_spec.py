"""Protocols as data: the shipped suites load, ``extends`` / ``quick`` merge as documented, the cache key follows
the protocol's content, bad files are refused naming the file and the key, methods are skipped with a reason, and
the attribute-permuted control keeps group sizes while cutting the attribute's tie to the label."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import torch

from faircl.bench.runner import MethodSpec, plan, resolve_method
from faircl.bench.spec import deep_merge, load_suite, suite_names
from faircl.runs.user_error import UserError

BASE = """\
name: base
version: 1
input_kind: features
data: {class_path: BiasedFeatures, init_args: {n_train: 200, batch_size: 32}}
model: {encoder: mlp, lr: 0.01}
trainer: {max_epochs: 4}
seeds: 4
baselines: {CE: {class_path: CE}}
claims: [{gap: tpr_gap_rms, baseline: CE}]
quick: {trainer: {max_epochs: 1}, seeds: 2}
"""


def _suite(tmp_path, **files):
    for name, text in files.items():
        (tmp_path / f"{name}.yaml").write_text(textwrap.dedent(text))
    return str(tmp_path)


def test_shipped_suites_load_in_both_modes_and_every_control_extends_its_protocol():
    assert suite_names() == ["text", "vision", "embeddings"]
    for suite in suite_names():
        full, quick = load_suite(suite), load_suite(suite, quick=True)
        assert [p.name for p in full] == [p.name for p in quick] and full
        for p, q in zip(full, quick):
            assert q.quick and not p.quick and q.key() != p.key()  # quick runs never share a cache with full ones
            assert p.claims and p.baselines and p.data["class_path"]
            if p.control:
                assert p.data["init_args"]["permute_attribute"] is True
                main = next(m for m in full if m.name == p.name.replace("_permuted", ""))
                assert deep_merge(main.data, {"init_args": {"permute_attribute": True}}) == p.data
                assert main.trainer == p.trainer and main.model == p.model


def test_extends_and_quick_merge_and_the_key_follows_the_content(tmp_path):
    suite = _suite(tmp_path, base=BASE, ctrl="""\
        name: ctrl
        extends: base
        version: 1
        control: true
        data: {init_args: {permute_attribute: true}}
        """)
    base, ctrl = load_suite(suite)
    assert ctrl.control and not base.control and ctrl.data["init_args"] == {"n_train": 200, "batch_size": 32,
                                                                           "permute_attribute": True}
    assert base.seeds == 4 and base.trainer == {"max_epochs": 4}
    qb, _ = load_suite(suite, quick=True)
    assert qb.seeds == 2 and qb.trainer == {"max_epochs": 1} and qb.data == base.data
    assert base.key() != ctrl.key()
    (tmp_path / "base.yaml").write_text(BASE.replace("version: 1", "version: 2"))
    assert load_suite(suite)[0].key() != base.key()  # a new version retrains its baselines
    (tmp_path / "base.yaml").write_text(BASE + "notes: only words\n")
    assert load_suite(suite)[0].key() == base.key()  # words do not


def test_a_method_runs_again_when_its_protocol_changes(tmp_path):
    """A method's run folders follow the resolved protocol as well as the method: an edited protocol is not answered
    by runs of the old one (the baselines' folders already followed it)."""
    suite = _suite(tmp_path, base=BASE)
    method = MethodSpec("CE", "faircl.methods.CE", {}, resolve_method("CE")[1])
    before = {t.folder for t in plan(load_suite(suite)[0], method, [0], tmp_path / "out", tmp_path / "cache")}
    again = {t.folder for t in plan(load_suite(suite)[0], method, [0], tmp_path / "out", tmp_path / "cache")}
    assert before == again  # the same protocol and method: the same folders (a bench resumes)
    (tmp_path / "base.yaml").write_text(BASE.replace("n_train: 200", "n_train: 300"))
    after = {t.folder for t in plan(load_suite(suite)[0], method, [0], tmp_path / "out", tmp_path / "cache")}
    assert not before & after and len(after) == 2  # the method's and the baseline's folders are both new


def test_extends_replaces_selection_and_baselines_whole(tmp_path):
    suite = _suite(tmp_path, base=BASE.replace("trainer: {max_epochs: 4}",
                                               "trainer: {max_epochs: 4}\nselection: {rule: gap_within}"),
                   knn="""\
        name: knn
        extends: base
        version: 1
        model: {row_predictions: knn}
        selection: {monitor: val/f1, mode: max}
        baselines: {DML: {class_path: DML}}
        claims: [{gap: tpr_gap_rms, baseline: DML}]
        """)
    base, knn = load_suite(suite)
    assert base.selection["rule"] == "gap_within" and set(base.baselines) == {"CE"}
    assert knn.selection == {"monitor": "val/f1", "mode": "max"}  # not mixed with the parent's rule
    assert set(knn.baselines) == {"DML"} and knn.claims[0].baseline == "DML"
    assert knn.model == {"encoder": "mlp", "lr": 0.01, "row_predictions": "knn"}  # the rest still merges


@pytest.mark.parametrize("text, says", [
    (BASE + "budget: 3\n", "unknown key 'budget' (a protocol has the keys applies_to, baselines, claims, "),
    (BASE + "views: sometimes\n", "'views' must be true or false, got 'sometimes'"),
    (BASE + "seeds: three\n", "'seeds' must be an integer, got 'three'"),
    (BASE.replace("claims: [{gap: tpr_gap_rms, baseline: CE}]", "claims: [{gap: tpr_gap_rms, baseline: CE, by: 2}]"),
     "claims[0]: unknown key 'by' (a claim has the keys against, baseline, gap, leakage, leakage_paper_effect, margin, "),
    (BASE.replace("claims: [{gap: tpr_gap_rms, baseline: CE}]", "claims: [{gap: tpr_gap_rms, baseline: CE, "
                  "paper_effect: large}]"), "claims[0]: 'paper_effect' must be a number or null, got 'large'"),
    (BASE.replace("claims: [{gap: tpr_gap_rms, baseline: CE}]", "claims: [{gap: tpr_gap_rms, baseline: ERM}]"),
     "names baseline 'ERM'"),
    (BASE.replace("claims: [{gap: tpr_gap_rms, baseline: CE}]", "claims: []"), "'claims' must be a non-empty list"),
    (BASE.replace("name: base", "name: other"), "a protocol's name is its file name"),
    (BASE.replace("input_kind: features\n", ""), "has no 'input_kind'"),
    ("- a list\n", "must hold a mapping"),
    (BASE + "extends: nowhere\n", "extends 'nowhere', which is not a protocol"),
    (BASE + "smallest_effect: 0.02\n", "'smallest_effect' must be a fraction in (0, 1) (0.02 = 2 points) with its"),
    (BASE + "smallest_effect: 2\nsmallest_effect_reason: two points\n", "'smallest_effect' must be a fraction"),
    (BASE + "test_rows: n_rows\n", "'test_rows' must name an integer argument of data.init_args (e.g. n_test)"),
])
def test_a_bad_protocol_file_is_refused_naming_the_file_and_the_key(tmp_path, text, says):
    (tmp_path / "base.yaml").write_text(text)
    with pytest.raises(UserError) as err:
        load_suite(str(tmp_path))
    assert says in str(err.value) and "base.yaml" in str(err.value) and "\n" not in str(err.value)


def test_unknown_suite_and_extends_cycle(tmp_path):
    with pytest.raises(UserError, match="no suite 'audio'.*text, vision"):
        load_suite("audio")
    a = BASE.replace("name: base\n", "name: a\n") + "extends: b\n"
    b = BASE.replace("name: base\n", "name: b\n") + "extends: a\n"
    with pytest.raises(UserError, match="cycle"):
        load_suite(_suite(tmp_path, a=a, b=b))


def test_methods_are_skipped_with_the_reason(tmp_path, monkeypatch):
    from faircl.methods import CCD, CE, FairSamplingSimCLR

    text = {p.name: p for p in load_suite("text")}
    assert text["synthbios"].skip_reason(CE) is None
    assert "trains on tuples inputs" in text["synthbios"].skip_reason(CCD)
    no_views = load_suite(_suite(tmp_path, base=BASE))[0]
    assert "needs two augmented views" in no_views.skip_reason(FairSamplingSimCLR)
    monkeypatch.delenv("FAIRCL_DATA", raising=False)
    assert "set FAIRCL_DATA" in text["bios_samples"].skip_reason(CE)
    monkeypatch.setenv("FAIRCL_DATA", str(tmp_path))
    assert "does not exist" in text["bios_samples"].skip_reason(CE)


def test_method_names(tmp_path, monkeypatch):
    assert resolve_method("ConFair")[0] == "faircl.methods.confair.ConFair"
    with pytest.raises(UserError, match="not a faircl method.*dotted path"):
        resolve_method("Confair")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text("from faircl.methods import CE\n\nclass Mine(CE):\n    pass\n\nclass Other:\n"
                                      "    pass\n")
    assert resolve_method("mine.Mine")[0] == "mine.Mine"
    with pytest.raises(UserError, match="no FairModule subclass named 'Other'"):
        resolve_method("mine.Other")
    with pytest.raises(UserError, match="cannot import 'nowhere'"):
        resolve_method("nowhere.Mine")


def test_the_plan_pairs_every_seed_and_caches_baselines_by_protocol(tmp_path):
    from faircl.methods import CE

    (tmp_path / "suite").mkdir()
    p = load_suite(_suite(tmp_path / "suite", base=BASE))[0]
    m = MethodSpec("Mine", "faircl.methods.CE", {"lr": 0.1}, CE)
    tasks = plan(p, m, [0, 1], tmp_path / "out", tmp_path / "cache")
    assert [(t.setting, t.seed, t.baseline) for t in tasks] == [("CE", 0, True), ("Mine", 0, False),
                                                                ("CE", 1, True), ("Mine", 1, False)]
    assert tasks[0].folder == tmp_path / "cache" / f"base-{p.key()}" / "CE" / "seed_0"
    cfg = tasks[1].config()
    assert cfg["seed_everything"] == 0 and cfg["model"]["init_args"] == {"encoder": "mlp", "lr": 0.1}
    assert cfg["data"] == p.data and cfg["trainer"]["max_epochs"] == 4
    assert MethodSpec("Mine", "faircl.methods.CE", {"lr": 0.2}, CE).key() != m.key()


def test_a_baseline_that_trains_on_views_gets_them_whatever_the_method(tmp_path):
    from faircl.methods import CE, PARADE

    probe = next(p for p in load_suite("vision") if p.name == "stereo_digits_probe")
    tasks = plan(probe, MethodSpec("Mine", "faircl.methods.CE", {}, CE), [0], tmp_path / "out", tmp_path / "cache")
    simclr, mine = tasks
    assert simclr.setting == "SimCLR" and simclr.config()["data"]["init_args"]["two_views"] is True
    assert "two_views" not in mine.config()["data"]["init_args"]
    assert simclr.config()["model"]["init_args"]["row_predictions"] == "probe"
    knn = next(p for p in load_suite("vision") if p.name == "stereo_digits_knn")
    dml, parade = plan(knn, MethodSpec("P", "faircl.methods.PARADE", {}, PARADE), [0], tmp_path / "o", tmp_path / "c")
    assert "two_views" not in dml.config()["data"]["init_args"]
    assert parade.config()["data"]["init_args"]["sampler"] == "samples_per_class"


def test_the_permuted_control_keeps_group_sizes_and_cuts_the_tie_to_the_label():
    from faircl.data import BiasedFeatures

    kw = {"n_train": 2000, "n_val": 500, "n_test": 500, "bias": 0.9}
    plain, perm = BiasedFeatures(**kw).splits, BiasedFeatures(permute_attribute=True, **kw).splits
    for name in ("train", "val", "test"):
        a, b = plain[name].a, perm[name].a
        assert torch.equal(torch.bincount(a + 1), torch.bincount(b + 1)) and not torch.equal(a, b)
        assert torch.equal(plain[name].y, perm[name].y) and torch.equal(plain[name].x, perm[name].x)
    agree = float(np.mean(perm["train"].a.numpy() == perm["train"].y.numpy()))
    assert abs(agree - 0.5) < 0.05 < abs(float(np.mean(plain["train"].a.numpy() == plain["train"].y.numpy())) - 0.5)


def test_a_protocol_on_request_runs_only_when_named(tmp_path, monkeypatch, capsys):
    """``on_request: true``: loaded and listed like any protocol, left out of a plain invocation (which says so), run
    when ``--protocol`` names it; not inherited through ``extends``; anything but a boolean is refused."""
    import faircl.cli.bench as command
    import faircl.bench.looks as looks

    (tmp_path / "suite").mkdir()
    suite = _suite(tmp_path / "suite", base=BASE, base_dto="""\
        name: base_dto
        extends: base
        version: 1
        on_request: true
        selection: {monitor: val/dto, mode: min}
        """, child="""\
        name: child
        extends: base_dto
        version: 1
        """)
    got = {p.name: p for p in load_suite(suite)}
    assert got["base_dto"].on_request and not got["base"].on_request and not got["child"].on_request
    assert got["base_dto"].selection == {"monitor": "val/dto", "mode": "min"}
    assert got["base_dto"].claims == got["base"].claims and got["base_dto"].key() != got["base"].key()

    planned: list[list[str]] = []

    class Stop(Exception):
        pass

    def fake_run(tasks, **kwargs):  # what would run, without training anything
        planned.append(sorted({t.protocol.name for t in tasks}))
        raise Stop

    monkeypatch.setattr(looks, "run_tasks", fake_run)
    for extra in ([], ["--protocol", "base_dto"]):
        with pytest.raises(Stop):
            command.bench([suite, "--method", "CE", "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c"),
                           *extra])
    assert planned == [["base", "child"], ["base_dto"]]
    assert "run only when named with --protocol, left out: base_dto" in capsys.readouterr().err

    (tmp_path / "suite" / "base_dto.yaml").write_text(
        (tmp_path / "suite" / "base_dto.yaml").read_text().replace("on_request: true", "on_request: sometimes"))
    with pytest.raises(UserError, match=r"base_dto.yaml: 'on_request' must be true or false"):
        load_suite(suite)


def test_the_shipped_dto_protocols_are_their_parents_at_dto_selection():
    protocols = {p.name: p for p in load_suite("text")}
    dto = [p for p in protocols.values() if p.name.endswith("_dto")]
    assert len(dto) == 8 and all(p.on_request for p in dto)
    assert not any(p.on_request for p in protocols.values() if not p.name.endswith("_dto"))
    for p in dto:
        parent = protocols[p.name.removesuffix("_dto")]
        assert p.selection == {"monitor": "val/dto", "mode": "min"} != parent.selection
        assert (p.data, p.model, p.trainer, p.seeds, p.claims, p.baselines, p.applies_to) == (
            parent.data, parent.model, parent.trainer, parent.seeds, parent.claims, parent.baselines,
            parent.applies_to)



def test_the_keys_of_a_protocol_file_are_the_fields_of_its_dataclasses():
    from dataclasses import fields

    from faircl.bench.spec import Claim, Protocol, file_keys

    assert set(file_keys()) == {f.name for f in fields(Protocol)} - {"suite", "source", "raw"} | {"extends"}
    assert "budget" not in file_keys() and {"on_request", "applies_to", "evaluate", "quick"} <= set(file_keys())
    assert {f.name for f in fields(Claim)} >= {"gap", "score", "statistic", "baseline", "margin"}


def test_a_shipped_protocols_cache_key_is_the_one_it_had():
    """The keys of the baseline cache hash the resolved protocol: read before the loader was rewritten (from its
    dataclasses), they must not move, or every cached baseline would be trained again."""
    text = {p.name: p for p in load_suite("text")}
    quick = {p.name: p for p in load_suite("text", quick=True)}
    assert text["synthbios"].key() == "872ea9c7dc53" and quick["synthbios"].key() == "7f132dfdb033"
    assert {p.name: p.key() for p in load_suite("embeddings", quick=True)} == {"cda_minilm": "d1f5654a79ad"}


def test_the_smallest_effect_of_interest_is_read_with_its_reason_and_is_not_in_the_cache_key(tmp_path):
    plain = load_suite(_suite(tmp_path / "a", base=BASE))[0] if (tmp_path / "a").mkdir() is None else None
    declared = BASE + "smallest_effect: 0.03\nsmallest_effect_reason: the smallest change a user would notice\n"
    (tmp_path / "b").mkdir()
    p = load_suite(_suite(tmp_path / "b", base=declared))[0]
    assert p.smallest_effect == 0.03 and p.smallest_effect_reason.startswith("the smallest change")
    assert plain.smallest_effect is None and p.key() == plain.key()
