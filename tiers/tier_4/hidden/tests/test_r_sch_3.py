# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import datetime

import pytest

from scheduling.appointments import Appointment


def _appt(*when):
    return Appointment("A1", "P1", "S1", datetime(*when))


def test_daytime_reminder_is_not_moved():
    from scheduling.reminders import reminder_schedule

    assert reminder_schedule(_appt(2024, 5, 7, 9, 0)) == datetime(2024, 5, 6, 9, 0)


def test_late_evening_moves_to_next_morning():
    from scheduling.reminders import reminder_schedule

    assert reminder_schedule(_appt(2024, 5, 7, 22, 30)) == datetime(2024, 5, 7, 8, 0)
    assert reminder_schedule(_appt(2024, 5, 7, 21, 0)) == datetime(2024, 5, 7, 8, 0)


def test_early_morning_moves_to_quiet_until_same_day():
    from scheduling.reminders import reminder_schedule

    assert reminder_schedule(_appt(2024, 5, 7, 7, 0)) == datetime(2024, 5, 6, 8, 0)


def test_window_edges_are_not_moved():
    from scheduling.reminders import reminder_schedule

    assert reminder_schedule(_appt(2024, 5, 7, 8, 0)) == datetime(2024, 5, 6, 8, 0)
    assert reminder_schedule(_appt(2024, 5, 7, 20, 59)) == datetime(2024, 5, 6, 20, 59)


def test_falls_back_when_moved_time_is_not_before_the_start():
    from scheduling.reminders import reminder_schedule

    assert reminder_schedule(_appt(2024, 5, 7, 9, 30), hours_before=2) == datetime(2024, 5, 7, 8, 0)
    assert reminder_schedule(_appt(2024, 5, 7, 8, 0), hours_before=1) == datetime(2024, 5, 7, 7, 0)
    assert reminder_schedule(_appt(2024, 5, 6, 23, 0), hours_before=1) == datetime(2024, 5, 6, 22, 0)


def test_custom_quiet_hours_and_bounds():
    from datetime import time

    from scheduling.reminders import reminder_schedule

    when = reminder_schedule(_appt(2024, 5, 7, 19, 0), quiet_from=time(18, 0), quiet_until=time(9, 0))
    assert when == datetime(2024, 5, 7, 9, 0)
    assert reminder_schedule(_appt(2024, 5, 10, 9, 0), hours_before=72) == datetime(2024, 5, 7, 9, 0)
    for bad in (0, 73):
        with pytest.raises(ValueError) as err:
            reminder_schedule(_appt(2024, 5, 10, 9, 0), hours_before=bad)
        assert str(err.value) == f"reminder_schedule: hours_before must be 1..72, got {bad}"
    with pytest.raises(TypeError):
        reminder_schedule(_appt(2024, 5, 10, 9, 0), 12)
