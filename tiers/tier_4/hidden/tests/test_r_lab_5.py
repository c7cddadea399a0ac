# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
import pytest


def test_exact_limit_is_not_flagged():
    from labs.trends import delta_flag

    assert not delta_flag(100, 125)
    assert not delta_flag(80, 60)
    assert not delta_flag(-4, -5)


def test_changes_beyond_the_limit_are_flagged_both_ways():
    from labs.trends import delta_flag

    assert delta_flag(100, 125.1)
    assert delta_flag(80, 59.9)
    assert delta_flag(-4, -5.1)


def test_previous_zero():
    from labs.trends import delta_flag

    assert delta_flag(0, 0.1)
    assert not delta_flag(0, 0)


def test_custom_limit_and_validation():
    from labs.trends import delta_flag

    assert delta_flag(10, 10.6, limit_pct=5)
    assert not delta_flag(10, 10.5, limit_pct=5)
    for bad in (0, -3):
        with pytest.raises(ValueError) as err:
            delta_flag(1, 2, limit_pct=bad)
        assert str(err.value) == f"delta_flag: limit_pct must be positive, got {bad}"
    with pytest.raises(TypeError):
        delta_flag(1, 2, 5)


def test_delta_series_indexes():
    from labs.trends import delta_series

    assert delta_series([100, 130, 130, 97, 0, 0, 1]) == [1, 3, 4, 6]
    assert delta_series([5]) == []
    assert delta_series([10, 11, 12], limit_pct=9.5) == [1]
