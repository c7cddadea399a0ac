# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import datetime

import pytest

from scheduling.appointments import Appointment


def _a(minutes, status="completed"):
    return Appointment("A1", "P1", "S1", datetime(2024, 5, 6, 9, 0), minutes, status=status)


def test_remainder_at_threshold_adds_a_unit():
    assert _a(37).billable_units() == 2
    assert _a(38).billable_units() == 3
    assert _a(45).billable_units() == 3


def test_completed_appointment_bills_at_least_one_unit():
    assert _a(5).billable_units() == 1


def test_other_statuses_bill_nothing():
    for status in ("booked", "cancelled", "no_show"):
        assert _a(60, status).billable_units() == 0


def test_custom_units():
    assert _a(25).billable_units(unit_min=10, threshold_min=5) == 3
    assert _a(24).billable_units(unit_min=10, threshold_min=5) == 2
    assert _a(29).billable_units(unit_min=10, threshold_min=10) == 2


def test_bad_units_rejected_before_status_check():
    for unit, threshold in ((0, 1), (15, 16), (15, 0)):
        with pytest.raises(ValueError) as err:
            _a(30, "booked").billable_units(unit_min=unit, threshold_min=threshold)
        assert str(err.value) == f"billable_units: bad units {unit}/{threshold}"
    with pytest.raises(TypeError):
        _a(30).billable_units(10)
