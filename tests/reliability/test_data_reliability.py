"""Input checks: non-finite features, numeric labels, pickle inputs, and the training-time non-finite loss guard."""

from __future__ import annotations

import csv
import pickle
import re

import lightning as L
import pytest
import torch

from faircl.data.base import FairDataModule, FairDataset
from faircl.data.io import DataError, label_values, read_table
from faircl.data.synthetic import BiasedFeatures
from faircl.data.text.bios import BiasInBios
from faircl.data.text.csv import TextCSV
from faircl.data.vision.csv import ImageCSV
from faircl.methods.ce import CE
from faircl.testing import quiet_trainer_kwargs


class _Tiny(FairDataModule):
    def __init__(self, bad: dict[str, tuple[int, int, float]] | None = None, **kw):
        super().__init__(**kw)
        self.bad = bad or {}
        self.class_names, self.group_names = ["c0", "c1"], ["g0", "g1"]

    @property
    def input_dim(self) -> int:
        return 4

    def load_splits(self):
        out = {}
        for i, split in enumerate(("train", "val", "test")):
            g = torch.Generator().manual_seed(i)
            x = torch.randn(16, 4, generator=g)
            if split in self.bad:
                r, c, v = self.bad[split]
                x[r, c] = v
            out[split] = FairDataset(x, torch.arange(16) % 2, (torch.arange(16) // 2) % 2, num_classes=2,
                                     num_groups=2, source=f"tiny[{split}]")
        return out


@pytest.mark.parametrize("split,value", [("train", float("nan")), ("test", float("inf")), ("val", -float("inf"))])
def test_non_finite_features_name_split_row_and_column(split, value):
    dm = _Tiny({split: (5, 2, value)})
    with pytest.raises(DataError) as err:
        dm.setup("fit")
    msg = str(err.value)
    assert f"{split!r} split" in msg and "row 5" in msg and "column 'x[2]'" in msg, msg
    _Tiny().setup("fit")  # clean data passes


class _NanAtStep(CE):
    """CE whose loss turns NaN at global step 2."""

    def losses(self, batch, out):
        terms = super().losses(batch, out)
        if self.global_step == 2:
            terms["ce"] = terms["loss"] * float("nan")
            terms["loss"] = terms["ce"]
        return terms


def test_non_finite_loss_stops_with_step_term_and_rows():
    dm = BiasedFeatures(n_train=64, n_val=16, n_test=16, dim=8, batch_size=16)
    model = _NanAtStep(num_classes=2, num_groups=2, input_dim=8, leakage=False)
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=1))
    with pytest.raises(FloatingPointError) as err:
        trainer.fit(model, dm)
    msg = str(err.value)
    assert "'ce'" in msg and "global step 2" in msg and "idx=[" in msg, msg
    rows = [int(v) for v in re.search(r"idx=\[([^\]]*)\]", msg).group(1).split(",")]
    assert len(rows) == 16 and all(0 <= r < 64 for r in rows)


def _write(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_numeric_labels_are_numbers_in_text_csv(tmp_path):
    rows = [[f"text {i}", ["1", "1.0", "0", "0.0", " 1 ", "1e0"][i % 6], "ab"[i % 2]] for i in range(24)]
    _write(tmp_path / "d.csv", ["text", "label", "group"], rows)
    dm = TextCSV(str(tmp_path), files="d.csv", representation="text")
    s = dm.splits
    assert dm.class_names == ["0", "1"]
    y = torch.cat([s[k].y for k in s])
    assert sorted(set(y.tolist())) == [0, 1] and int((y == 1).sum()) == 16
    dm = TextCSV(str(tmp_path), files="d.csv", representation="text", class_names=["0.0", "1.0"])
    assert int(sum(int((v.y == 1).sum()) for v in dm.splits.values())) == 16
    rows[7][1] = "yes"
    _write(tmp_path / "m.csv", ["text", "label", "group"], rows)
    with pytest.raises(DataError) as err:
        TextCSV(str(tmp_path), files="m.csv", representation="text").splits
    msg = str(err.value)
    assert "m.csv" in msg and "column 'label'" in msg and re.search(r"\brow 7\b", msg) and "mixes" in msg, msg


def test_numeric_labels_are_numbers_in_image_csv(tmp_path):
    from PIL import Image

    (tmp_path / "imgs").mkdir()
    lines = ["path,label,group"]
    for i in range(12):
        Image.new("RGB", (8, 8), (i * 10, 0, 0)).save(tmp_path / "imgs" / f"{i}.png")
        lines.append(f"{i}.png,{['2', '2.0', '10'][i % 3]},{'ab'[i % 2]}")
    (tmp_path / "meta.csv").write_text("\n".join(lines) + "\n")
    table = ImageCSV(str(tmp_path), csv="meta.csv", image_root="imgs", image_size=8).read_table()
    assert table.class_names == ["2", "10"] and table.y.tolist()[:3] == [0, 0, 1]
    lines[5] = "4.png,cat,a"
    (tmp_path / "meta.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"meta.csv', line 6, column 'label'.*mixes"):
        ImageCSV(str(tmp_path), csv="meta.csv", image_root="imgs", image_size=8).read_table()


def test_label_values_helper():
    assert label_values(["1", "1.0", "2.50", "-3"]) == (["1", "1", "2.5", "-3"], True)
    assert label_values(["a", "b "]) == (["a", "b"], False)
    with pytest.raises(DataError, match="mixes"):
        label_values(["1", "2", "x"])


class _Evil:
    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path(__import__('os').environ['EVIL_FLAG']).write_text('ran')",))


def test_pickle_inputs_need_allow_pickle(tmp_path, monkeypatch):
    flag = tmp_path / "ran.txt"
    monkeypatch.setenv("EVIL_FLAG", str(flag))
    with open(tmp_path / "bios.pkl", "wb") as f:
        pickle.dump(_Evil(), f)
    for read in (lambda: read_table(tmp_path / "bios.pkl"),
                 lambda: BiasInBios(str(tmp_path / "bios.pkl"), representation="text").splits,
                 lambda: TextCSV(str(tmp_path), files="bios.pkl", representation="text").splits):
        with pytest.raises(DataError, match="allow_pickle=True") as err:
            read()
        assert "bios.pkl" in str(err.value) and "run arbitrary code" in str(err.value)
    assert not flag.exists()
    rows = [{"text": f"t{i}", "label": i % 2, "group": "ab"[i % 2]} for i in range(20)]
    with open(tmp_path / "ok.pkl", "wb") as f:
        pickle.dump(rows, f)
    dm = TextCSV(str(tmp_path), files="ok.pkl", representation="text", allow_pickle=True)
    assert sum(len(v) for v in dm.splits.values()) == 20
