"""The group-sequential design of ``faircl bench --max-seeds N`` (:mod:`faircl.eval.sequential`): its looks, their
levels (which spend α exactly) and the schedule of a family whose protocols start at different seed counts."""

from __future__ import annotations

import math

import pytest

from faircl.eval.sequential import look_levels, looks, schedule


def test_looks_double_from_the_start_and_end_at_the_cap():
    assert looks(3, 12) == [3, 6, 12]
    assert looks(5, 20) == [5, 10, 20]
    assert looks(3, 10) == [3, 6, 10]      # a cap off the doubling is the last look
    assert looks(5, 6) == [5, 6]
    assert looks(2, 2) == [2]


@pytest.mark.parametrize(("start", "cap"), [(3, 3), (12, 3), (5, 2)])
def test_a_cap_at_or_below_the_start_is_the_fixed_design(start, cap):
    assert looks(start, cap) == [cap]


@pytest.mark.parametrize(("start", "cap"), [(1, 12), (0, 12), (3, 1), (-2, 8)])
def test_fewer_than_two_seeds_is_refused(start, cap):
    with pytest.raises(ValueError, match="at least 2 seeds"):
        looks(start, cap)


@pytest.mark.parametrize("alpha", [0.05, 0.005, 0.01, 0.1, 0.05 / 3])
@pytest.mark.parametrize("k", range(1, 9))
def test_levels_halve_and_spend_alpha_exactly(alpha, k):
    levels = look_levels(k, alpha)
    assert len(levels) == k
    assert math.fsum(levels) == alpha
    assert levels[:-1] == [alpha / 2 ** i for i in range(1, k)]
    assert levels[-1] == pytest.approx(alpha / 2 ** (k - 1), rel=1e-12)   # the remainder: the last two are equal
    assert all(lv > 0 for lv in levels)


def test_one_look_is_the_fixed_design_at_alpha():
    assert look_levels(1, 0.05) == [0.05]
    assert look_levels(1) == [0.05]
    with pytest.raises(ValueError):
        look_levels(0)


def test_schedule_of_protocols_with_different_starts():
    plan = schedule({"a": 3, "b": 5, "c": 2}, 12, alpha=0.05)
    # c has the most looks (2, 4, 8, 12): the family has four, and the others stay at their cap once they reach it
    assert [lk.number for lk in plan] == [1, 2, 3, 4]
    assert [lk.seeds for lk in plan] == [{"a": 3, "b": 5, "c": 2}, {"a": 6, "b": 10, "c": 4},
                                         {"a": 12, "b": 12, "c": 8}, {"a": 12, "b": 12, "c": 12}]
    assert [lk.level for lk in plan] == look_levels(4, 0.05)
    assert math.fsum(lk.level for lk in plan) == 0.05


def test_schedule_of_one_protocol_follows_its_looks():
    plan = schedule({"p": 3}, 12, alpha=0.005)
    assert [lk.seeds["p"] for lk in plan] == [3, 6, 12]
    assert [lk.level for lk in plan] == look_levels(3, 0.005)
    fixed = schedule({"p": 5, "q": 8}, 5)
    assert len(fixed) == 1 and fixed[0].level == 0.05 and fixed[0].seeds == {"p": 5, "q": 5}


def test_only_a_word_that_is_not_final_asks_for_more_seeds():
    from faircl.eval.verdicts import ClaimEvidence, decide, paired_seed_comparison

    u = paired_seed_comparison([0.8] * 3, [0.8, 0.801, 0.799])
    up = ClaimEvidence("up", paired_seed_comparison([0.1] * 3, [0.30, 0.31, 0.32]), u, -0.045)
    unsure = ClaimEvidence("unsure", paired_seed_comparison([0.1] * 3, [0.07, 0.1, 0.05]), u, -0.045)
    v_up, v_unsure = decide([up, unsure], horizon=[(12, 0.0125)] * 2)
    assert v_up.verdict == "contradicted" and v_up.final
    assert v_unsure.verdict == "inconclusive" and not v_unsure.final


def test_without_a_cap_the_schedule_is_the_fixed_design():
    plan = schedule({"a": 3, "b": 8}, None, alpha=0.01)
    assert len(plan) == 1
    assert plan[0].number == 1 and plan[0].level == 0.01 and plan[0].seeds == {"a": 3, "b": 8}
