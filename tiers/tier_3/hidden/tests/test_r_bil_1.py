# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest


def test_no_discount_below_twelve_units():
    from billing.pricing import volume_price

    assert volume_price(100, 1) == 100
    assert volume_price(100, 11) == 1_100


def test_first_tier_starts_at_twelve():
    from billing.pricing import volume_price

    assert volume_price(100, 12) == 1_164


def test_second_tier_starts_at_forty_eight():
    from billing.pricing import volume_price

    assert volume_price(100, 47) == 4_559
    assert volume_price(100, 48) == 4_512


def test_third_tier_starts_at_one_hundred_forty_four():
    from billing.pricing import volume_price

    assert volume_price(100, 143) == 13_442
    assert volume_price(100, 144) == 13_104


def test_discount_is_rounded_down():
    from billing.pricing import volume_price

    assert volume_price(333, 12) == 3_877


def test_errors():
    from billing.pricing import volume_price

    with pytest.raises(ValueError) as err:
        volume_price(100, 0)
    assert str(err.value) == "volume_price: quantity must be at least 1"
    with pytest.raises(ValueError) as err:
        volume_price(-1, 5)
    assert str(err.value) == "volume_price: negative unit price"
