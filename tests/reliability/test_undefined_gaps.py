"""A gap needs two groups: with fewer present it is NaN (undefined) everywhere and listed as undefined in reports."""

from __future__ import annotations

import json
import math

import torch

from faircl.eval.report import write_report
from faircl.metrics import GroupFairness
from faircl.metrics import functional as F
from faircl.metrics import gaps as G
from faircl.metrics.representation import representation_report

GAPS = ("eo_gap", "tpr_gap_rms", "fpr_gap_rms", "ppr_gap_rms", "dp_gap", "equalized_odds_difference")


def _one_group(n=60, groups=3, present=1):
    g = torch.Generator().manual_seed(0)
    t = torch.randint(0, 2, (n,), generator=g)
    p = torch.randint(0, 2, (n,), generator=g)
    a = torch.full((n,), present)
    a[::7] = -1   # unknown attribute rows do not make a group present
    return p, t, a, groups


def test_functional_gaps_are_nan_with_one_group():
    p, t, a, G_ = _one_group()
    for fn in (F.eo_gap, F.tpr_gap_rms, F.fpr_gap_rms, F.ppr_gap_rms, F.demographic_parity_gap,
               F.equalized_odds_difference):
        assert math.isnan(fn(p, t, a, 2, G_).item()), fn.__name__
    assert math.isnan(F.tpr_gap_rms(p, t, a, 2, G_, smoothing=1e-5).item())  # smoothing invents no second group
    assert F.worst_group_accuracy(p, t, a, 2, G_).item() == F.group_accuracy(p, t, a, 2, G_)[1].item()
    a2 = a.clone()
    a2[1::2] = 2
    a2[::7] = -1
    for fn in (F.eo_gap, F.tpr_gap_rms, F.demographic_parity_gap):   # two groups present: defined again
        assert not math.isnan(fn(p, t, a2, 2, G_).item()), fn.__name__


def test_group_fairness_and_report_list_them_undefined(tmp_path):
    p, t, a, G_ = _one_group()
    for smoothing in (0.0, 1e-5):
        m = GroupFairness(2, G_, smoothing=smoothing)
        m.update(p, t, a)
        out = m.compute()
        for k in GAPS:
            assert math.isnan(out[k].item()), (k, smoothing)
        assert not math.isnan(out["accuracy"].item())
    report = {k: float(v) for k, v in out.items() if v.ndim == 0}
    write_report(report, tmp_path)
    data = json.loads((tmp_path / "report.json").read_text())
    assert set(GAPS) <= set(data["undefined"]) and all(data["metrics"][k] is None for k in GAPS)
    assert "accuracy" not in data["undefined"]
    md = (tmp_path / "report.md").read_text()
    assert "Undefined" in md and "eo_gap" in md.split("Undefined", 1)[1]


def test_representation_gaps_are_nan_with_one_group():
    sizes = torch.tensor([10.0, 0.0, 0.0])
    values = torch.tensor([0.5, float("nan"), float("nan")])
    for v in (G.majority_minority(values, sizes), G.worst_vs_rest(values, sizes),
              G.top_vs_bottom_half(values, sizes), G.minority_gap(values, sizes, [1])):
        assert math.isnan(v.item())
    g = torch.Generator().manual_seed(0)
    z = torch.randn(40, 4, generator=g)
    y = torch.arange(40) % 2
    rep = representation_report(z, y, torch.zeros(40, dtype=torch.long), num_classes=2, num_groups=2, n_init=1,
                                minority_groups=[1])
    gaps = {k: v for k, v in rep.items() if "_gap_" in k}
    assert gaps and all(math.isnan(v) for v in gaps.values()), gaps
    assert not math.isnan(rep["recall@1"])
