# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
import pytest

from labs.ranges import RefRange

HB = RefRange("HB", 120, 160, "g/L")


def test_default_margin_limits_are_not_critical_themselves():
    from labs.results import critical_flag

    assert critical_flag(59.9, HB) == "LL"
    assert critical_flag(60, HB) == "L"
    assert critical_flag(240, HB) == "H"
    assert critical_flag(240.1, HB) == "HH"
    assert critical_flag(130, HB) == "N"


def test_zero_margin_makes_everything_outside_critical():
    from labs.results import critical_flag

    assert critical_flag(119, HB, margin_pct=0) == "LL"
    assert critical_flag(161, HB, margin_pct=0) == "HH"
    assert critical_flag(120, HB, margin_pct=0) == "N"
    assert critical_flag(160, HB, margin_pct=0) == "N"


def test_custom_margin():
    from labs.results import critical_flag

    assert critical_flag(89, HB, margin_pct=25) == "LL"
    assert critical_flag(90, HB, margin_pct=25) == "L"
    assert critical_flag(200, HB, margin_pct=25) == "H"
    assert critical_flag(201, HB, margin_pct=25) == "HH"


def test_margin_bounds():
    from labs.results import critical_flag

    assert critical_flag(-1, HB, margin_pct=100) == "LL"
    assert critical_flag(0, HB, margin_pct=100) == "L"
    for bad in (-1, 101):
        with pytest.raises(ValueError) as err:
            critical_flag(130, HB, margin_pct=bad)
        assert str(err.value) == f"critical_flag: margin_pct must be 0..100, got {bad}"


def test_margin_is_keyword_only():
    from labs.results import critical_flag

    with pytest.raises(TypeError):
        critical_flag(130, HB, 10)
