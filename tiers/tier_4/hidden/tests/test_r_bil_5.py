# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date, datetime, timedelta

import pytest

from scheduling.appointments import Appointment

START = datetime(2024, 5, 7, 9, 0)
APPT = Appointment("A1", "P1", "S1", START)


def test_exactly_at_the_window_is_free():
    from billing.charges import late_cancel_charge

    assert late_cancel_charge(APPT, START - timedelta(hours=24)) is None
    assert late_cancel_charge(APPT, START - timedelta(days=3)) is None


def test_inside_the_window_is_charged():
    from billing.charges import Charge, late_cancel_charge

    charge = late_cancel_charge(APPT, START - timedelta(hours=23, minutes=59))
    assert charge == Charge("P1", "X500", 2_500, date(2024, 5, 6))


def test_at_or_after_start_is_a_no_show():
    from billing.charges import Charge, late_cancel_charge

    assert late_cancel_charge(APPT, START) == Charge("P1", "X510", 5_000, date(2024, 5, 7))
    assert late_cancel_charge(APPT, START + timedelta(hours=16)) == Charge("P1", "X510", 5_000, date(2024, 5, 8))


def test_custom_window_and_fee():
    from billing.charges import late_cancel_charge

    assert late_cancel_charge(APPT, START - timedelta(hours=30), window_hours=48, fee_cents=1_000).cents == 1_000
    assert late_cancel_charge(APPT, START - timedelta(hours=48), window_hours=48) is None
    assert late_cancel_charge(APPT, START, fee_cents=1_000).cents == 2_000


def test_keyword_only():
    from billing.charges import late_cancel_charge

    with pytest.raises(TypeError):
        late_cancel_charge(APPT, START, 12)
