from datetime import date, datetime

from billing.charges import appointment_charge
from billing.coverage import Policy, patient_share
from billing.fee_schedule import fee_for
from billing.statements import Payment, Statement
from scheduling.appointments import Appointment


def test_completed_appointment_is_charged():
    appt = Appointment("A1", "P1", "S1", datetime(2024, 5, 6, 9, 0), kind="long", status="completed")
    charge = appointment_charge(appt)
    assert (charge.code, charge.cents) == ("C110", fee_for("C110"))
    assert appointment_charge(Appointment("A2", "P1", "S1", datetime(2024, 5, 6, 9, 0))) is None


def test_patient_share():
    policy = Policy("Acme", copay_cents=1_000, coinsurance_bp=2_000)
    assert patient_share(policy, 6_500) == 1_000 + 1_100
    assert patient_share(policy, 6_500, deductible_remaining_cents=10_000) == 6_500


def test_statement_balance():
    s = Statement("P1")
    s.add_charge(appointment_charge(Appointment("A1", "P1", "S1", datetime(2024, 5, 6, 9), status="completed")))
    s.add_payment(Payment("P1", 2_000, date(2024, 5, 7)))
    assert s.balance_cents == 4_500
