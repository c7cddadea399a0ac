# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date

import pytest

from patients.records import Patient


def _p(born):
    return Patient("P7", "Mia", "Hart", born)


def test_whole_months_complete_on_matching_day():
    p = _p(date(2023, 5, 15))
    assert p.age_in_months(date(2024, 5, 15)) == 12
    assert p.age_in_months(date(2024, 5, 14)) == 11


def test_birth_date_itself_is_zero():
    assert _p(date(2024, 1, 10)).age_in_months(date(2024, 1, 10)) == 0


def test_month_end_birthday_completes_on_last_day():
    p = _p(date(2024, 1, 31))
    assert p.age_in_months(date(2024, 2, 28)) == 0
    assert p.age_in_months(date(2024, 2, 29)) == 1
    assert p.age_in_months(date(2024, 4, 30)) == 3
    assert p.age_in_months(date(2024, 5, 30)) == 3


def test_date_before_birth_is_rejected():
    with pytest.raises(ValueError) as err:
        _p(date(2024, 1, 31)).age_in_months(date(2024, 1, 30))
    assert str(err.value) == "P7: 2024-01-30 is before the birth date"
