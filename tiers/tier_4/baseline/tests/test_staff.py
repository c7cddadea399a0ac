from datetime import date, datetime, time

from staff.clinicians import Clinician, StaffDirectory
from staff.leave import LeaveRequest, overlaps
from staff.rota import Shift, minutes_by_staff, on_duty


def test_directory_by_role():
    d = StaffDirectory([Clinician("S2", "Nia", "nurse"), Clinician("S1", "Ola", "doctor")])
    assert [c.staff_id for c in d.by_role("doctor")] == ["S1"]


def test_shift_minutes_and_duty():
    shifts = [Shift("S1", date(2024, 3, 4), time(8, 0), time(12, 30)), Shift("S1", date(2024, 3, 5), time(9, 0), time(10, 0))]
    assert minutes_by_staff(shifts) == {"S1": 330}
    assert on_duty(shifts, "S1", datetime(2024, 3, 4, 8, 0))
    assert not on_duty(shifts, "S1", datetime(2024, 3, 4, 12, 30))


def test_leave_days_and_overlap():
    a = LeaveRequest("S1", date(2024, 3, 1), date(2024, 3, 3))
    b = LeaveRequest("S1", date(2024, 3, 3), date(2024, 3, 9))
    assert a.days == 3
    assert overlaps(a, b)
