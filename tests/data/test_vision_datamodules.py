"""Image DataModules: published file formats written here in miniature, malformed rows, the real UTKFace subset."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from faircl.data.base import DataError
from faircl.data.vision import (CUB200, UTKFace, CelebA, ColoredDigits, ImageCSV, fitzpatrick_type, imbalance_rows,
                                individual_typology_angle, srgb_to_lab)


def _image(path: Path, color=(120, 80, 60), size=(20, 24)) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(path)


# ------------------------------------------------------------------------------------------------ UTKFace
def _utk(root: Path, n_per_cell: int = 3, extra: str = "") -> Path:
    rows = ["filename,age,gender,gender_name,race,race_name"]
    races = ["White", "Black", "Asian", "Indian", "Others"]
    k = 0
    for gender, gname in ((0, "male"), (1, "female")):
        for race in range(5):
            for j in range(n_per_cell):
                age = [5, 25, 45, 70][(k + j) % 4]
                name = f"{age}_{gender}_{race}_2017{k:04d}{j}.jpg.chip.jpg"
                _image(root / "images" / name, color=(40 * race, 100, 30 * gender + 50))
                rows.append(f"{name},{age},{gender},{gname},{race},{races[race]}")
            k += 1
    (root / "labels.csv").write_text("\n".join(rows) + "\n" + extra)
    return root


def test_utkface_parses_targets_and_attributes(tmp_path):
    root = _utk(tmp_path)
    dm = UTKFace(str(root), target="age_bins", attribute="race", age_bins=[20, 40, 60], image_size=16)
    table = dm.read_table()
    assert table.class_names == ["<20", "20-39", "40-59", ">=60"]
    assert table.group_names == ["White", "Black", "Asian", "Indian", "Others"]
    ages = [int(Path(p).name.split("_")[0]) for p in table.paths]
    expected = [sum(age >= e for e in (20, 40, 60)) for age in ages]
    assert table.y.tolist() == expected
    assert table.a.tolist() == [int(Path(p).name.split("_")[2]) for p in table.paths]
    dm = UTKFace(str(root), target="gender", attribute="race", image_size=16, batch_size=4)
    dm.setup()
    sizes = {s: len(dm.splits[s]) for s in ("train", "val", "test")}
    assert sum(sizes.values()) == 30 and min(sizes.values()) >= 1
    batch = next(iter(dm.train_dataloader()))
    assert batch["x"].shape == (4, 3, 16, 16) and batch["x"].dtype == torch.float32
    assert set(batch) == {"x", "y", "a", "idx"}


@pytest.mark.parametrize("extra, needle", [
    ("x.jpg,abc,0,male,0,White\n", "column 'age'"),
    ("x.jpg,30,0,male,7,Other\n", "column 'race'"),
    ("x.jpg,30,0\n", "expected 6 fields"),
])
def test_utkface_malformed_row_names_file_and_line(tmp_path, extra, needle):
    root = _utk(tmp_path, n_per_cell=1, extra=extra)
    dm = UTKFace(str(root), image_size=16)
    with pytest.raises(DataError) as err:
        dm.read_table()
    msg = str(err.value)
    assert "labels.csv" in msg and "line 12" in msg and needle in msg


def test_utkface_missing_files_and_images(tmp_path, capsys):
    with pytest.raises(DataError, match="not a directory"):
        UTKFace(str(tmp_path / "nope")).setup()
    with pytest.raises(DataError, match="labels.csv"):
        UTKFace(str(tmp_path)).setup()
    root = _utk(tmp_path, n_per_cell=2)
    gone = sorted((root / "images").iterdir())[3]
    gone.unlink()
    with pytest.raises(DataError, match=f"1 of 20 rows.*{gone.name}"):
        UTKFace(str(root), image_size=16).setup()
    dm = UTKFace(str(root), image_size=16, missing_images="drop")
    dm.setup()
    assert sum(len(dm.splits[s]) for s in ("train", "val", "test")) == 19
    assert dm.missing == [str(gone)]
    assert "1 of 20 rows" in capsys.readouterr().out


def test_utkface_real_subset_has_300_per_cell(data_dir):
    root = data_dir / "utkface_subset"
    if not root.is_dir():
        pytest.skip("utkface_subset not in the data folder")
    dm = UTKFace(str(root), target="gender", attribute="race", image_size=32)
    table = dm.read_table()
    cells = Counter(zip(table.y.tolist(), table.a.tolist()))
    assert len(cells) == 10 and set(cells.values()) == {300}
    splits = dm.splits
    total = sum(splits[s].counts()[:, :5] for s in ("train", "val", "test"))
    assert (total == 300).all()
    # the seeded split is stratified: every (gender, race) cell has the same share in test
    assert (splits["test"].counts()[:, :5] == 60).all()
    x = splits["train"][0]["x"]
    assert x.shape == (3, 32, 32) and torch.isfinite(x).all()


# ------------------------------------------------------------------------------------------------ CelebA
_ATTRS = ["Male", "Smiling", "Young"]


def _celeba(root: Path, rows: list[str] | None = None, n_images: int = 8, declared: int = 202599) -> Path:
    if rows is None:
        rows = []
        for i in range(1, 11):
            vals = [1 if i % 2 else -1, 1 if i % 3 == 0 else -1, 1 if i <= 5 else -1]
            rows.append(f"{i:06d}.jpg " + " ".join(f"{v:2d}" for v in vals))
    (root / "list_attr_celeba.txt").write_text(f"{declared}\n" + " ".join(_ATTRS) + " \n" + "\n".join(rows) + "\n")
    for i in range(1, n_images + 1):
        _image(root / "images" / f"{i:06d}.jpg", size=(178, 218))
    return root


def test_celeba_parses_official_format(tmp_path, capsys):
    root = _celeba(tmp_path)
    dm = CelebA(str(root), target="Smiling", protected=["Male", "Young"], missing_images="drop", image_size=16,
                val_fraction=0.25)
    table = dm.read_table()
    out = capsys.readouterr().out
    assert "declares 202599 images on line 1 but holds 10 rows" in out
    assert table.y.tolist() == [1 if i % 3 == 0 else 0 for i in range(1, 11)]
    assert table.group_names == ["not Male|not Young", "not Male|Young", "Male|not Young", "Male|Young"]
    assert table.a.tolist() == [2 * (i % 2) + (i <= 5) for i in range(1, 11)]
    dm.setup()
    assert sum(len(dm.splits[s]) for s in ("train", "val", "test")) == 8
    assert "2 of 10 rows" in capsys.readouterr().out and dm.missing[0].endswith("000009.jpg")


def test_celeba_missing_images_error_names_them(tmp_path):
    root = _celeba(tmp_path)
    with pytest.raises(DataError, match=r"2 of 10 rows.*line 11.*000009\.jpg.*missing_images='drop'"):
        CelebA(str(root), target="Smiling").setup()


@pytest.mark.parametrize("bad, needle", [
    ("000003.jpg  1  0 -1", "line 5, column 'Smiling': value '0'"),
    ("000003.jpg  1 -1", "line 5: expected a file name and 3 values"),
])
def test_celeba_malformed_rows(tmp_path, bad, needle):
    rows = ["000001.jpg  1 -1  1", "000002.jpg -1  1  1", bad]
    root = _celeba(tmp_path, rows=rows)
    with pytest.raises(DataError) as err:
        CelebA(str(root), target="Smiling").read_table()
    assert "list_attr_celeba.txt" in str(err.value) and needle in str(err.value)


def test_celeba_header_and_unknown_attribute(tmp_path):
    root = _celeba(tmp_path)
    (root / "list_attr_celeba.txt").write_text("many\nMale Smiling\n")
    with pytest.raises(DataError, match="line 1: expected the number of images"):
        CelebA(str(root)).read_table()
    root = _celeba(tmp_path)
    with pytest.raises(DataError, match="'Bald' is not a column"):
        CelebA(str(root), target="Bald").read_table()


def test_celeba_official_partition(tmp_path):
    root = _celeba(tmp_path, n_images=10)
    part = [f"{i:06d}.jpg {0 if i <= 6 else (1 if i <= 8 else 2)}" for i in range(1, 11)]
    (root / "list_eval_partition.txt").write_text("\n".join(part) + "\n")
    dm = CelebA(str(root), target="Smiling", protected="Male", image_size=16)
    dm.setup()
    assert [len(dm.splits[s]) for s in ("train", "val", "test")] == [6, 2, 2]
    (root / "list_eval_partition.txt").write_text("\n".join(part[:4] + ["000005.jpg 3"]) + "\n")
    with pytest.raises(DataError, match="list_eval_partition.txt.*line 5"):
        CelebA(str(root), target="Smiling", protected="Male").read_table()


def test_srgb_to_lab_reference_values():
    # Published CIELAB (D65) values of sRGB primaries and white.
    ref = {(1.0, 1.0, 1.0): (100.0, 0.0, 0.0), (1.0, 0.0, 0.0): (53.24, 80.09, 67.20),
           (0.0, 1.0, 0.0): (87.73, -86.18, 83.18), (0.0, 0.0, 1.0): (32.30, 79.19, -107.86),
           (0.0, 0.0, 0.0): (0.0, 0.0, 0.0)}
    for rgb, lab in ref.items():
        np.testing.assert_allclose(srgb_to_lab(np.array(rgb)), lab, atol=0.02)


def test_ita_and_fitzpatrick_thresholds():
    red = np.array([[1.0, 0.0, 0.0]])
    assert individual_typology_angle(red) == pytest.approx(math.degrees(math.atan((53.24 - 50) / 67.20)), abs=0.05)
    cases = {75.0: 0, 50.0: 0, 49.9: 1, 40.0: 1, 39.9: 2, 30.0: 2, 29.9: 3, 20.0: 3, 19.9: 4, 10.0: 4, 9.9: 5,
             -40.0: 5}
    for ita, k in cases.items():
        assert fitzpatrick_type(ita) == k, ita


def test_celeba_skin_tone_groups_from_pixels(tmp_path):
    root = _celeba(tmp_path, n_images=0)
    # Uniform faces: a light and a dark skin colour; their ITA follows from srgb_to_lab (tested above).
    colours = {i: ((236, 208, 190) if i <= 5 else (110, 70, 50)) for i in range(1, 11)}
    for i, c in colours.items():
        _image(root / "images" / f"{i:06d}.jpg", color=c, size=(178, 218))
    dm = CelebA(str(root), target="Smiling", skin_tone=True, image_size=16)
    table = dm.read_table()
    assert table.group_names == ["I", "II", "III", "IV", "V", "VI"]
    from PIL import Image

    for i in colours:
        with Image.open(root / "images" / f"{i:06d}.jpg") as im:  # JPEG shifts the colour a little
            decoded = np.asarray(im.convert("RGB"), dtype=np.float64)[100:150, 60:120].reshape(-1, 3).mean(0)
        lab = srgb_to_lab(decoded / 255.0)
        ita = math.degrees(math.atan2(lab[0] - 50, lab[2]))
        assert dm.ita[i - 1] == pytest.approx(ita, abs=0.5)
        assert table.a[i - 1] == fitzpatrick_type(ita)
    assert table.a[0] < table.a[9]


# ------------------------------------------------------------------------------------------------ CUB-200
def _cub(root: Path, labels_extra: str = "", n: int = 8) -> Path:
    (root / "attributes").mkdir(parents=True, exist_ok=True)
    names = {1: "has_bill_shape::curved_(up_or_down)", 2: "has_primary_color::blue",
             3: "has_primary_color::brown", 4: "has_primary_color::yellow", 5: "has_size::small_(5_-_9_in)"}
    (root / "attributes.txt").write_text("".join(f"{k} {v}\n" for k, v in names.items()))
    (root / "classes.txt").write_text("1 001.Black_footed_Albatross\n2 002.Laysan_Albatross\n")
    imgs, labels, split, attrs = [], [], [], []
    for i in range(1, n + 1):
        cls = 1 if i <= n // 2 else 2
        rel = f"{cls:03d}.Bird/Bird_{i:04d}.jpg"
        _image(root / "images" / rel)
        imgs.append(f"{i} {rel}")
        labels.append(f"{i} {cls}")
        split.append(f"{i} {1 if i % 2 else 0}")
        # class 1: blue on every image, brown on the first only; class 2: yellow mostly, image 8 also blue
        present = {2} if cls == 1 else {4}
        if i == 1:
            present = {2, 3}
        if i == 8:
            present = {2, 4}
        if i == 7:
            present = set()
        for a in names:
            attrs.append(f"{i} {a} {int(a in present)} 3 12.5")
    (root / "images.txt").write_text("\n".join(imgs) + "\n")
    (root / "image_class_labels.txt").write_text("\n".join(labels) + "\n")
    (root / "train_test_split.txt").write_text("\n".join(split) + "\n")
    (root / "attributes" / "image_attribute_labels.txt").write_text("\n".join(attrs) + "\n" + labels_extra)
    return root


def test_cub200_primary_colour_by_mode(tmp_path):
    root = _cub(tmp_path)
    table = CUB200(str(root), image_size=16).read_table()
    assert table.group_names == ["blue", "brown", "yellow"]
    assert table.class_names == ["001.Black_footed_Albatross", "002.Laysan_Albatross"]
    # class 1 mode = blue (image 1 has blue+brown -> blue); class 2 mode = yellow; image 7 (none) -> class mode;
    # image 8 (blue+yellow) -> yellow, the colour more frequent in its class
    assert table.a.tolist() == [0, 0, 0, 0, 2, 2, 2, 2]
    assert table.y.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert table.split.tolist().count("test") == 4
    by_class = CUB200(str(root), color_by="class", image_size=16).read_table()
    assert by_class.a.tolist() == [0, 0, 0, 0, 2, 2, 2, 2]


def test_cub200_malformed_and_missing(tmp_path):
    root = _cub(tmp_path, labels_extra="9 2 x 3 1.0\n")
    with pytest.raises(DataError, match=r"image_attribute_labels.txt', line 41: image_id, attribute_id"):
        CUB200(str(root)).read_table()
    root = _cub(tmp_path / "b")
    good = (root / "image_class_labels.txt").read_text()
    (root / "image_class_labels.txt").write_text("1 1\n2\n")
    with pytest.raises(DataError, match=r"image_class_labels.txt', line 2: expected 2 fields"):
        CUB200(str(root)).read_table()
    (root / "image_class_labels.txt").write_text(good)
    (root / "train_test_split.txt").unlink()
    with pytest.raises(DataError, match="train_test_split.txt.*is missing"):
        CUB200(str(root)).read_table()


# ------------------------------------------------------------------------------------------------ ImageCSV
def test_image_csv_generic_loader(tmp_path):
    rows = ["file,label,sex,age_group,part"]
    for i in range(12):
        _image(tmp_path / "imgs" / f"{i}.png")
        sex = ["f", "m", "x"][i % 3]
        rows.append(f"{i}.png,{['cat', 'dog'][i % 2]},{sex},{'old' if i < 6 else 'young'},"
                    f"{['train', 'train', 'valid', 'test'][i % 4]}")
    (tmp_path / "meta.csv").write_text("\n".join(rows) + "\n")
    dm = ImageCSV(str(tmp_path), csv="meta.csv", path_column="file", label_column="label",
                  attribute_columns=["sex", "age_group"], split_column="part", image_root="imgs", image_size=8)
    table = dm.read_table()
    assert table.class_names == ["cat", "dog"]
    assert table.group_names == ["f|old", "f|young", "m|old", "m|young"]
    assert table.a.tolist()[:6] == [0, 2, -1, 0, 2, -1]
    dm.setup()
    assert [len(dm.splits[s]) for s in ("train", "val", "test")] == [6, 3, 3]
    (tmp_path / "meta.csv").write_text("\n".join(rows[:3] + ["5.png,bird,f,old,train"]) + "\n")
    with pytest.raises(DataError, match="meta.csv', line 4, column 'label': label 'bird'"):
        ImageCSV(str(tmp_path), csv="meta.csv", path_column="file", label_column="label", attribute_columns="sex",
                 class_names=["cat", "dog"]).read_table()
    with pytest.raises(DataError, match="missing column"):
        ImageCSV(str(tmp_path), csv="meta.csv", path_column="path").read_table()


# ------------------------------------------------------------------------------------------------ shared pipeline
def test_induced_imbalance_shrinks_by_90_percent_and_draws_are_seeded():
    y = np.repeat(np.arange(10), 50)
    kept, chosen = imbalance_rows(y, num_values=10, n=3, ratio=0.9, seed=0, draw=0)
    counts = np.bincount(y[kept], minlength=10)
    assert len(chosen) == 3
    assert all(counts[c] == 5 for c in chosen) and all(counts[c] == 50 for c in range(10) if c not in chosen)
    again, chosen2 = imbalance_rows(y, num_values=10, n=3, ratio=0.9, seed=0, draw=0)
    assert chosen2 == chosen and np.array_equal(again, kept)
    draws = {tuple(imbalance_rows(y, num_values=10, n=3, seed=0, draw=d)[1]) for d in range(6)}
    assert len(draws) > 1
    kept, chosen = imbalance_rows(y, num_values=10, values=[7], ratio=0.9)
    assert chosen == [7] and np.bincount(y[kept])[7] == 5


def test_datamodule_imbalance_views_and_spc_batches(tmp_path):
    root = _utk(tmp_path, n_per_cell=6)
    dm = UTKFace(str(root), target="gender", attribute="race", image_size=16, cache=True, imbalance_by="attribute",
                 imbalance_values=[1, 2], two_views=True, sampler="samples_per_class", samples_per_class=2,
                 batch_size=4, val_fraction=0.2, test_fraction=0.2)
    dm.setup()
    counts = dm.splits["train"].counts()
    assert dm.imbalanced_ids == [1, 2]
    assert counts[:, 0].sum() > 5 * counts[:, 1].sum()
    batch = next(iter(dm.train_dataloader()))
    assert batch["x"].shape == batch["x2"].shape == (4, 3, 16, 16)
    assert not torch.equal(batch["x"], batch["x2"])
    assert sorted(Counter(batch["y"].tolist()).values()) == [2, 2]
    plain = next(iter(dm.plain_loader("train")))
    assert "x2" not in plain


def test_colored_digits_is_reexported():
    from faircl.data.synthetic import ColoredDigits as original

    assert ColoredDigits is original
