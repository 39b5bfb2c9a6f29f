"""Attribute cells follow the rule of label cells in every CSV datamodule: numerically equal spellings (``0``, ``1``,
``1.0``, `` 1 ``, ``1e0``) are one group; text values stay text."""

from __future__ import annotations

import numpy as np

from faircl.data.base import encode_groups
from faircl.data.text.csv import TextCSV


def test_encode_groups_merges_numeric_spellings():
    ids, names = encode_groups([["0", "1", "1.0", " 1", "1e0", 0, 1.0, "x"]], unknown=("x",))
    assert names == ["0", "1"]
    assert ids.tolist() == [0, 1, 1, 1, 1, 0, 1, -1]
    ids, names = encode_groups([["2", "10", "10.0"]])  # numeric order, not string order
    assert names == ["2", "10"] and ids.tolist() == [0, 1, 1]
    ids, names = encode_groups([["f", "m", " m"]])  # text stays text (stripped)
    assert names == ["f", "m"] and ids.tolist() == [0, 1, 1]
    ids, names = encode_groups([["1.0", "0"]], categories=[[1, 0]])  # given categories: same rule
    assert names == ["1", "0"] and ids.tolist() == [0, 1]


def test_textcsv_attribute_0_1_and_1_0_are_two_groups(tmp_path):
    spell = ["0", "1", "1.0", " 1 "]
    rows = ["text,label,group"] + [f"word{i} day,{i % 2},{spell[i % 4]}" for i in range(48)]
    (tmp_path / "all.csv").write_text("\n".join(rows) + "\n")
    dm = TextCSV(data_dir=str(tmp_path), files={"train": "all.csv", "val": "all.csv", "test": "all.csv"},
                 attribute_columns="group", batch_size=8)
    dm.setup("fit")
    assert dm.num_groups == 2 and list(dm.group_names) == ["0", "1"]
    a = np.asarray(dm.splits["train"].a)
    assert a.tolist() == [0 if spell[i % 4] == "0" else 1 for i in range(48)]
