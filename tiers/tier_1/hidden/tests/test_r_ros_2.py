# SPECSNAP-CANARY tier_1 309872f7-59db-4001-824c-930a6fe607df
from datetime import date

import pytest

from roster.schedule import Schedule
from roster.shifts import Shift

MON = date(2024, 6, 3)
TUE = date(2024, 6, 4)


def test_exactly_eleven_hours_is_enough():
    from roster.rest import rest_violations

    schedule = Schedule([Shift("E100", MON, 780, 1320), Shift("E100", TUE, 540, 1020)])
    assert rest_violations(schedule, "E100") == []


def test_one_minute_short_is_reported_with_rest():
    from roster.rest import rest_violations

    late = Shift("E100", MON, 780, 1320)
    early = Shift("E100", TUE, 539, 1020)
    schedule = Schedule([early, late])
    assert rest_violations(schedule, "E100") == [(late, early, 659)]


def test_same_day_split_shift_and_breaks_are_not_rest():
    from roster.rest import rest_violations

    a = Shift("E100", MON, 360, 600, 30)
    b = Shift("E100", MON, 840, 1080, 30)
    assert rest_violations(Schedule([a, b]), "E100") == [(a, b, 240)]


def test_only_consecutive_pairs_are_compared():
    from roster.rest import rest_violations

    a = Shift("E100", MON, 1200, 1320)
    b = Shift("E100", TUE, 360, 420)
    c = Shift("E100", TUE, 720, 780)
    other = Shift("E200", TUE, 0, 60)
    assert rest_violations(Schedule([c, other, a, b]), "E100") == [(a, b, 480), (b, c, 300)]


def test_custom_minimum_is_keyword_only():
    from roster.rest import rest_violations

    a = Shift("E100", MON, 360, 600)
    b = Shift("E100", MON, 840, 1080)
    schedule = Schedule([a, b])
    assert rest_violations(schedule, "E100", min_rest_minutes=240) == []
    assert rest_violations(schedule, "E100", min_rest_minutes=241) == [(a, b, 240)]
    with pytest.raises(TypeError):
        rest_violations(schedule, "E100", 241)


def test_minimum_must_be_positive():
    from roster.rest import rest_violations

    for bad in (0, -5):
        with pytest.raises(ValueError) as err:
            rest_violations(Schedule(), "E100", min_rest_minutes=bad)
        assert str(err.value) == f"rest_violations: min_rest_minutes must be positive, got {bad}"


def test_fewer_than_two_shifts_gives_empty_list():
    from roster.rest import rest_violations

    schedule = Schedule([Shift("E100", MON, 360, 600)])
    assert rest_violations(schedule, "E100") == []
    assert rest_violations(schedule, "E999") == []
