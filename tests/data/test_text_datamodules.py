"""Text DataModules and the frozen-feature cache.

Every loader parses a tiny file written here in the exact published format and rejects a malformed one with a
message naming the file, the column and the row; the real shared data (``data_dir`` fixture) gives the known counts.
"""

from __future__ import annotations

import csv
import pickle
import re

import numpy as np
import pytest
import torch

from faircl.data import DataError
from faircl.data.feature_cache import FeatureCache, default_cache_dir
from faircl.data.text import (
    BiasInBios,
    HateSpeech,
    Jigsaw,
    JigsawTemplates,
    Moji,
    TextCSV,
    stratified_split,
)

def error_names(err: pytest.ExceptionInfo, file: str, column: str, row: int) -> None:
    msg = str(err.value)
    assert file in msg and f"column {column!r}" in msg and re.search(rf"\brow {row}\b", msg), msg


def write_csv(path, header, rows, delimiter=","):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter=delimiter)
        w.writerow(header)
        w.writerows(rows)
    return path


# ============================================================================================ split helper
def test_stratified_split_keeps_cell_shares_and_is_seeded():
    y = np.repeat([0, 1], 50)
    a = np.tile([0, 1], 50)
    parts = stratified_split(y, a, 0.2, 0.2, seed=3)
    assert sorted(np.concatenate(list(parts.values())).tolist()) == list(range(100))
    for s, n in (("train", 15), ("val", 5), ("test", 5)):
        for cy in (0, 1):
            for ca in (0, 1):
                assert ((y[parts[s]] == cy) & (a[parts[s]] == ca)).sum() == n
    again = stratified_split(y, a, 0.2, 0.2, seed=3)
    other = stratified_split(y, a, 0.2, 0.2, seed=4)
    assert all(np.array_equal(parts[s], again[s]) for s in parts)
    assert not np.array_equal(parts["test"], other["test"])
    # a singleton cell stays in train
    single = stratified_split(np.array([0]), np.array([0]), 0.3, 0.3, seed=0)
    assert single["train"].tolist() == [0] and len(single["test"]) == 0


# ============================================================================================ BiasInBios
BIOS_HEADER = ["hard_text", "profession", "gender"]


def bios_dir(tmp_path, per_cell: int = 5):
    root = tmp_path / "bios"
    root.mkdir(parents=True)
    for prof, words in (("nurse", "cares for patients, on the ward"), ("surgeon", "operates; \"scalpel\" work")):
        rows = [[f"She {words} {i}.", prof, "Female"] for i in range(per_cell)]
        rows += [[f"He {words} {i}.\nSecond line.", prof, "Male"] for i in range(per_cell)]
        write_csv(root / f"{prof}.csv", BIOS_HEADER, rows)
    write_csv(root / "nurse_complete.csv", BIOS_HEADER, [["Extra nurse bio.", "nurse", "Female"]])
    return root


def test_bias_in_bios_folder_of_csvs(tmp_path):
    dm = BiasInBios(str(bios_dir(tmp_path)), val_fraction=0.2, test_fraction=0.2, representation="text")
    s = dm.splits
    assert dm.class_names == ["nurse", "surgeon"] and dm.group_names == ["male", "female"]
    assert {k: len(v) for k, v in s.items()} == {"train": 12, "val": 4, "test": 4}  # *_complete.csv excluded
    assert s["test"].counts().tolist() == [[1, 1, 0], [1, 1, 0]]
    row = s["train"][0]
    assert isinstance(row["x"], str) and row["x"].startswith(("She", "He"))
    assert dm.input_dim == 0
    texts = {s[k][i]["x"] for k in s for i in range(len(s[k]))}
    assert 'He operates; "scalpel" work 0.\nSecond line.' in texts  # quotes, commas and newlines survive
    with_complete = BiasInBios(str(bios_dir(tmp_path / "b")), exclude=[], representation="text")
    assert sum(len(v) for v in with_complete.splits.values()) == 21


def test_bias_in_bios_tokens_and_single_file(tmp_path):
    root = bios_dir(tmp_path)
    dm = BiasInBios(str(root / "nurse.csv"), representation="tokens", max_len=12, test_fraction=0.2,
                    val_fraction=0.2)
    s = dm.splits
    assert dm.class_names == ["nurse"]
    assert s["train"][0]["x"].shape == (12,) and s["train"][0]["x"].dtype == torch.long
    assert dm.input_dim == len(dm.vocab) > 5


