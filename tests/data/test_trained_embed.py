"""A token encoder trained by CE and frozen (Shen et al.'s hate-speech ``Embed``): its training against a literal loop,
its cache, and ``HateSpeech(features="trained")`` on planted tweets whose label one token gives away."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from faircl.data.text import HateSpeech
from faircl.data.text import trained_embed as te
from faircl.models.encoders import TokenEncoder

SPEC = te.EmbedSpec(epochs=2, lr=5e-3, batch_size=16, seed=3, encoder_kwargs={"embed_dim": 8, "hidden_dim": 6})


def planted(n: int, seed: int, width: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded id rows of noise words 3..29 with the label's word (1 = non-hate, 2 = hate) somewhere in them."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    ids = torch.zeros(n, width, dtype=torch.long)
    for i in range(n):
        length = int(rng.integers(2, width + 1))
        row = rng.integers(3, 30, length)
        row[rng.integers(length)] = 1 + y[i]
        ids[i, width - length:] = torch.as_tensor(row)
    return ids, torch.as_tensor(y)


def test_training_equals_a_literal_loop_and_leaves_the_global_random_state_alone():
    ids, y = planted(50, 0)
    y[::7] = -1  # unlabelled rows never enter the loss
    state = torch.random.get_rng_state()
    got = te.train_embed(ids, y, 2, 30, SPEC)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert not got.training
    # the recipe written out: init from the seed, Adam, shuffled batches from a second generator, CE on labelled rows
    torch.manual_seed(SPEC.seed)
    enc = TokenEncoder(30, **SPEC.encoder_kwargs)
    head = torch.nn.Linear(enc.out_dim, 2)
    opt = torch.optim.Adam(list(enc.parameters()) + list(head.parameters()), lr=SPEC.lr)
    lx, ly = ids[y >= 0], y[y >= 0]
    gen = torch.Generator().manual_seed(SPEC.seed + 1)
    for _ in range(SPEC.epochs):
        perm = torch.randperm(len(ly), generator=gen)
        for start in range(0, len(ly), SPEC.batch_size):
            rows = perm[start:start + SPEC.batch_size]
            loss = torch.nn.functional.cross_entropy(head(enc(lx[rows])), ly[rows])
            opt.zero_grad()
            loss.backward()
            opt.step()
    for (name, a), (_, b) in zip(got.state_dict().items(), enc.state_dict().items()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)
    with pytest.raises(ValueError, match="no training row has a label"):
        te.train_embed(ids, torch.full_like(y, -1), 2, 30, SPEC)
    with pytest.raises(ValueError, match="epochs >= 1"):
        te.EmbedSpec(epochs=0)


def test_a_misspelt_encoder_argument_fails_when_the_datamodule_is_built(tmp_path):
    from faircl.data.text.hate_speech import HateSpeech

    with pytest.raises(ValueError, match=r"embed_kwargs: unknown TokenEncoder argument\(s\) \['hiden_dim'\].*hidden_dim"):
        te.EmbedSpec(encoder_kwargs={"embed_dim": 8, "hiden_dim": 6})
    # the datamodule says so at construction, before any data is read (the folder does not exist)
    with pytest.raises(ValueError, match="hiden_dim"):
        HateSpeech(str(tmp_path / "absent"), features="trained", embed_kwargs={"hiden_dim": 6})
    assert HateSpeech(str(tmp_path / "absent"), features="trained",
                      embed_kwargs={"embed_dim": 8, "pooling": "mean"}).embed.encoder_kwargs["pooling"] == "mean"


def test_features_are_cached_by_data_and_recipe(tmp_path, monkeypatch, capsys):
    ids, y = planted(40, 1)
    val, _ = planted(12, 2)
    tables = {"train": [ids, ids.flip(1)], "val": [val]}
    first = te.trained_embed_tables(tables, y, 2, 30, SPEC, tmp_path)
    assert [a.shape for a in first["train"]] == [(40, 12), (40, 12)] and first["val"][0].dtype == np.float32
    enc = te.train_embed(ids, y, 2, 30, SPEC)  # the features are the frozen encoder's, table by table
    np.testing.assert_allclose(first["val"][0], enc(val).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(first["train"][1], enc(ids.flip(1)).detach().numpy(), rtol=1e-5, atol=1e-6)

    def no_training(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr(te, "train_embed", no_training)
    again = te.trained_embed_tables(tables, y, 2, 30, SPEC, tmp_path)
    assert "read from" in capsys.readouterr().out
    for s in tables:
        for a, b in zip(first[s], again[s]):
            np.testing.assert_array_equal(a, b)
    for changed in ({"y": 1 - y}, {"spec": te.EmbedSpec(**{**SPEC.__dict__, "epochs": 3})}):
        with pytest.raises(AssertionError, match="trained again"):
            te.trained_embed_tables(tables, changed.get("y", y), 2, 30, changed.get("spec", SPEC), tmp_path)
    assert len(list((tmp_path / "trained_embed").glob("*.npz"))) == 1  # no temporary file left behind


def _tweets(root, name: str, n: int, seed: int) -> None:
    ids, y = planted(n, seed)
    rows = ["tid\tuid\ttext\tdate\tgender\tage\tcity\tstate\tcountry\tethnicity\tlabel"]
    for i in range(n):
        age = str(int(y[i]) if i % 5 else 1 - int(y[i]))  # the stereotype: mostly a = y
        rows.append(f"{i}\t{i}\t{' '.join(map(str, ids[i].tolist()))}\t2017-3-31\t0\t{age}\tx\tx\t1\tx\t{int(y[i])}")
    (root / name).write_text("\n".join(rows) + "\n")


def test_hate_speech_on_a_frozen_embed_trained_by_ce(tmp_path):
    root = tmp_path / "hate"
    root.mkdir()
    _tweets(root, "English_valid.tsv", 400, 0)
    _tweets(root, "English_test.tsv", 200, 1)
    args = dict(language="English", attribute="age", split_protocol="controlled", controlled_eval=80, seed=0,
                two_views=True, frozen_views=2, embed_epochs=15, embed_lr=1e-2,
                embed_kwargs={"embed_dim": 8, "hidden_dim": 8}, cache_dir=str(tmp_path / "cache"), batch_size=32)
    tokens = HateSpeech(str(root), **{k: v for k, v in args.items() if not k.startswith("embed")
                                      and k not in ("frozen_views", "cache_dir")})
    dm = HateSpeech(str(root), features="trained", **args)
    assert tokens.input_kind == "tokens" and dm.input_kind == "features" and dm.input_dim == 16
    s, raw = dm.splits, tokens.splits
    for split in ("train", "val", "test"):  # the same rows, labels and attributes as the token datamodule's
        assert torch.equal(s[split].y, raw[split].y) and torch.equal(s[split].a, raw[split].a)
    train = torch.stack([s["train"][i]["x"] for i in range(len(s["train"]))]).numpy()
    test = torch.stack([s["test"][i]["x"] for i in range(len(s["test"]))]).numpy()
    # the Embed learnt the planted word: a linear probe on its frozen features separates the classes
    probe = LogisticRegression(max_iter=2000).fit(train, s["train"].y.numpy())
    assert probe.score(test, s["test"].y.numpy()) > 0.95, probe.score(test, s["test"].y.numpy())
    # two views of a row are two different cached copies; a second datamodule reads the cache, equal features
    pick = dm.view_transform()
    x, x2 = pick(5), pick(5)
    assert x[1] == x2[1] == 5 and x[0] != x2[0]
    again = HateSpeech(str(root), features="trained", **args)
    np.testing.assert_array_equal(torch.stack([again.splits["test"][i]["x"] for i in range(8)]).numpy(), test[:8])
    with pytest.raises(ValueError, match="features='frozen' must be 'none' or 'trained'"):
        HateSpeech(str(root), features="frozen")
