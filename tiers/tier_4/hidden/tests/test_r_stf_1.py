# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date, time

import pytest

from staff.rota import Shift


def _day(d, hours, staff="S1"):
    return Shift(staff, d, time(8, 0), time(8 + hours, 0))


def test_default_limit_is_38_hours():
    from staff.rota import overtime_minutes

    shifts = [_day(date(2024, 3, 4 + i), 8) for i in range(5)]
    assert overtime_minutes(shifts, "S1", week_of=date(2024, 3, 6)) == 120


def test_week_runs_monday_to_sunday_and_other_staff_ignored():
    from staff.rota import overtime_minutes

    shifts = [
        _day(date(2024, 3, 3), 5),
        _day(date(2024, 3, 4), 5),
        _day(date(2024, 3, 10), 6),
        _day(date(2024, 3, 11), 7),
        _day(date(2024, 3, 6), 9, staff="S2"),
    ]
    assert overtime_minutes(shifts, "S1", week_of=date(2024, 3, 6), limit_minutes=600) == 60


def test_under_the_limit_gives_zero():
    from staff.rota import overtime_minutes

    shifts = [_day(date(2024, 3, 4), 8)]
    assert overtime_minutes(shifts, "S1", week_of=date(2024, 3, 4), limit_minutes=480) == 0
    assert overtime_minutes([], "S1", week_of=date(2024, 3, 4), limit_minutes=480) == 0


def test_zero_limit_is_allowed():
    from staff.rota import overtime_minutes

    shifts = [_day(date(2024, 3, 5), 3)]
    assert overtime_minutes(shifts, "S1", week_of=date(2024, 3, 10), limit_minutes=0) == 180


def test_negative_limit_is_rejected():
    from staff.rota import overtime_minutes

    with pytest.raises(ValueError) as err:
        overtime_minutes([], "S1", week_of=date(2024, 3, 4), limit_minutes=-1)
    assert str(err.value) == "overtime_minutes: limit must not be negative, got -1"


def test_week_of_is_keyword_only():
    from staff.rota import overtime_minutes

    with pytest.raises(TypeError):
        overtime_minutes([], "S1", date(2024, 3, 4))
