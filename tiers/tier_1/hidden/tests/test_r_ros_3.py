# SPECSNAP-CANARY tier_1 309872f7-59db-4001-824c-930a6fe607df
from datetime import date

import pytest

from roster.schedule import Schedule
from roster.shifts import Shift

MON = date(2024, 6, 3)


def test_default_hours_are_seven_to_nineteen():
    from roster.coverage import coverage_gaps

    schedule = Schedule([Shift("E100", MON, 540, 1020)])
    assert coverage_gaps(schedule, MON) == [("07:00", "09:00"), ("17:00", "19:00")]
    assert coverage_gaps(Schedule(), MON) == [("07:00", "19:00")]


def test_touching_shifts_leave_no_gap_and_other_days_do_not_count():
    from roster.coverage import coverage_gaps

    schedule = Schedule(
        [
            Shift("E100", MON, 420, 780, 60),
            Shift("E200", MON, 780, 1140),
            Shift("E300", date(2024, 6, 4), 0, 1440),
        ]
    )
    assert coverage_gaps(schedule, MON) == []
    assert coverage_gaps(schedule, date(2024, 6, 5)) == [("07:00", "19:00")]


def test_min_staff_counts_people_on_shift():
    from roster.coverage import coverage_gaps

    schedule = Schedule([Shift("E100", MON, 420, 900), Shift("E200", MON, 600, 1140), Shift("E300", MON, 660, 720)])
    assert coverage_gaps(schedule, MON, min_staff=2) == [("07:00", "10:00"), ("15:00", "19:00")]
    assert coverage_gaps(schedule, MON, min_staff=3) == [("07:00", "11:00"), ("12:00", "19:00")]


def test_custom_hours_up_to_midnight():
    from roster.coverage import coverage_gaps

    schedule = Schedule([Shift("E100", MON, 1200, 1439)])
    assert coverage_gaps(schedule, MON, open_at="20:00", close_at="24:00") == [("23:59", "24:00")]
    assert coverage_gaps(schedule, MON, open_at="06:30", close_at="20:00") == [("06:30", "20:00")]


def test_opening_must_precede_closing():
    from roster.coverage import coverage_gaps

    with pytest.raises(ValueError) as err:
        coverage_gaps(Schedule(), MON, open_at="12:00", close_at="12:00")
    assert str(err.value) == "coverage_gaps: opening 12:00 is not before closing 12:00"
    with pytest.raises(ValueError) as err:
        coverage_gaps(Schedule(), MON, open_at="24:00")
    assert str(err.value) == "bad clock time: '24:00'"


def test_min_staff_at_least_one():
    from roster.coverage import coverage_gaps

    with pytest.raises(ValueError) as err:
        coverage_gaps(Schedule(), MON, min_staff=0)
    assert str(err.value) == "coverage_gaps: min_staff must be at least 1, got 0"


def test_listed_in_all():
    import roster.coverage

    assert "coverage_gaps" in roster.coverage.__all__