def test_bias_in_bios_published_pickle_splits(tmp_path):
    """Ravfogel et al.'s pickles: lists of dicts with ``hard_text``, ``p`` (profession) and ``g`` (m/f)."""
    root = tmp_path / "biasbios"
    root.mkdir(parents=True)
    for split, n in (("train", 6), ("dev", 2), ("test", 4)):
        rows = [{"hard_text": f"bio {split} {i}", "text": "x", "p": ["nurse", "dj"][i % 2], "g": "mf"[i % 2 == 0]}
                for i in range(n)]
        with open(root / f"{split}.pickle", "wb") as f:
            pickle.dump(rows, f)
    dm = BiasInBios(str(root), representation="text", allow_pickle=True)
    s = dm.splits
    assert {k: len(v) for k, v in s.items()} == {"train": 6, "val": 2, "test": 4}
    assert dm.class_names == ["dj", "nurse"]
    assert s["train"][0]["x"] == "bio train 0" and int(s["train"][0]["y"]) == 1 and int(s["train"][0]["a"]) == 1


def test_bias_in_bios_single_file_with_splits(tmp_path):
    rows = {split: [{"hard_text": f"{split} bio {i}", "profession": "nurse", "gender": "F"} for i in range(n)]
            for split, n in (("train", 3), ("dev", 1), ("test", 2))}
    with open(tmp_path / "bios.pkl", "wb") as f:
        pickle.dump(rows, f)
    s = BiasInBios(str(tmp_path / "bios.pkl"), representation="text", allow_pickle=True).splits
    assert {k: len(v) for k, v in s.items()} == {"train": 3, "val": 1, "test": 2} and s["val"][0]["x"] == "dev bio 0"
    path = write_csv(tmp_path / "b.csv", [*BIOS_HEADER, "split"],
                     [[f"b{i}", "dj", "M", ["train", "dev", "test", "train"][i % 4]] for i in range(8)])
    s = BiasInBios(str(path), representation="text").splits
    assert {k: len(v) for k, v in s.items()} == {"train": 4, "val": 2, "test": 2}
    write_csv(path, [*BIOS_HEADER, "split"], [["b", "dj", "M", "train"], ["c", "dj", "M", "holdout"]])
    with pytest.raises(DataError) as err:
        BiasInBios(str(path)).splits
    error_names(err, "b.csv", "split", 1)


def test_bias_in_bios_integer_codes(tmp_path):
    """LabHC/bias_in_bios codes: profession in alphabetical order, gender 0 = male, 1 = female."""
    path = write_csv(tmp_path / "bios.csv", BIOS_HEADER,
                     [[f"bio {i}", str(13 * (i % 2)), str(i % 2)] for i in range(20)])
    dm = BiasInBios(str(path), representation="text")
    assert dm.class_names == ["accountant", "nurse"]
    tr = dm.splits["train"]
    assert all(int(tr.y[i]) == int(tr.a[i]) for i in range(len(tr)))  # nurse rows are the female rows


def test_bias_in_bios_rejects_malformed_rows(tmp_path):
    root = bios_dir(tmp_path)
    write_csv(root / "surgeon.csv", BIOS_HEADER, [["ok", "surgeon", "Male"], ["ok", "surgeon", "F"],
                                                  ["bad", "surgeon", "unknown"]])
    with pytest.raises(DataError) as err:
        BiasInBios(str(root)).splits
    error_names(err, "surgeon.csv", "gender", 2)
    write_csv(root / "surgeon.csv", BIOS_HEADER, [["ok", "surgeon", "Male"], ["", "surgeon", "Male"]])
    with pytest.raises(DataError) as err:
        BiasInBios(str(root)).splits
    error_names(err, "surgeon.csv", "hard_text", 1)
    write_csv(root / "surgeon.csv", ["text", "profession", "gender"], [["ok", "surgeon", "Male"]])
    with pytest.raises(DataError, match="'hard_text'.*column missing"):
        BiasInBios(str(root)).splits
    with pytest.raises(FileNotFoundError, match="data_dir not found"):
        BiasInBios(str(tmp_path / "nowhere")).splits
    with pytest.raises(ValueError, match="needs data_dir"):
        BiasInBios().splits


# ============================================================================================ Moji
def moji_dir(tmp_path, n_train: int = 50, n_eval: int = 6, dim: int = 8):
    root = tmp_path / "moji"
    rng = np.random.default_rng(0)
    for split, n in (("train", n_train), ("dev", n_eval), ("test", n_eval)):
        (root / split).mkdir(parents=True)
        for k, stem in enumerate(("pos_pos", "pos_neg", "neg_pos", "neg_neg")):
            arr = rng.standard_normal((n, dim)).astype(np.float32)
            arr[:, 0] = k  # mark the source file in feature 0
            np.save(root / split / f"{stem}.npy", arr)
    return root


