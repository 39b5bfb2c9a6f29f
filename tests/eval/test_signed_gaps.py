"""Which gaps are signed comes from the gap reducers themselves (:data:`faircl.metrics.gaps.SIGNED`): every key of
:func:`faircl.metrics.gaps.all_gaps` that can be negative is signed, and reports write ``(signed)`` beside it, never
the "lower is better" arrow, negative values included."""

from __future__ import annotations

import torch

from faircl.eval.report import arrow, mark, to_markdown
from faircl.metrics.gaps import all_gaps, is_signed
from faircl.metrics.representation import representation_report


def test_the_gaps_that_can_be_negative_are_the_signed_ones():
    negative: set[str] = set()
    gen = torch.Generator().manual_seed(0)
    for _ in range(200):
        values, sizes = torch.rand(6, generator=gen), torch.randint(1, 50, (6,), generator=gen)
        for higher in (True, False):
            gaps = all_gaps(values, sizes, higher_is_better=higher, prefix="recall@1_gap", minority=[4, 5])
            negative |= {k for k, v in gaps.items() if float(v) < 0}
    keys = set(gaps)
    assert {k for k in keys if is_signed(k)} == negative == {
        "recall@1_gap_majority_minority", "recall@1_gap_top_vs_bottom_half", "recall@1_gap_minority"}
    assert not is_signed("recall@1_gap_worst_vs_rest") and not is_signed("tpr_gap_rms")


def test_a_signed_gap_gets_no_lower_is_better_arrow_in_a_report():
    gen = torch.Generator().manual_seed(1)
    z, y = torch.randn(120, 4, generator=gen), torch.randint(0, 2, (120,), generator=gen)
    a = torch.randint(0, 4, (120,), generator=gen)
    report = representation_report(z, y, a, num_classes=2, num_groups=4, minority_groups=[3], n_init=2)
    md = to_markdown({"value": {**report, "recall@1_gap_top_vs_bottom_half": -0.05}})
    for key in report:
        if "_gap_" in key:
            line = next(ln for ln in md.splitlines() if ln.startswith(f"| {key} "))
            assert (" ↓ |" in line) == (not is_signed(key)), line
            assert ("(signed)" in line) == is_signed(key), line
    assert "| recall@1_gap_top_vs_bottom_half (signed) | -0.0500 |" in md
    assert arrow("nmi_gap_top_vs_bottom_half") == "" and mark("nmi_gap_top_vs_bottom_half") == "(signed)"
    assert arrow("nmi_gap_worst_vs_rest") == mark("nmi_gap_worst_vs_rest") == "↓"
