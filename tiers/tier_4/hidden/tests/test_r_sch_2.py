# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date, datetime

import pytest

from patients.records import Patient
from patients.registry import PatientRegistry
from scheduling.appointments import Appointment
from scheduling.book import AppointmentBook, BookingError
from staff.clinicians import Clinician, StaffDirectory


def _book():
    book = AppointmentBook(
        PatientRegistry([Patient("P1", "Ada", "Moss", date(1990, 1, 1))]),
        StaffDirectory([Clinician("S1", "Ola", "doctor"), Clinician("S2", "Ben", "nurse")]),
    )
    book.book(Appointment("A1", "P1", "S1", datetime(2024, 5, 6, 9, 0), 30))
    book.book(Appointment("A2", "P1", "S1", datetime(2024, 5, 6, 10, 0), 30))
    return book


def test_move_may_overlap_its_own_old_time():
    book = _book()
    moved = book.reschedule("A1", datetime(2024, 5, 6, 9, 15))
    assert moved.start == datetime(2024, 5, 6, 9, 15)
    assert (moved.minutes, moved.status, moved.staff_id) == (30, "booked", "S1")
    assert book.get("A1") == moved


def test_clash_is_refused_and_book_unchanged():
    book = _book()
    with pytest.raises(BookingError) as err:
        book.reschedule("A1", datetime(2024, 5, 6, 9, 50))
    assert str(err.value) == "S1 is busy at 2024-05-06 09:50"
    assert book.get("A1").start == datetime(2024, 5, 6, 9, 0)
    assert [a.appt_id for a in book.all()] == ["A1", "A2"]


def test_cancelled_appointment_cannot_be_moved():
    book = _book()
    book.cancel("A1")
    with pytest.raises(BookingError) as err:
        book.reschedule("A1", datetime(2024, 5, 6, 11, 0))
    assert str(err.value) == "A1 cannot be rescheduled: status is cancelled"


def test_cancelled_others_do_not_clash():
    book = _book()
    book.cancel("A2")
    moved = book.reschedule("A1", datetime(2024, 5, 6, 10, 0))
    assert moved.start == datetime(2024, 5, 6, 10, 0)


def test_unknown_id_raises_keyerror():
    with pytest.raises(KeyError, match="unknown appointment: A9"):
        _book().reschedule("A9", datetime(2024, 5, 6, 11, 0))