def test_moji_stereotyping_ratio(tmp_path):
    root = moji_dir(tmp_path)
    dm = Moji(str(root), ratio=0.8, n_train=None)
    s = dm.splits
    assert dm.input_dim == 8 and dm.class_names == ["sad", "happy"] and dm.group_names == ["SAE", "AAE"]
    # 50 rows per file allow 125 rows at 40/10/10/40 %: 50 happy-AAE, 12 happy-SAE, 12 sad-AAE, 50 sad-SAE
    assert s["train"].counts().tolist() == [[50, 12, 0], [12, 50, 0]]
    assert s["val"].counts().tolist() == [[6, 6, 0], [6, 6, 0]] and len(s["test"]) == 24
    # labels/attributes follow the file names: pos_pos = happy AAE (file 0), neg_neg = sad SAE (file 3)
    x, y, a = s["train"].x, s["train"].y, s["train"].a
    assert torch.all(y[x[:, 0] == 0] == 1) and torch.all(a[x[:, 0] == 0] == 1)
    assert torch.all(y[x[:, 0] == 3] == 0) and torch.all(a[x[:, 0] == 3] == 0)
    small = Moji(str(root), ratio=0.8, n_train=40).splits["train"].counts()
    assert small.tolist() == [[16, 4, 0], [4, 16, 0]]
    balanced = Moji(str(root), ratio=0.5, n_train=None).splits["train"].counts()
    assert balanced.tolist() == [[50, 50, 0], [50, 50, 0]]


def test_moji_two_views_and_errors(tmp_path):
    root = moji_dir(tmp_path)
    dm = Moji(str(root), two_views=True, view_noise=0.1)
    item = dm.splits["train"][0]
    assert item["x"].shape == item["x2"].shape == (8,) and not torch.equal(item["x"], item["x2"])
    bad = np.load(root / "dev" / "neg_pos.npy")
    bad[3, 5] = np.nan
    np.save(root / "dev" / "neg_pos.npy", bad)
    with pytest.raises(DataError) as err:
        Moji(str(root)).splits
    error_names(err, "neg_pos.npy", "feature 5", 3)
    bad[3, 5] = 0.0
    np.save(root / "dev" / "neg_pos.npy", bad)
    (root / "test" / "pos_neg.npy").unlink()
    with pytest.raises(FileNotFoundError, match="pos_neg.npy"):
        Moji(str(root)).splits


# ============================================================================================ Jigsaw
JIGSAW_HEADER = ["id", "target", "comment_text", "severe_toxicity", "obscene", "identity_attack", "insult", "threat",
                 "asian", "black", "white", "female", "male"]


def jigsaw_csv(tmp_path, rows=None):
    root = tmp_path / "jigsaw"
    root.mkdir(exist_ok=True)
    if rows is None:
        rows = []
        for i in range(40):
            annotated = i < 32
            black = ("1.0" if i % 4 == 0 else "0.0") if annotated else ""
            white = ("0.6" if i % 3 == 0 else "0.1") if annotated else ""
            tox = "0.8" if i % 2 == 0 else "0.2"
            rows.append([str(59848 + i), tox, f"comment, \"quoted\" number {i}\nnext line", "0.0", "0.0", "0.0",
                         "0.0", "0.0", "", black, white, "", ""])
    return write_csv(root / "train.csv", JIGSAW_HEADER, rows), root


def test_jigsaw_kaggle_format(tmp_path):
    path, root = jigsaw_csv(tmp_path)
    dm = Jigsaw(str(root), representation="text", val_fraction=0.25, test_fraction=0.25)
    s = dm.splits
    assert dm.class_names == ["non-toxic", "toxic"] and dm.group_names == ["non-black", "black"]
    assert sum(len(v) for v in s.values()) == 32  # unannotated rows dropped
    total = sum(v.counts() for v in s.values())
    # rows i < 32: toxic iff i even; black iff i % 4 == 0 (all of them even)
    assert total.tolist() == [[16, 0, 0], [8, 8, 0]]
    assert "quoted" in s["train"][0]["x"]
    two = Jigsaw(str(root), identity_columns=["black", "white"], drop_unannotated=False, representation="text")
    assert two.group_names == ["non-black|non-white", "non-black|white", "black|non-white", "black|white"]
    tot = sum(v.counts() for v in two.splits.values())
    assert tot[:, -1].sum() == 8  # unannotated rows kept with unknown attribute


