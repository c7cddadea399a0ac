"""Staff, shifts and weekly schedules for the Harbor Shifts back office."""

from roster.schedule import Schedule, week_start
from roster.shifts import Shift, format_clock, parse_clock, parse_shift
from roster.staff import Employee, StaffDirectory

__all__ = [
    "Employee",
    "Schedule",
    "Shift",
    "StaffDirectory",
    "format_clock",
    "parse_clock",
    "parse_shift",
    "week_start",
]
