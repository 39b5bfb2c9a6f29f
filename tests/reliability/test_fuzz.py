"""Hypothesis fuzzing: table readers give a DataError or a correct dataset; metrics give a ValueError / TypeError
naming the argument or the reference result. Never another exception."""

from __future__ import annotations

import csv
import io
import math
import re

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faircl.data.io import DataError, read_table
from faircl.data.text.csv import TextCSV
from faircl.data.vision.csv import ImageCSV
from faircl.metrics import GroupFairness
from faircl.metrics import functional as F

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])


# ------------------------------------------------------------------------------------------------ table readers
@FUZZ
@given(data=st.binary(max_size=400), suffix=st.sampled_from([".csv", ".tsv", ".jsonl", ".json", ".parquet"]))
def test_read_table_random_bytes(tmp_path_factory, data, suffix):
    path = tmp_path_factory.mktemp("rb") / f"t{suffix}"
    path.write_bytes(data)
    try:
        df = read_table(path)
    except DataError as err:
        assert str(path) in str(err)
        return
    assert hasattr(df, "columns")


CELL = st.one_of(st.text(max_size=6), st.sampled_from(["1", "1.0", "0", "a", "b", "", "nan", "x", '"', ",", "\n"]))


@st.composite
def csv_files(draw):
    cols = draw(st.lists(st.sampled_from(["text", "label", "group", "other"]), min_size=1, max_size=4, unique=True))
    n = draw(st.integers(0, 14))
    rows = [[draw(CELL) for _ in cols] for _ in range(n)]
    if draw(st.booleans()):   # mostly valid files too
        rows = [[f"t{i} {draw(st.text(max_size=3))}" if c == "text" else draw(st.sampled_from(["0", "1", "1.0"]))
                 if c == "label" else draw(st.sampled_from(["f", "m", "x"])) for c in cols] for i in range(n)]
    buf = io.StringIO()
    csv.writer(buf).writerows([cols, *rows])
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "latin-1", "utf-16"]))
    return buf.getvalue().encode(encoding, errors="replace"), cols, rows


@FUZZ
@given(spec=csv_files())
def test_text_csv_random_tables(tmp_path_factory, spec):
    data, cols, rows = spec
    root = tmp_path_factory.mktemp("tc")
    (root / "d.csv").write_bytes(data)
    try:
        dm = TextCSV(str(root), files="d.csv", representation="text", val_fraction=0.2, test_fraction=0.2)
        splits = dm.splits
    except DataError as err:
        assert "d.csv" in str(err) or "split" in str(err), str(err)
        return
    total = sum(len(s) for s in splits.values())
    assert total == len(rows)
    for s in splits.values():
        assert len(s.x) == len(s.y) == len(s.a)
        assert int(s.y.min()) >= 0 and int(s.y.max()) < len(dm.class_names)
        assert int(s.a.min()) >= -1 and int(s.a.max()) < len(dm.group_names)
    cells = [r[cols.index("label")].strip() for r in rows]
    numeric = all(_is_number(c) for c in cells)
    labels = {float(c) for c in cells} if numeric else set(cells)
    assert len(dm.class_names) == len(labels)   # numerically equal labels are one class


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


@FUZZ
@given(spec=csv_files())
def test_image_csv_random_tables(tmp_path_factory, spec):
    data, cols, rows = spec
    root = tmp_path_factory.mktemp("ic")
    (root / "meta.csv").write_bytes(data.replace(b"text", b"path"))
    try:
        table = ImageCSV(str(root), csv="meta.csv").read_table()
    except DataError as err:
        assert "meta.csv" in str(err), str(err)
        return
    assert len(table.paths) == len(table.y) == len(table.a) == len(rows)
    assert int(table.y.max()) < len(table.class_names)


# ------------------------------------------------------------------------------------------------ metrics
def _reference_confusion(p, t, g, C, G):
    out = np.zeros((G, C, C), dtype=np.int64)
    for pi, ti, gi in zip(p, t, g):
        if gi >= 0:
            out[gi, ti, pi] += 1
    return out


ARGUMENT = re.compile(r"\b(preds|target|groups|num_classes|num_groups)\b")


@st.composite
def metric_inputs(draw):
    n = draw(st.integers(0, 12))
    C = draw(st.integers(-1, 4))
    G = draw(st.integers(-1, 3))
    kind = draw(st.sampled_from(["ids", "scores", "bad_shape"]))
    dtype = draw(st.sampled_from([torch.int64, torch.int32, torch.uint8, torch.float32, torch.float16, torch.bool]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    hi_c, hi_g = max(C, 1) + draw(st.integers(0, 1)), max(G, 1) + draw(st.integers(0, 1))
    if kind == "ids":
        preds = torch.as_tensor(rng.integers(-1 if draw(st.booleans()) else 0, hi_c, n)).to(dtype)
    elif kind == "scores":
        preds = torch.as_tensor(rng.standard_normal((n, max(C, 1)))).to(dtype)
        if n and preds.is_floating_point() and draw(st.booleans()):
            preds[0, 0] = float("nan")
    else:
        preds = torch.zeros(n, 2, 2)
    m = n if draw(st.booleans()) else n + draw(st.integers(1, 2))
    target = torch.as_tensor(rng.integers(0, hi_c, m))
    groups = torch.as_tensor(rng.integers(-1, hi_g, n))
    if draw(st.booleans()):
        target = target.to(draw(st.sampled_from([torch.float32, torch.int32, torch.bool])))
    return preds, target, groups, C, G


@FUZZ
@given(args=metric_inputs())
def test_metrics_random_inputs(args):
    preds, target, groups, C, G = args
    try:
        cm = F.group_confusion(preds, target, groups, C, G)
    except (ValueError, TypeError) as err:
        assert ARGUMENT.search(str(err)), str(err)
        return
    p = preds.float().argmax(1) if preds.ndim == 2 else preds.long()
    ref = _reference_confusion(p.tolist(), target.long().tolist(), groups.tolist(), C, G)
    assert np.array_equal(cm.numpy(), ref)
    m = GroupFairness(C, G)
    m.update(preds, target, groups)
    out = m.compute()
    assert torch.equal(m.confmat[:G], cm)
    present = int((ref.sum((1, 2)) > 0).sum())
    if present < 2:
        assert all(math.isnan(out[k].item()) for k in ("eo_gap", "tpr_gap_rms", "dp_gap"))
    known = ref.sum()
    total = len(target)
    correct = int((p == target.long()).sum())
    assert (math.isnan(out["accuracy"].item()) and total == 0) or out["accuracy"].item() == pytest.approx(
        correct / total)
    assert int(known) + int(out["n_unknown_group"]) == total
