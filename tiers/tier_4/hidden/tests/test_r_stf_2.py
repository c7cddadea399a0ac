# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date

import pytest

from staff.leave import LeaveRequest


def _r(start, end, approved=True, staff="S1"):
    return LeaveRequest(staff, start, end, approved)


def test_a_working_week_is_five_days():
    from staff.leave import leave_days_taken

    assert leave_days_taken([_r(date(2024, 3, 4), date(2024, 3, 10))], "S1", year=2024) == 5


def test_weekends_are_not_counted():
    from staff.leave import leave_days_taken

    assert leave_days_taken([_r(date(2024, 3, 8), date(2024, 3, 11))], "S1", year=2024) == 2
    assert leave_days_taken([_r(date(2024, 3, 9), date(2024, 3, 10))], "S1", year=2024) == 0


def test_overlapping_requests_count_each_day_once():
    from staff.leave import leave_days_taken

    requests = [_r(date(2024, 3, 4), date(2024, 3, 6)), _r(date(2024, 3, 5), date(2024, 3, 8))]
    assert leave_days_taken(requests, "S1", year=2024) == 5


def test_requests_over_new_year_are_clipped():
    from staff.leave import leave_days_taken

    requests = [_r(date(2024, 12, 30), date(2025, 1, 3))]
    assert leave_days_taken(requests, "S1", year=2024) == 2
    assert leave_days_taken(requests, "S1", year=2025) == 3


def test_unapproved_and_other_staff_ignored():
    from staff.leave import leave_days_taken

    requests = [
        _r(date(2024, 3, 4), date(2024, 3, 4), approved=False),
        _r(date(2024, 3, 5), date(2024, 3, 5), staff="S2"),
        _r(date(2024, 3, 6), date(2024, 3, 6)),
    ]
    assert leave_days_taken(requests, "S1", year=2024) == 1


def test_year_is_keyword_only():
    from staff.leave import leave_days_taken

    with pytest.raises(TypeError):
        leave_days_taken([], "S1", 2024)
