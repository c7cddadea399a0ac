# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest


def test_check_digit_weights():
    from shipping.tracking import make_tracking

    assert make_tracking(1) == "HS0000000017"
    assert make_tracking(123456789) == "HS1234567895"


def test_custom_prefix_and_zero_check_digit():
    from shipping.tracking import make_tracking

    assert make_tracking(42, prefix="ZX") == "ZX0000000420"


def test_serial_range():
    from shipping.tracking import make_tracking

    assert make_tracking(999_999_999) == "HS9999999999"
    for serial in (10**9, -1):
        with pytest.raises(ValueError) as err:
            make_tracking(serial)
        assert str(err.value) == f"serial out of range: {serial}"


def test_prefix_validation():
    from shipping.tracking import make_tracking

    for prefix in ("hs", "HSX", "H", "\u00c9S"):
        with pytest.raises(ValueError) as err:
            make_tracking(5, prefix=prefix)
        assert str(err.value) == f"bad prefix: {prefix!r}"


def test_valid_codes_round_trip():
    from shipping.tracking import is_valid_tracking, make_tracking

    assert is_valid_tracking(make_tracking(31_337))
    assert is_valid_tracking("HS0000000017")


def test_invalid_codes_never_raise():
    from shipping.tracking import is_valid_tracking

    for code in (
        "HS0000000018",
        "hs0000000017",
        "HS000000017",
        "HS00000000170",
        "HS00000000X7",
        "HS000000001\u0667",
        None,
        12345,
    ):
        assert is_valid_tracking(code) is False
