# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import time

import pytest


def test_touching_busy_ranges_do_not_block():
    from scheduling.slots import free_slots

    busy = [(time(9, 15), time(9, 30))]
    assert free_slots(busy, time(9, 0), time(10, 0)) == [time(9, 0), time(9, 30), time(9, 45)]


def test_partial_overlap_blocks_a_slot():
    from scheduling.slots import free_slots

    busy = [(time(9, 10), time(9, 20))]
    assert free_slots(busy, time(9, 0), time(10, 0)) == [time(9, 30), time(9, 45)]


def test_inverted_busy_ranges_are_ignored():
    from scheduling.slots import free_slots

    busy = [(time(9, 30), time(9, 0)), (time(9, 45), time(9, 45))]
    assert free_slots(busy, time(9, 0), time(10, 0)) == [time(9, 0), time(9, 15), time(9, 30), time(9, 45)]


def test_candidates_follow_day_slots_and_result_is_sorted():
    from scheduling.slots import free_slots

    busy = [(time(11, 0), time(12, 0)), (time(9, 0), time(9, 30))]
    assert free_slots(busy, time(9, 0), time(12, 10), length_min=40) == [time(9, 40), time(10, 20)]


def test_length_bounds():
    from scheduling.slots import free_slots

    assert free_slots([], time(9, 0), time(9, 10), length_min=5) == [time(9, 0), time(9, 5)]
    assert free_slots([], time(8, 0), time(12, 0), length_min=240) == [time(8, 0)]
    for bad in (4, 241):
        with pytest.raises(ValueError) as err:
            free_slots([], time(8, 0), time(12, 0), length_min=bad)
        assert str(err.value) == f"free_slots: length_min must be 5..240, got {bad}"


def test_length_is_keyword_only():
    from scheduling.slots import free_slots

    with pytest.raises(TypeError):
        free_slots([], time(9, 0), time(10, 0), 30)
