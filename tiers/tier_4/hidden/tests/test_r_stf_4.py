# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date

import pytest

D = date(2024, 7, 1)


def _d(n):
    return date(2024, 7, n)


def test_plain_cycle():
    from staff.oncall import oncall_rota

    assert oncall_rota(["A", "B", "C"], D, 4) == [(_d(1), "A"), (_d(2), "B"), (_d(3), "C"), (_d(4), "A")]


def test_cycle_continues_after_whoever_took_the_date():
    from staff.oncall import oncall_rota

    rota = oncall_rota(["A", "B", "C"], D, 4, unavailable={"B": {_d(2)}})
    assert rota == [(_d(1), "A"), (_d(2), "C"), (_d(3), "A"), (_d(4), "B")]


def test_wraps_around_to_find_someone():
    from staff.oncall import oncall_rota

    rota = oncall_rota(["A", "B", "C"], D, 3, unavailable={"C": [_d(3)], "A": [_d(3)]})
    assert rota == [(_d(1), "A"), (_d(2), "B"), (_d(3), "B")]


def test_nobody_available_leaves_date_out_and_keeps_the_turn():
    from staff.oncall import oncall_rota

    rota = oncall_rota(["A", "B"], D, 3, unavailable={"A": {_d(2)}, "B": {_d(2)}})
    assert rota == [(_d(1), "A"), (_d(3), "B")]


def test_bad_arguments():
    from staff.oncall import oncall_rota

    for args in ((["A"], D, 0), ([], D, 3), (["A", "B", "A"], D, 3)):
        with pytest.raises(ValueError) as err:
            oncall_rota(*args)
        assert str(err.value) == "oncall_rota: bad arguments"
    with pytest.raises(TypeError):
        oncall_rota(["A"], D, 1, {})
