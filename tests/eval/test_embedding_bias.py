"""Embedding-bias measures against literal computations on hand-made embeddings, MLM scores on a tiny random
BertForMaskedLM, and the command on a saved directory."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
import torch

from faircl.eval.bias_datasets import BiasIRQuery, CrowsPair, SeatTest, StereoSetItem
from faircl.eval import embedding_bias as eb


def _lookup(table: dict[str, list[float]]):
    def embed(texts):
        return torch.tensor([table[t] for t in texts], dtype=torch.float32)

    return embed


def _cos(u, v):
    u, v = np.asarray(u, float), np.asarray(v, float)
    return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))


SEAT_TABLE = {"x1": [1.0, 0.1], "x2": [0.9, 0.3], "x3": [0.8, -0.2], "y1": [0.1, 1.0], "y2": [0.3, 0.8],
              "y3": [-0.2, 0.9], "a1": [1.0, 0.0], "a2": [0.7, 0.2], "b1": [0.0, 1.0], "b2": [0.2, 0.6]}
SEAT_TEST = SeatTest("tiny", ["x1", "x2", "x3"], ["y1", "y2", "y3"], ["a1", "a2"], ["b1", "b2"])


def _literal_s(w):
    t = SEAT_TABLE
    return (np.mean([_cos(t[w], t[a]) for a in SEAT_TEST.attr1])
            - np.mean([_cos(t[w], t[b]) for b in SEAT_TEST.attr2]))


def test_seat_effect_size_matches_literal():
    sx = [_literal_s(w) for w in SEAT_TEST.targ1]
    sy = [_literal_s(w) for w in SEAT_TEST.targ2]
    ref = (np.mean(sx) - np.mean(sy)) / np.std(sx + sy, ddof=1)
    r = eb.seat(_lookup(SEAT_TABLE), SEAT_TEST)
    assert r["effect_size"] == pytest.approx(ref, rel=1e-6)
    assert r["effect_size"] > 1.5
    # Swapping the targets flips the sign.
    swapped = SeatTest("s", SEAT_TEST.targ2, SEAT_TEST.targ1, SEAT_TEST.attr1, SEAT_TEST.attr2)
    assert eb.seat(_lookup(SEAT_TABLE), swapped)["effect_size"] == pytest.approx(-ref, rel=1e-6)


def test_seat_p_value_exact_and_sampled():
    s = {w: _literal_s(w) for w in SEAT_TEST.targ1 + SEAT_TEST.targ2}
    words = list(s)
    observed = sum(s[w] for w in SEAT_TEST.targ1) - sum(s[w] for w in SEAT_TEST.targ2)
    bigger = 0
    parts = list(itertools.combinations(words, 3))
    for xi in parts:
        yi = [w for w in words if w not in xi]
        bigger += sum(s[w] for w in xi) - sum(s[w] for w in yi) > observed + 1e-12
    ref = bigger / len(parts)  # 20 partitions: the observed one is the largest, so p = 0
    r = eb.seat(_lookup(SEAT_TABLE), SEAT_TEST)
    assert r["p_value"] == pytest.approx(ref) and ref == 0.0
    h = _lookup(SEAT_TABLE)(words + SEAT_TEST.attr1 + SEAT_TEST.attr2)
    x, y, a, b = h[:3], h[3:6], h[6:8], h[8:]
    sampled = eb.weat_p_value(y, x, a, b, n_permutations=10)  # 20 partitions > 10: sampled, reversed roles
    exact = eb.weat_p_value(y, x, a, b, n_permutations=100)
    assert exact == pytest.approx(19 / 20) and 0.6 <= sampled <= 1.0


def test_seat_degenerate_constant_embeddings():
    table = {k: [1.0, 1.0] for k in SEAT_TABLE}
    assert math.isnan(eb.seat(_lookup(table), SEAT_TEST)["effect_size"])


def test_seat_real_file(data_dir):
    rng = torch.Generator().manual_seed(0)
    cache: dict[str, torch.Tensor] = {}

    def embed(texts):
        return torch.stack([cache.setdefault(t, torch.randn(8, generator=rng)) for t in texts])

    out = eb.seat_suite(embed, data_dir / "seat", tests=("weat6",), n_permutations=200)
    assert set(out) == {"seat/weat6/effect_size", "seat/weat6/p_value", "seat_mean_abs_effect_size"}
    assert 0 <= out["seat/weat6/p_value"] <= 1


def test_cced_score_literal():
    table = {"m": [0.0, 2.0], "f": [1.0, 0.0], "n": [0.0, 0.0], "m2": [3.0, 4.0], "f2": [0.0, 5.0], "n2": [0.0, 0.0]}
    r = eb.cced_score(_lookup(table), [("m", "f", "n"), ("m2", "f2", "n2")])
    assert r == pytest.approx((abs(2 - 1) + abs(5 - 5)) / 2)


def test_bias_ir_ratio_literal():
    docs = ["dm1", "df1", "dn1", "dm2", "df2", "dn2"]
    table = {"q": [1.0, 0.0], "dm1": [1.0, 0.05], "df1": [1.0, 0.5], "dn1": [0.0, 1.0], "dm2": [1.0, 0.1],
             "df2": [0.2, 1.0], "dn2": [1.0, 0.3], "q2": [0.0, 1.0]}
    queries = [BiasIRQuery("1", "Career", "q", docs, ["M", "F", "N", "M", "F", "N"], [1] * 6),
               BiasIRQuery("2", "Career", "q2", docs, ["M", "F", "N", "M", "F", "N"], [1] * 6)]
    out = eb.bias_ir(_lookup(table), queries, k=3)
    # q: top-3 by cosine = dm1, dm2, dn2 → 2 M, 0 F → 1.0; q2: dn1, df2, df1 → 0 M, 2 F → 0.0
    assert out["bias_ir/Career/male_ratio"] == pytest.approx(0.5)
    assert out["bias_ir_deviation"] == pytest.approx(0.0)
    out1 = eb.bias_ir(_lookup(table), queries[:1], k=3)
    assert out1["bias_ir_deviation"] == pytest.approx(0.5)


def test_embedding_variants_and_utility():
    table = {"He is strong .": [1.0, 0.0], "She is strong .": [0.0, 1.0], "is strong .": [0.9, 0.1],
             "The nurse was kind.": [0.0, 1.0], "The nurse was rude.": [0.7, 0.7], "The nurse was fox.": [1.0, 0.0],
             "The nurse was .": [0.1, 1.0]}
    crows = [CrowsPair("He is strong .", "She is strong .", "stereo", "gender")]
    assert eb.crows_pairs_embedding(_lookup(table), crows) == 100.0
    item = StereoSetItem("nurse", "gender", "The nurse was BLANK.", "The nurse was kind.", "The nurse was rude.",
                         "The nurse was fox.")
    r = eb.stereoset_embedding(_lookup(table), [item])
    assert r == {"stereoset_embedding_ss": 100.0, "stereoset_embedding_lms": 100.0, "stereoset_embedding_icat": 0.0}
    rng = np.random.default_rng(0)
    labels = ["a", "b"] * 20
    texts = [f"t{i}" for i in range(40)]
    sep = {t: [(1.0 if lab == "a" else -1.0) + 0.1 * rng.standard_normal(), rng.standard_normal()]
           for t, lab in zip(texts, labels)}
    assert eb.utility_probe(_lookup(sep), texts, labels, folds=4)["utility_accuracy"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="labels"):
        eb.utility_probe(_lookup(sep), texts, labels[:3])


SENTS = ["the man was strong .", "the woman was strong .", "he is a nurse .", "she is a nurse .",
         "the nurse was kind .", "the nurse was rude .", "the nurse was fox ."]


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory):
    return eb.save_random_bert(tmp_path_factory.mktemp("mlm"), SENTS, mlm=True)


def test_masked_log_likelihood_literal(tiny_mlm):
    emb = eb.TextEmbedder(tiny_mlm)
    assert emb.has_mlm_head
    mlm, tok = emb.mlm(), emb.tokenizer
    ids = tok("the nurse was kind .")["input_ids"]
    positions = [1, 2, 4]
    ref = 0.0
    with torch.no_grad():
        for p in positions:
            masked = list(ids)
            masked[p] = tok.mask_token_id
            logits = mlm(input_ids=torch.tensor([masked])).logits[0, p]
            ref += float(logits.log_softmax(-1)[ids[p]])
    assert eb.masked_log_likelihood(mlm, tok, ids, positions) == pytest.approx(ref, rel=1e-5)
    score = eb.crows_pairs_mlm(mlm, tok, [CrowsPair("the man was strong .", "the woman was strong .", "stereo", "g")])
    assert score in (0.0, 100.0)
    item = StereoSetItem("nurse", "gender", "the nurse was BLANK .", "the nurse was kind .", "the nurse was rude .",
                         "the nurse was fox .")
    r = eb.stereoset_mlm(mlm, tok, [item])
    assert set(r) == {"stereoset_mlm_ss", "stereoset_mlm_lms", "stereoset_mlm_icat"}
    ids_k, pos_k = eb._filled_positions(tok, item.context, item.stereotype)
    assert tok.convert_ids_to_tokens([ids_k[p] for p in pos_k]) == ["kind"]


def test_text_embedder_pooling_and_normalize(tmp_path):
    path = eb.save_random_bert(tmp_path / "enc", SENTS)
    emb = eb.TextEmbedder(path)
    assert not emb.has_mlm_head and emb.pooling == "mean" and not emb.normalize
    h = emb(SENTS[:3])
    assert h.shape == (3, 32)
    (path / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Normalize"}]))
    hn = eb.TextEmbedder(path)(SENTS[:3])
    assert torch.allclose(hn, torch.nn.functional.normalize(h, dim=-1), atol=1e-6)
    with pytest.raises(ValueError, match="no masked-LM head"):
        emb.mlm()


def test_command_on_tiny_mlm(tiny_mlm, data_dir, tmp_path, capsys):
    report = eb.main(["--model-dir", str(tiny_mlm), "--data-dir", str(data_dir), "--quick", "--max-tuples", "20",
                      "--out", str(tmp_path / "rep")])
    for key in ("cced", "seat_mean_abs_effect_size", "bias_ir_deviation", "crows_pairs_mlm_stereo_score",
                "crows_pairs_embedding_stereo_score", "stereoset_mlm_icat", "stereoset_embedding_ss",
                "utility_accuracy", "bias_ir/Sex & Relationship/male_ratio"):
        assert key in report, key
    assert (tmp_path / "rep" / "report.json").is_file()
    assert 0 <= report["crows_pairs_mlm_stereo_score"] <= 100 and report["cced"] >= 0
