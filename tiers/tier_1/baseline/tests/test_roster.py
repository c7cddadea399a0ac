from datetime import date

import pytest

from roster.schedule import Schedule, week_start
from roster.shifts import Shift, format_clock, parse_clock, parse_shift
from roster.staff import Employee, StaffDirectory


def test_directory_orders_by_id_and_rejects_duplicates():
    directory = StaffDirectory([Employee("E200", "Bo", 1_800), Employee("E100", "Al", 1_700)])
    assert [e.emp_id for e in directory] == ["E100", "E200"]
    assert "E100" in directory and len(directory) == 2
    with pytest.raises(ValueError):
        directory.add(Employee("E100", "Al again", 1_700))


def test_employee_id_is_validated():
    with pytest.raises(ValueError):
        Employee("X100", "Xu", 1_500)


def test_parse_shift_and_paid_minutes():
    shift = parse_shift("E100", date(2024, 5, 6), "09:00-17:30", break_minutes=30)
    assert (shift.start_minute, shift.end_minute) == (540, 1050)
    assert shift.span_minutes == 510
    assert shift.paid_minutes == 480


def test_clock_round_trip():
    assert parse_clock("07:05") == 425
    assert format_clock(425) == "07:05"


def test_schedule_rejects_overlap_but_accepts_touching_shifts():
    day = date(2024, 5, 6)
    schedule = Schedule([Shift("E100", day, 480, 720)])
    schedule.add(Shift("E100", day, 720, 900))
    with pytest.raises(ValueError):
        schedule.add(Shift("E100", day, 600, 660))
    assert len(schedule) == 2


def test_week_start_is_monday():
    assert week_start(date(2024, 5, 12)) == date(2024, 5, 6)
