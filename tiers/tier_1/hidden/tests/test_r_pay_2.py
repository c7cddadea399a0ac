# SPECSNAP-CANARY tier_1 309872f7-59db-4001-824c-930a6fe607df
from datetime import date

import pytest

from payroll.payslip import Payslip

MON = date(2024, 6, 3)


def _slip(gross, withheld, emp_id="E100"):
    return Payslip(emp_id, MON, 600, gross, withheld)


def test_half_of_net_rounded_down_to_dollars():
    from payroll.advances import max_advance

    assert max_advance(_slip(15_000, 2_655)) == 6_100
    assert max_advance(_slip(199, 0)) == 0


def test_based_on_net_not_gross():
    from payroll.advances import max_advance

    assert max_advance(_slip(20_000, 10_000)) == 5_000


def test_default_cap_is_400_dollars():
    from payroll.advances import max_advance

    assert max_advance(_slip(80_000, 0)) == 40_000
    assert max_advance(_slip(100_000, 0)) == 40_000
    assert max_advance(_slip(79_999, 0)) == 39_900


def test_non_positive_net_gives_zero():
    from payroll.advances import max_advance

    assert max_advance(_slip(0, 0)) == 0
    assert max_advance(_slip(100, 200)) == 0


def test_custom_fraction_and_cap_and_errors():
    from payroll.advances import max_advance

    slip = _slip(15_000, 2_655)
    assert max_advance(slip, fraction_bp=10_000) == 12_300
    assert max_advance(slip, fraction_bp=10_000, cap_cents=1_050) == 1_050
    assert max_advance(slip, cap_cents=0) == 0
    for bad in (0, 10_001):
        with pytest.raises(ValueError) as err:
            max_advance(slip, fraction_bp=bad, cap_cents=-1)
        assert str(err.value) == f"max_advance: fraction_bp must be 1..10000, got {bad}"
    with pytest.raises(ValueError) as err:
        max_advance(slip, cap_cents=-1)
    assert str(err.value) == "max_advance: negative cap"
    with pytest.raises(TypeError):
        max_advance(slip, 10_000)


def test_advances_for_run_skips_zero_advances():
    from payroll.advances import advances_for_run

    slips = [_slip(15_000, 2_655, "E100"), _slip(150, 0, "E200"), _slip(100_000, 0, "E300")]
    assert advances_for_run(slips) == {"E100": 6_100, "E300": 40_000}
    assert advances_for_run(slips, fraction_bp=10_000, cap_cents=50_000) == {"E100": 12_300, "E200": 100, "E300": 50_000}
    assert advances_for_run([]) == {}


def test_advances_for_run_rejects_duplicates():
    from payroll.advances import advances_for_run

    with pytest.raises(ValueError) as err:
        advances_for_run([_slip(15_000, 0, "E100"), _slip(9_000, 0, "E200"), _slip(8_000, 0, "E100")])
    assert str(err.value) == "advances_for_run: duplicate payslip for E100"
