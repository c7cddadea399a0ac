# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date, datetime, time

from scheduling.appointments import Appointment
from staff.rota import Shift

DAY = date(2024, 5, 6)


def _a(appt_id, hour, minute, minutes, status="booked", staff="S1"):
    return Appointment(appt_id, "P1", staff, datetime(2024, 5, 6, hour, minute), minutes, status=status)


def _s(start, end, staff="S1"):
    return Shift(staff, DAY, start, end)


def test_simple_ratio():
    from reports.utilisation import utilisation

    appts = [_a("A1", 9, 0, 60), _a("A2", 11, 0, 30, status="completed")]
    assert utilisation(appts, [_s(time(9), time(13))], "S1", DAY) == 0.375


def test_rounded_to_three_decimals():
    from reports.utilisation import utilisation

    assert utilisation([_a("A1", 9, 0, 20)], [_s(time(9), time(12))], "S1", DAY) == 0.111


def test_only_time_inside_shifts_counts():
    from reports.utilisation import utilisation

    shifts = [_s(time(9), time(10)), _s(time(11), time(12))]
    assert utilisation([_a("A1", 8, 30, 60)], shifts, "S1", DAY) == 0.25
    assert utilisation([_a("A2", 10, 0, 60)], shifts, "S1", DAY) == 0.0
    assert utilisation([_a("A3", 9, 30, 120)], shifts, "S1", DAY) == 0.5


def test_no_shift_gives_zero():
    from reports.utilisation import utilisation

    assert utilisation([_a("A1", 9, 0, 30)], [_s(time(9), time(10), staff="S2")], "S1", DAY) == 0.0


def test_cancelled_no_show_and_other_staff_excluded():
    from reports.utilisation import utilisation

    appts = [
        _a("A1", 9, 0, 30, status="cancelled"),
        _a("A2", 9, 30, 30, status="no_show"),
        _a("A3", 10, 0, 30, staff="S2"),
        _a("A4", 10, 30, 15),
    ]
    assert utilisation(appts, [_s(time(9), time(11))], "S1", DAY) == 0.125
