# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date, datetime

import pytest

FIRST = datetime(2024, 1, 3, 14, 30)


def test_weekly_by_default():
    from scheduling.recurrence import weekly_series

    assert weekly_series(FIRST, 3) == [
        datetime(2024, 1, 3, 14, 30),
        datetime(2024, 1, 10, 14, 30),
        datetime(2024, 1, 17, 14, 30),
    ]


def test_every_other_week():
    from scheduling.recurrence import weekly_series

    assert weekly_series(FIRST, 2, every_weeks=2) == [datetime(2024, 1, 3, 14, 30), datetime(2024, 1, 17, 14, 30)]


def test_skipped_dates_extend_the_series():
    from scheduling.recurrence import weekly_series

    series = weekly_series(FIRST, 3, skip={date(2024, 1, 3), date(2024, 1, 17)})
    assert series == [datetime(2024, 1, 10, 14, 30), datetime(2024, 1, 24, 14, 30), datetime(2024, 1, 31, 14, 30)]


def test_count_bounds():
    from scheduling.recurrence import weekly_series

    assert len(weekly_series(FIRST, 52)) == 52
    assert weekly_series(FIRST, 1) == [FIRST]
    for bad in (0, 53):
        with pytest.raises(ValueError) as err:
            weekly_series(FIRST, bad)
        assert str(err.value) == f"weekly_series: count must be 1..52, got {bad}"


def test_every_weeks_bounds_and_keyword_only():
    from scheduling.recurrence import weekly_series

    assert weekly_series(FIRST, 2, every_weeks=4)[1] == datetime(2024, 1, 31, 14, 30)
    for bad in (0, 5):
        with pytest.raises(ValueError) as err:
            weekly_series(FIRST, 2, every_weeks=bad)
        assert str(err.value) == f"weekly_series: every_weeks must be 1..4, got {bad}"
    with pytest.raises(TypeError):
        weekly_series(FIRST, 2, 2)
