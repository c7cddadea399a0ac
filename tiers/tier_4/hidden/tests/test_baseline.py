# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date, datetime, time

import pytest

from billing.charges import Charge, appointment_charge, dispensing_charges
from billing.coverage import Policy, patient_share
from billing.fee_schedule import describe, fee_for
from billing.statements import Payment, Statement
from labs.orders import LabOrder, OrderQueue
from labs.ranges import RefRange, find_range
from labs.results import Result, flag_result
from patients.contacts import Contact, is_valid_email, normalise_phone
from patients.records import Patient
from patients.registry import PatientRegistry
from pharmacy.dosing import units_for_dose, weight_based_dose_mg, within_daily_max
from pharmacy.formulary import Drug, Formulary
from pharmacy.stock import OutOfStock, StockLedger
from reports.revenue import daily_totals, revenue_by_code
from reports.utilisation import booked_minutes
from scheduling.appointments import Appointment
from scheduling.book import AppointmentBook, BookingError
from scheduling.reminders import reminder_time
from scheduling.slots import day_slots, slot_datetimes
from staff.clinicians import Clinician, StaffDirectory
from staff.leave import LeaveRequest
from staff.rota import Shift, on_duty


def test_age_on_leap_day_birthday():
    p = Patient("P1", "Lea", "Pike", date(2000, 2, 29))
    assert p.age_on(date(2023, 2, 28)) == 22
    assert p.age_on(date(2023, 3, 1)) == 23


def test_registry_unknown_patient_message():
    with pytest.raises(KeyError, match="unknown patient: P9"):
        PatientRegistry().get("P9")


def test_contact_validation():
    assert normalise_phone("1-555-010-2030") == "5550102030"
    assert is_valid_email("a.b@clinic.org")
    with pytest.raises(ValueError, match="bad e-mail address"):
        Contact("P1", "5550102030", "nobody@")


def test_staff_directory_and_roles():
    with pytest.raises(ValueError):
        Clinician("S9", "Zed", "janitor")
    d = StaffDirectory([Clinician("S1", "Ola", "doctor", frozenset({"cardiology"}))])
    with pytest.raises(KeyError, match="unknown staff member: S2"):
        d.get("S2")


def test_shift_end_is_exclusive_and_leave_dates():
    shift = Shift("S1", date(2024, 3, 4), time(8, 0), time(16, 0))
    assert shift.minutes == 480
    assert not on_duty([shift], "S1", datetime(2024, 3, 4, 16, 0))
    leave = LeaveRequest("S1", date(2024, 2, 28), date(2024, 3, 1))
    assert list(leave.dates())[1] == date(2024, 2, 29)


def test_slot_grid_and_datetimes():
    assert day_slots(time(9, 0), time(10, 0)) == [time(9, 0), time(9, 15), time(9, 30), time(9, 45)]
    assert slot_datetimes(date(2024, 5, 6), time(9, 0), time(9, 30), 30) == [datetime(2024, 5, 6, 9, 0)]


def test_booking_rejects_unknown_staff_and_touching_is_fine():
    book = AppointmentBook(
        PatientRegistry([Patient("P1", "Ada", "Moss", date(1990, 1, 1))]),
        StaffDirectory([Clinician("S1", "Ola", "doctor")]),
    )
    book.book(Appointment("A1", "P1", "S1", datetime(2024, 5, 6, 9, 0), 30))
    book.book(Appointment("A2", "P1", "S1", datetime(2024, 5, 6, 9, 30), 30))
    with pytest.raises(BookingError, match="unknown staff member: S7"):
        book.book(Appointment("A3", "P1", "S7", datetime(2024, 5, 6, 11, 0)))
    with pytest.raises(BookingError, match="S1 is busy at 2024-05-06 09:45"):
        book.book(Appointment("A4", "P1", "S1", datetime(2024, 5, 6, 9, 45)))


def test_reminder_time_default():
    appt = Appointment("A1", "P1", "S1", datetime(2024, 5, 7, 9, 0))
    assert reminder_time(appt) == datetime(2024, 5, 6, 9, 0)


def test_dosing_helpers():
    drug = Drug("PCM500", "Paracetamol", 500, 4_000)
    assert weight_based_dose_mg(15, 10.5) == 157
    assert units_for_dose(drug, 1_000) == 2
    assert within_daily_max(drug, 1_000, 4)
    assert not within_daily_max(drug, 1_000, 5)


def test_formulary_and_stock():
    f = Formulary([Drug("MOR10", "Morphine", 10, 60, controlled=True), Drug("PCM500", "Paracetamol", 500, 4_000)])
    assert [d.code for d in f.controlled()] == ["MOR10"]
    s = StockLedger()
    s.receive("PCM500", 3)
    with pytest.raises(OutOfStock, match="PCM500: 3 on hand, 4 requested"):
        s.dispense("PCM500", 4)
    assert s.codes() == ["PCM500"]


def test_lab_ranges_and_result_units():
    rng = RefRange("K", 3.5, 5.1, "mmol/L")
    p = Patient("P1", "A", "B", date(1980, 1, 1), "M")
    assert find_range([rng], "K", p, date(2024, 1, 1)) is rng
    assert flag_result(Result("O1", "K", 5.2, "mmol/L"), rng) == "H"
    with pytest.raises(ValueError, match="does not match"):
        flag_result(Result("O1", "K", 5.2, "mEq/L"), rng)


def test_order_queue_complete():
    q = OrderQueue()
    q.submit(LabOrder("O1", "P1", ("HB",), datetime(2024, 1, 1, 9, 0)))
    q.complete("O1")
    assert q.pending() == []
    with pytest.raises(KeyError, match="unknown order: O2"):
        q.get("O2")


def test_fee_schedule_and_dispensing():
    assert fee_for("L500") == 1_255
    assert describe("V300") == "V300 Vaccination"
    charges = dispensing_charges("P1", Drug("PCM500", "Paracetamol", 500, 4_000), 20, 5, date(2024, 5, 6))
    assert [(c.code, c.cents) for c in charges] == [("PCM500", 100), ("D400", 900)]


def test_patient_share_rounds_coinsurance_half_up():
    policy = Policy("Acme", copay_cents=0, coinsurance_bp=2_500)
    assert patient_share(policy, 1_002) == 251
    with pytest.raises(ValueError):
        patient_share(policy, -1)


def test_statement_rejects_other_patients():
    s = Statement("P1")
    with pytest.raises(ValueError):
        s.add_payment(Payment("P2", 100, date(2024, 1, 1)))


def test_reports_on_completed_appointments():
    appt = Appointment("A1", "P1", "S1", datetime(2024, 5, 6, 9, 0), 45, kind="procedure", status="completed")
    charge = appointment_charge(appt)
    assert booked_minutes([appt], "S1", date(2024, 5, 6)) == 45
    assert revenue_by_code([Charge("P1", "D400", 900, date(2024, 5, 6)), charge]) == {"D400": 900, "P200": 15_000}
    assert revenue_by_code([charge]) == {"P200": 15_000}
    assert daily_totals([]) == []
