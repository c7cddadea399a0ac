# SPECSNAP-CANARY tier_2 7b1e5c2a-4f0d-4c8e-9a61-2d9f3e8b0c47
import pytest


def test_usd_and_zero_amounts_are_free():
    from billing.fees import fx_fee

    assert fx_fee(10_000, "USD") == 0
    assert fx_fee(0, "EUR") == 0


def test_default_rate_is_175_basis_points():
    from billing.fees import fx_fee

    assert fx_fee(10_000, "CHF") == 175


def test_rounding_is_half_to_even():
    from billing.fees import fx_fee

    assert fx_fee(2_200, "EUR") == 38
    assert fx_fee(2_600, "EUR") == 46


def test_minimum_fee_is_25_cents():
    from billing.fees import fx_fee

    assert fx_fee(100, "GBP") == 25
    assert fx_fee(1_429, "GBP") == 25
    assert fx_fee(1_486, "GBP") == 26


def test_cap_reached_exactly_and_exceeded():
    from billing.fees import fx_fee

    assert fx_fee(200_000, "EUR", rate_bp=200) == 4_000
    assert fx_fee(228_000, "EUR") == 3_990
    assert fx_fee(240_000, "EUR") == 4_000


def test_bad_currency_code():
    from billing.fees import fx_fee

    for bad in ("eur", "EURO", "E1R"):
        with pytest.raises(ValueError) as err:
            fx_fee(1_000, bad)
        assert str(err.value) == f"fx_fee: bad currency {bad!r}"


def test_negative_amount():
    from billing.fees import fx_fee

    with pytest.raises(ValueError) as err:
        fx_fee(-1, "EUR")
    assert str(err.value) == "fx_fee: negative amount"
