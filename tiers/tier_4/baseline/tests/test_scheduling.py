from datetime import date, datetime, time

import pytest

from patients.records import Patient
from patients.registry import PatientRegistry
from scheduling.appointments import Appointment
from scheduling.book import AppointmentBook, BookingError
from scheduling.reminders import due_reminders
from scheduling.slots import day_slots
from staff.clinicians import Clinician, StaffDirectory


def _book() -> AppointmentBook:
    return AppointmentBook(
        PatientRegistry([Patient("P1", "Ada", "Moss", date(1990, 1, 1))]),
        StaffDirectory([Clinician("S1", "Ola", "doctor")]),
    )


def test_day_slots_fit_before_close():
    assert day_slots(time(9, 0), time(10, 10), 20) == [time(9, 0), time(9, 20), time(9, 40)]


def test_booking_conflicts_and_cancel():
    book = _book()
    book.book(Appointment("A1", "P1", "S1", datetime(2024, 5, 6, 9, 0), 30))
    with pytest.raises(BookingError):
        book.book(Appointment("A2", "P1", "S1", datetime(2024, 5, 6, 9, 15)))
    book.cancel("A1")
    book.book(Appointment("A2", "P1", "S1", datetime(2024, 5, 6, 9, 15)))
    assert [a.appt_id for a in book.for_staff("S1", date(2024, 5, 6))] == ["A1", "A2"]


def test_due_reminders():
    a = Appointment("A1", "P1", "S1", datetime(2024, 5, 7, 9, 0))
    assert due_reminders([a], datetime(2024, 5, 6, 9, 0)) == [a]
    assert due_reminders([a], datetime(2024, 5, 6, 8, 59)) == []
