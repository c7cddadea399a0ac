# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest


def test_volumetric_weight_can_dominate():
    from shipping.rates import billable_grams

    assert billable_grams(1_000, 40, 30, 20) == 4_800


def test_actual_weight_rounded_up_to_hundred():
    from shipping.rates import billable_grams

    assert billable_grams(5_050, 10, 10, 10) == 5_100
    assert billable_grams(3_000, 10, 10, 10) == 3_000
    assert billable_grams(1, 1, 1, 1) == 100


def test_volumetric_weight_rounds_up_to_a_gram_first():
    from shipping.rates import billable_grams

    assert billable_grams(1, 3, 167, 1) == 200


def test_custom_divisor():
    from shipping.rates import billable_grams

    assert billable_grams(100, 50, 40, 30, divisor=6_000) == 10_000


def test_errors():
    from shipping.rates import billable_grams

    with pytest.raises(ValueError) as err:
        billable_grams(500, 10, 0, 10)
    assert str(err.value) == "billable_grams: dimensions must be positive"
    with pytest.raises(ValueError) as err:
        billable_grams(0, 10, 10, 10)
    assert str(err.value) == "billable_grams: weight must be positive"