def test_jigsaw_wilds_split_column(tmp_path):
    root = tmp_path / "wilds"
    root.mkdir(parents=True)
    rows = [[f"text {i}", "0.7" if i % 2 else "0.0", "1.0" if i % 3 == 0 else "0.0", ["train", "val", "test"][i % 3]]
            for i in range(30)]
    write_csv(root / "all_data_with_identities.csv", ["comment_text", "toxicity", "black", "split"], rows)
    dm = Jigsaw(str(root), file="all_data_with_identities.csv", representation="text")
    s = dm.splits
    assert {k: len(v) for k, v in s.items()} == {"train": 10, "val": 10, "test": 10}
    assert s["train"].counts()[:, 1].sum() == 10  # i % 3 == 0 rows are the train split and mention black


def test_jigsaw_rejects_malformed(tmp_path):
    path, root = jigsaw_csv(tmp_path)
    rows = list(csv.reader(open(path, encoding="utf-8")))[1:]
    rows[5][1] = "very toxic"
    jigsaw_csv(tmp_path, rows)
    with pytest.raises(DataError) as err:
        Jigsaw(str(root)).splits
    error_names(err, "train.csv", "target", 5)
    rows[5][1] = "0.5"
    rows[7][9] = "2.0"
    jigsaw_csv(tmp_path, rows)
    with pytest.raises(DataError) as err:
        Jigsaw(str(root)).splits
    error_names(err, "train.csv", "black", 7)
    with pytest.raises(DataError, match="'hispanic'.*column missing"):
        Jigsaw(str(root), identity_columns="hispanic").splits


# ============================================================================================ HateSpeech
HATE_HEADER = ["tid", "uid", "text", "date", "gender", "age", "city", "state", "country", "ethnicity", "label"]


