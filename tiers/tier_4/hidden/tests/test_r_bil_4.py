# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
import pytest


def test_single_code_is_charged_in_full():
    from billing.fee_schedule import bundle_fee

    assert bundle_fee(["C100"]) == 6_500
    assert bundle_fee([]) == 0


def test_second_procedure_at_half_whatever_the_input_order():
    from billing.fee_schedule import bundle_fee

    assert bundle_fee(["C100", "P200"]) == 15_000 + 3_250


def test_third_and_later_procedures_also_at_half():
    from billing.fee_schedule import bundle_fee

    assert bundle_fee(["V300", "P200", "C100"]) == 15_000 + 3_250 + 1_400
    assert bundle_fee(["D400", "V300", "P200", "C100"]) == 15_000 + 3_250 + 1_400 + 450


def test_reduced_fees_round_down():
    from billing.fee_schedule import bundle_fee

    assert bundle_fee(["L500", "C100"]) == 6_500 + 627


def test_repeated_codes_each_take_a_place():
    from billing.fee_schedule import bundle_fee

    assert bundle_fee(["P210", "P210"]) == 3_500 + 1_750


def test_unknown_code_raises_fee_for_error():
    from billing.fee_schedule import bundle_fee

    with pytest.raises(KeyError, match="unknown procedure code: Z999"):
        bundle_fee(["C100", "Z999"])
