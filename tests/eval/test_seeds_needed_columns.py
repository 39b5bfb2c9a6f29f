"""The seeds an inconclusive verdict asks for reach ``faircl bench``'s results.csv (column ``seeds_needed``) and the
verdict table of ``faircl compare --baseline``; a decided claim leaves them empty."""

from __future__ import annotations

import csv

import numpy as np

from faircl.bench.results import ClaimRow, write_results
from faircl.eval import verdicts as C


def test_results_csv_has_the_seeds_needed(tmp_path):
    unsure = C.ClaimEvidence("unsure", C.paired_seed_comparison(np.zeros(3), [-0.03, 0.0, 0.03]),
                             C.paired_seed_comparison(np.zeros(3), [-0.005, 0.0, 0.005]), -0.045)
    sure = C.ClaimEvidence("sure", C.paired_seed_comparison(np.zeros(5), [-0.10, -0.11, -0.09, -0.10, -0.10]),
                           C.paired_seed_comparison(np.zeros(5), [0.0, 0.001, -0.001, 0.0, 0.0]), -0.045)
    v_unsure, v_sure = C.decide([unsure, sure])
    assert v_unsure.verdict == "inconclusive" and v_unsure.seeds_needed > 3 and v_sure.verdict == "reproduces"
    rows = [ClaimRow("p", False, v.name, "tpr_gap_rms", "CE", "M", [0, 1, 2], 0.2, 0.2, 0.8, 0.8, v)
            for v in (v_unsure, v_sure)]
    _, csv_path, _ = write_results(tmp_path, rows, [], [], [])
    with open(csv_path) as fh:
        got = {r["claim"]: r for r in csv.DictReader(fh)}
    assert got["unsure"]["seeds_needed"] == str(v_unsure.seeds_needed) and got["sure"]["seeds_needed"] == ""
    assert f"({v_unsure.seeds_needed} in all) would decide the" in got["unsure"]["reason"]
    new = v_unsure.seeds_needed - 3
    assert f"| {new} new (size) | **inconclusive**" in C.verdict_row(v_unsure)
    for column in ("direction", "size", "utility", "target", "threshold", "utility_change", "utility_lo", "reason"):
        assert column in got["unsure"]
    assert got["unsure"]["direction"] == "undetermined" and float(got["unsure"]["target"]) == -0.045
