# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date

import pytest


def _luhn_ok(number):
    total = 0
    for position, ch in enumerate(reversed(number)):
        value = int(ch)
        if position % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def test_format_and_known_check_digit():
    from billing.claims import claim_number

    assert claim_number("RVC", date(2024, 5, 6), 42) == "RVC-240506-0042-8"


def test_check_digit_is_luhn_over_date_and_sequence():
    from billing.claims import claim_number

    for seq in (1, 7, 42, 305, 9999):
        number = claim_number("ABC", date(2023, 12, 31), seq)
        head, day, part, check = number.split("-")
        assert head == "ABC" and day == "231231" and part == f"{seq:04d}"
        assert len(check) == 1 and _luhn_ok(day + part + check)


def test_sequence_bounds():
    from billing.claims import claim_number

    claim_number("ABC", date(2024, 1, 1), 1)
    claim_number("ABC", date(2024, 1, 1), 9999)
    for bad in (0, 10_000):
        with pytest.raises(ValueError) as err:
            claim_number("ABC", date(2024, 1, 1), bad)
        assert str(err.value) == f"claim_number: seq out of range: {bad}"


def test_bad_clinic_codes_checked_first():
    from billing.claims import claim_number

    for bad in ("rvc", "RV", "RVCX", "R1C", "ÄBC"):
        with pytest.raises(ValueError) as err:
            claim_number(bad, date(2024, 1, 1), 0)
        assert str(err.value) == f"claim_number: bad clinic code {bad!r}"