def hate_tsv(path, n, seed, width=10, bad=None):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        length = int(rng.integers(1, width))
        ids = [0] * (width - length) + [int(v) for v in rng.integers(1, 50, size=length)]
        g = "x" if i % 5 == 0 else str(i % 2)
        age = "x" if i % 7 == 0 else str((i // 2) % 2)
        rows.append([str(-4072498850002415609 + i), str(-5490862292601606972 - i), " ".join(map(str, ids)),
                     "2017-3-31", g, age, "x", "Colorado", "1", "x", str(int(rng.random() < 0.3))])
    if bad is not None:
        r, col, value = bad
        rows[r][HATE_HEADER.index(col)] = value
    return write_csv(path, HATE_HEADER, rows, delimiter="\t")


def hate_dir(tmp_path, train=False):
    root = tmp_path / "hate"
    root.mkdir(parents=True, exist_ok=True)
    hate_tsv(root / "English_valid.tsv", 60, 0)
    hate_tsv(root / "English_test.tsv", 30, 1)
    if train:
        hate_tsv(root / "English_train.tsv", 80, 2)
    return root


def test_hate_speech_english_valid_as_train(tmp_path, capsys):
    root = hate_dir(tmp_path)
    dm = HateSpeech(str(root), language="English", attribute="gender", val_fraction=0.2)
    s = dm.splits
    assert dm.protocol == "valid_as_train" and "English_valid.tsv" in capsys.readouterr().out
    assert len(s["train"]) + len(s["val"]) == 60 and len(s["test"]) == 30 and len(s["val"]) >= 10
    assert dm.group_names == ["gender=0", "gender=1"] and dm.class_names == ["non-hate", "hate"]
    x = s["train"][0]["x"]
    assert x.dtype == torch.long and x.shape == (10,)
    all_x = torch.cat([s[k].x for k in s])
    assert dm.input_dim == int(all_x.max()) + 1
    # left padding kept, unknown "x" attributes -> -1 (rows 0, 5, 10, ... of each file)
    assert torch.all(all_x[:, -1] > 0)
    assert int((s["test"].a == -1).sum()) == 6
    # the file's first test row, parsed by hand
    first = open(root / "English_test.tsv").read().splitlines()[1].split("\t")
    assert s["test"].x[0].tolist() == [int(v) for v in first[2].split()]
    assert int(s["test"].y[0]) == int(first[10])


def test_hate_speech_intersectional_standard_and_options(tmp_path):
    root = hate_dir(tmp_path, train=True)
    dm = HateSpeech(str(root), attribute=["gender", "age"], drop_unknown=True, vocab_size=100)
    s = dm.splits
    assert dm.protocol == "standard" and dm.input_dim == 100
    assert dm.group_names == ["gender=0|age=0", "gender=0|age=1", "gender=1|age=0", "gender=1|age=1"]
    assert {k: int((v.a < 0).sum()) for k, v in s.items()} == {"train": 0, "val": 0, "test": 0}
    # rows with x in gender (i % 5 == 0) or age (i % 7 == 0) dropped from the 80 train rows
    assert len(s["train"]) == sum(1 for i in range(80) if i % 5 and i % 7)
    with pytest.raises(DataError, match="vocab_size=10"):
        HateSpeech(str(root), vocab_size=10).splits
    with pytest.raises(FileNotFoundError, match="valid_as_train"):
        HateSpeech(str(hate_dir(tmp_path / "b")), split_protocol="standard").splits
    with pytest.raises(ValueError, match="attribute"):
        HateSpeech(str(root), attribute="religion")


def test_hate_speech_two_views_edit_token_ids(tmp_path):
    dm = HateSpeech(str(hate_dir(tmp_path)), two_views=True, eda_p=0.3, seed=1)
    ds = dm.splits["train"]
    changed = 0
    for i in range(len(ds)):
        item = ds[i]
        orig = set(ds.x[i][ds.x[i] > 0].tolist())
        for v in (item["x"], item["x2"]):
            assert v.shape == ds.x[i].shape
            assert set(v[v > 0].tolist()) <= orig  # swap/delete only: no new ids
        changed += int(not torch.equal(item["x"], ds.x[i]))
    assert changed > len(ds) // 3


@pytest.mark.parametrize("col,value", [("text", "0 0 12 a7"), ("label", "2"), ("age", "young")])
def test_hate_speech_rejects_malformed(tmp_path, col, value):
    root = hate_dir(tmp_path)
    hate_tsv(root / "English_test.tsv", 30, 1, bad=(4, col, value))
    with pytest.raises(DataError) as err:
        HateSpeech(str(root), attribute=["gender", "age"]).splits
    error_names(err, "English_test.tsv", col, 4)


# ============================================================================================ JigsawTemplates
def templates_dir(tmp_path, bad_label=False):
    root = tmp_path / "templates"
    root.mkdir(parents=True)
    terms = ["gay", "african", "african american", "old", "older"]
    (root / "adjectives_people.txt").write_text("\n".join(terms) + "\n")
    write_csv(root / "words.csv", ["type", "subtype", "connotation", "word"],
              [["identity", "sexuality", "neutral", "gay"], ["identity", "ethnicity", "neutral", "african"],
               ["identity", "ethnicity", "neutral", "african american"], ["identity", "age", "neutral", "old"],
               ["identity", "age", "neutral", "older"], ["name", "", "neutral", "Jim"]])
    rows = []
    for term in terms:
        for adj, tox in (("kind", "nontoxic"), ("vile", "toxic"), ("nice", "nontoxic"), ("awful", "toxic")):
            rows.append(["name_adj", tox, f"Jim is a {adj} {term}"])
    rows.append(["you_occupation", "nontoxic", "You are a great actor"])
    if bad_label:
        rows[3][1] = "sometimes"
    write_csv(root / "en_sentence_templates.csv", ["template", "toxicity", "phrase"], rows)
    return root


def test_jigsaw_templates_identity_terms(tmp_path):
    root = templates_dir(tmp_path)
    dm = JigsawTemplates(str(root), representation="text", probe_fraction=0.5)
    s = dm.splits
    assert dm.group_names == ["gay", "african", "african american", "old", "older"]
    assert len(s["train"]) + len(s["test"]) == 20  # the occupation sentence has no identity term
    assert torch.equal(s["train"].y, s["val"].y) and len(s["train"]) == 10  # train = val (documented)
    rows = {s[k][i]["x"]: int(s[k].a[i]) for k in ("train", "test") for i in range(len(s[k]))}
    assert rows["Jim is a kind african american"] == 2 and rows["Jim is a kind african"] == 1  # longest match
    assert rows["Jim is a vile older"] == 4 and rows["Jim is a vile old"] == 3  # whole words
    cat = JigsawTemplates(str(root), group_by="category", keep_unmatched=True, representation="text")
    assert cat.group_names == ["age", "ethnicity", "sexuality"]
    tot = sum(cat.splits[k].counts() for k in ("train", "test"))
    assert tot.tolist() == [[4, 4, 2, 1], [4, 4, 2, 0]]


def test_jigsaw_templates_rejects_malformed(tmp_path):
    with pytest.raises(DataError) as err:
        JigsawTemplates(str(templates_dir(tmp_path, bad_label=True))).splits
    error_names(err, "en_sentence_templates.csv", "toxicity", 3)


# ============================================================================================ TextCSV
def test_text_csv_split_column_and_intersections(tmp_path):
    rows = []
    for i in range(24):
        rows.append([f"text number {i}", ["pos", "neg"][i % 2], ["f", "m", "x"][i % 3], ["b", "w"][(i // 2) % 2],
                     ["train", "train", "dev", "test"][i % 4]])
    write_csv(tmp_path / "d.tsv", ["body", "sent", "gender", "race", "part"], rows, delimiter="\t")
    dm = TextCSV(str(tmp_path), files="d.tsv", text_column="body", label_column="sent",
                 attribute_columns=["gender", "race"], split_column="part", class_names=["neg", "pos"],
                 representation="text")
    s = dm.splits
    assert {k: len(v) for k, v in s.items()} == {"train": 12, "val": 6, "test": 6}
    assert dm.group_names == ["f|b", "f|w", "m|b", "m|w"]
    assert int(s["train"].y[0]) == 1 and int(s["train"].a[0]) == 0  # row 0: pos, f, b
    assert int((sum(v.counts() for v in s.values())[:, -1]).sum()) == 8  # gender x -> unknown


def test_text_csv_threshold_seeded_split_and_errors(tmp_path):
    rows = [[f"t{i}", f"{i / 20:.2f}", "g1" if i % 2 else "g0"] for i in range(20)]
    write_csv(tmp_path / "a.csv", ["text", "score", "group"], rows)
    dm = TextCSV(str(tmp_path), files=["a.csv"], label_column="score", label_threshold=0.5, representation="text",
                 val_fraction=0.2, test_fraction=0.2)
    s = dm.splits
    assert dm.class_names == ["<0.5", ">=0.5"] and sum(len(v) for v in s.values()) == 20
    assert int(sum(v.counts() for v in s.values())[1, :2].sum()) == 10
    bad = [r[:] for r in rows]
    bad[6][2] = "g7"
    write_csv(tmp_path / "b.csv", ["text", "score", "group"], bad)
    with pytest.raises(DataError) as err:
        TextCSV(str(tmp_path), files="b.csv", label_column="score", attribute_categories=[["g0", "g1"]]).splits
    error_names(err, "b.csv", "group", 6)
    with pytest.raises(DataError) as err:
        TextCSV(str(tmp_path), files="a.csv", label_column="score", class_names=["0.00", "0.05"]).splits
    error_names(err, "a.csv", "score", 2)
    with pytest.raises(FileNotFoundError, match="TextCSV file"):
        TextCSV(str(tmp_path), files="missing.csv").splits


def test_text_datamodule_two_views_use_eda(tmp_path):
    from faircl.data.augment import EDA

    dm = BiasInBios(str(bios_dir(tmp_path, per_cell=10)), representation="text", two_views=True, eda_p=0.3)
    ds = dm.splits["train"]
    assert isinstance(ds.view_transform, EDA)
    pairs = [ds[i] for i in range(len(ds))]
    assert all(isinstance(p["x2"], str) for p in pairs)
    assert sum(p["x"] != p["x2"] for p in pairs) > len(pairs) // 2
    tok = BiasInBios(str(bios_dir(tmp_path / "t", per_cell=10)), representation="tokens", two_views=True)
    item = tok.splits["train"][0]
    assert item["x"].shape == item["x2"].shape == (tok.max_len,)


# ============================================================================================ feature cache
def test_feature_cache_hit_skips_encoding(tiny_bert, tmp_path, monkeypatch, capsys):
    from faircl.models.encoders import HFTextEncoder

    calls = []
    real_encode = FeatureCache._encode

    def counting(self, texts, *args, **kwargs):
        calls.append(len(texts))
        return real_encode(self, texts, *args, **kwargs)

    monkeypatch.setattr(FeatureCache, "_encode", counting)
    texts = ["the nurse cares for patients", "he operates", "she is kind", "a surgeon"]
    cache = FeatureCache(tmp_path / "cache", batch_size=3, progress=False)
    first = cache.features(texts, tiny_bert, "mean", 32, name="tiny")
    assert cache.last_hit is False and calls == [4]
    assert "encoded tiny 4 texts" in capsys.readouterr().out
    again = FeatureCache(tmp_path / "cache", batch_size=2, progress=False)
    second = again.features(texts, tiny_bert, "mean", 32, name="tiny")
    assert again.last_hit is True and calls == [4]  # nothing re-encoded
    assert "encoding skipped" in capsys.readouterr().out
    assert isinstance(second, np.memmap) and np.array_equal(first, second)
    # the cached rows are the encoder's pooled features, in input order
    enc = HFTextEncoder(model_dir=tiny_bert, max_length=32).eval()
    with torch.no_grad():
        torch.testing.assert_close(torch.tensor(np.asarray(second)), enc(texts), atol=1e-5, rtol=1e-4)
    # other texts, pooling or length are other entries
    keys = {cache.key(texts, tiny_bert, "mean", 32), cache.key(texts[:3], tiny_bert, "mean", 32),
            cache.key(texts, tiny_bert, "cls", 32), cache.key(texts, tiny_bert, "mean", 16),
            cache.key(["the nurse cares for", "patients he operates", *texts[2:]], tiny_bert, "mean", 32)}
    assert len(keys) == 5


def test_feature_cache_default_dir_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("FAIRCL_CACHE", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c" / "features"
    assert FeatureCache().cache_dir == tmp_path / "c" / "features"
    monkeypatch.delenv("FAIRCL_CACHE")
    assert default_cache_dir().parts[-3:] == (".cache", "faircl", "features")


def test_feature_cache_bf16_runs(tiny_bert, tmp_path):
    cache = FeatureCache(tmp_path, bf16=True, progress=False)
    feats = cache.features(["the nurse", "he operates"], tiny_bert)
    assert feats.dtype == np.float32 and feats.shape == (2, 16) and np.isfinite(feats).all()
    assert cache.key(["x"], tiny_bert, "mean", 128) != FeatureCache(tmp_path).key(["x"], tiny_bert, "mean", 128)


def test_frozen_features_datamodule_and_cache_reuse(tiny_bert, tmp_path, capsys):
    root = bios_dir(tmp_path, per_cell=4)
    kw = dict(features="frozen", encoder_dir=tiny_bert, cache_dir=str(tmp_path / "cache"), max_length=32,
              val_fraction=0.25, test_fraction=0.25)
    dm = BiasInBios(str(root), **kw)
    s = dm.splits
    assert dm.input_dim == 16
    item = s["train"][0]
    assert item["x"].dtype == torch.float32 and item["x"].shape == (16,)
    assert "encoding skipped" not in capsys.readouterr().out
    again = BiasInBios(str(root), **kw)
    again.splits
    out = capsys.readouterr().out
    assert out.count("encoding skipped") == 3 and "encoded" not in out
    assert again.feature_cache.last_hit
    torch.testing.assert_close(again.splits["test"][1]["x"], s["test"][1]["x"])
    # two views: cached EDA copies of the train texts; views never leak into evaluation
    views = BiasInBios(str(root), two_views=True, frozen_views=2, eda_p=0.3, **kw)
    tr = views.splits["train"]
    pair = tr[0]
    assert pair["x"].shape == pair["x2"].shape == (16,)
    plain = views.plain_loader("train")
    first = next(iter(plain))
    torch.testing.assert_close(first["x"][0], s["train"][0]["x"])
    assert "x2" not in first
    # an mlp encoder trains on top of the frozen features
    from faircl.models import build_encoder

    h = build_encoder("mlp", views.input_dim, hidden_dim=8)(first["x"])
    assert h.shape == (len(first["x"]), 8)


def test_features_and_representation_arguments_checked(tmp_path):
    with pytest.raises(ValueError, match="representation"):
        BiasInBios(str(tmp_path), representation="chars")
    with pytest.raises(ValueError, match="features"):
        BiasInBios(str(tmp_path), features="fine-tuned")


def test_text_datamodule_trains_with_tokens_encoder(tmp_path):
    """A HateSpeech batch feeds the ``tokens`` encoder end to end (fit + test, fast_dev_run)."""
    import lightning as L

    from faircl.methods.ce import CE
    from faircl.testing import quiet_trainer_kwargs

    dm = HateSpeech(str(hate_dir(tmp_path)), batch_size=8)
    model = CE(num_classes=dm.num_classes, num_groups=dm.num_groups, input_dim=dm.input_dim, encoder="tokens",
               encoder_kwargs={"embed_dim": 8, "hidden_dim": 4})
    trainer = L.Trainer(fast_dev_run=True, **quiet_trainer_kwargs())
    before = model.encoder.embed.weight.detach().clone()
    trainer.fit(model, datamodule=dm)
    assert model.encoder.embed.num_embeddings == dm.input_dim > 2  # one embedding row per vocabulary entry
    assert trainer.global_step == 1 and not torch.equal(model.encoder.embed.weight, before)  # it trained a step
    trainer.test(model, datamodule=dm, verbose=False)
    assert 0.0 <= model.test_report["accuracy"] <= 1.0


# ============================================================================================ real data
def test_real_bias_in_bios_samples(data_dir):
    root = data_dir / "bias_in_bios_samples"
    dm = BiasInBios(str(root), representation="text")
    s = dm.splits
    assert len(dm.class_names) == 28 and dm.class_names[0] == "accountant"
    total = sum(v.counts() for v in s.values())
    assert total.sum() == 280 and total.sum(1).tolist() == [10] * 28
    assert total[:, 0].sum() == 155 and total[:, 1].sum() == 125  # male, female
    assert total[dm.class_names.index("nurse")].tolist() == [0, 10, 0]
    complete = BiasInBios(str(root / "accountant_complete.csv"), representation="text")
    assert sum(v.counts() for v in complete.splits.values()).tolist() == [[634, 366, 0]]


def test_real_hate_speech(data_dir):
    root = data_dir / "multilingual_hate_speech_demographics"
    dm = HateSpeech(str(root), language="English", attribute="gender")
    s = dm.splits
    assert dm.protocol == "valid_as_train"
    assert len(s["train"]) + len(s["val"]) == 12681 and len(s["test"]) == 12682
    test_counts = s["test"].counts()
    assert 0.70 < test_counts[1].sum() / 12682 < 0.74  # 72% hate in English_test
    train_rate = (s["train"].counts()[1].sum() + s["val"].counts()[1].sum()) / 12681
    assert 0.21 < train_rate < 0.25  # 23% in English_valid
    assert dm.input_dim > 1000
    polish = HateSpeech(str(root), language="Polish", attribute="age")
    ps = polish.splits
    assert polish.protocol == "standard" and len(ps["train"]) == 7643
    c = ps["train"].counts().double()
    rate = c[1, :2] / c[:, :2].sum(0)
    assert rate[0] > 0.12 and rate[1] < 0.01  # the documented age bias: 16.5% vs 0.4% hate


def test_real_jigsaw_templates(data_dir):
    dm = JigsawTemplates(str(data_dir / "jigsaw_sentence_templates"), representation="text")
    s = dm.splits
    assert len(dm.group_names) == 50
    total = s["train"].counts() + s["test"].counts()
    assert total.sum() == 76564 - 864  # every template except the 864 occupation sentences
    assert total[1].sum() == 38282 - 432


def test_cli_selects_text_datamodules_by_name(in_tmp):
    """``--data BiasInBios`` / ``HateSpeech`` with their own and inherited arguments, input_dim linked to the model."""
    from faircl.cli import run_cli as main

    bios = bios_dir(in_tmp, per_cell=6)
    cli = main(["fit", "--model", "CE", "--model.encoder", "bow", "--data", "BiasInBios", "--data.data_dir", str(bios),
          "--data.representation", "tokens", "--data.max_len", "16", "--data.batch_size", "4",
          "--data.val_fraction", "0.2", "--trainer.fast_dev_run=true", "--trainer.accelerator=cpu",
          "--trainer.logger=false", "--trainer.enable_progress_bar=false"])
    assert isinstance(cli.datamodule, BiasInBios) and cli.datamodule.max_len == 16
    _check_linked(cli)
    hate = hate_dir(in_tmp)
    cli = main(["fit", "--model", "CE", "--model.encoder", "tokens", "--model.encoder_kwargs",
          '{"embed_dim": 8, "hidden_dim": 4}', "--data", "HateSpeech", "--data.data_dir", str(hate),
          "--data.attribute", '["gender", "age"]', "--data.batch_size", "8", "--trainer.fast_dev_run=true",
          "--trainer.accelerator=cpu", "--trainer.logger=false", "--trainer.enable_progress_bar=false"])
    assert isinstance(cli.datamodule, HateSpeech) and cli.datamodule.batch_size == 8
    _check_linked(cli)


def _check_linked(cli) -> None:
    """The model was built with the datamodule's sizes: ``input_dim`` (the vocabulary, the encoder's embedding rows),
    ``num_classes`` and ``num_groups``; none of them is the model's default."""
    model, dm = cli.model, cli.datamodule
    assert model.hparams.input_dim == dm.input_dim > 2 and model.encoder.embed.num_embeddings == dm.input_dim
    assert (model.num_classes, model.num_groups) == (dm.num_classes, dm.num_groups)
