# SPECSNAP-CANARY tier_1 309872f7-59db-4001-824c-930a6fe607df
from datetime import date

import pytest

from roster.schedule import Schedule
from roster.shifts import Shift

MON = date(2024, 6, 3)


def _schedule():
    return Schedule(
        [
            Shift("E100", MON, 540, 1020, 30),
            Shift("E100", date(2024, 6, 4), 540, 1020, 30),
            Shift("E200", MON, 360, 600),
        ]
    )


def test_returns_new_schedule_and_leaves_original_alone():
    from roster.swaps import reassign

    schedule = _schedule()
    before = list(schedule)
    result = reassign(schedule, Shift("E100", MON, 540, 1020, 30), "E300")
    assert isinstance(result, Schedule)
    assert result is not schedule
    assert list(schedule) == before
    assert len(result) == 3
    assert result.shifts_for("E300") == [Shift("E300", MON, 540, 1020, 30)]
    assert result.shifts_for("E100") == [Shift("E100", date(2024, 6, 4), 540, 1020, 30)]
    assert result.shifts_for("E200") == [Shift("E200", MON, 360, 600)]


def test_keep_break_false_drops_the_break():
    from roster.swaps import reassign

    result = reassign(_schedule(), Shift("E100", MON, 540, 1020, 30), "E300", keep_break=False)
    assert result.shifts_for("E300") == [Shift("E300", MON, 540, 1020, 0)]


def test_keep_break_is_keyword_only():
    from roster.swaps import reassign

    with pytest.raises(TypeError):
        reassign(_schedule(), Shift("E100", MON, 540, 1020, 30), "E300", False)


def test_unknown_shift_message_checked_first():
    from roster.swaps import reassign

    with pytest.raises(ValueError) as err:
        reassign(_schedule(), Shift("E100", MON, 540, 1020), "E100")
    assert str(err.value) == "reassign: no such shift for E100 on 2024-06-03"


def test_same_employee_is_rejected():
    from roster.swaps import reassign

    with pytest.raises(ValueError) as err:
        reassign(_schedule(), Shift("E200", MON, 360, 600), "E200")
    assert str(err.value) == "reassign: E200 already works this shift"


def test_overlap_with_target_propagates_and_original_kept():
    from roster.swaps import reassign

    schedule = _schedule()
    with pytest.raises(ValueError) as err:
        reassign(schedule, Shift("E100", MON, 540, 1020, 30), "E200")
    assert str(err.value) == "E200: overlapping shifts on 2024-06-03"
    assert len(schedule) == 3
    assert schedule.shifts_for("E100")[0] == Shift("E100", MON, 540, 1020, 30)
