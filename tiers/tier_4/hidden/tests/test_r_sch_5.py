# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import datetime

import pytest

T = datetime(2024, 5, 6, 9, 0)


def _at(minute):
    return datetime(2024, 5, 6, 9, minute)


def test_lowest_priority_number_first():
    from scheduling.waitlist import Waitlist

    w = Waitlist()
    w.add("P1", priority=3, added_at=_at(0))
    w.add("P2", priority=1, added_at=_at(5))
    w.add("P3", added_at=_at(1))
    w.add("P4", priority=5, added_at=_at(2))
    assert len(w) == 4
    assert [w.pop_next() for _ in range(4)] == ["P2", "P1", "P3", "P4"]
    assert len(w) == 0


def test_ties_by_added_at_then_by_add_order():
    from scheduling.waitlist import Waitlist

    w = Waitlist()
    w.add("P1", priority=2, added_at=_at(10))
    w.add("P2", priority=2, added_at=_at(3))
    w.add("P3", priority=2, added_at=_at(10))
    w.add("P0", priority=2, added_at=_at(10))
    assert [w.pop_next() for _ in range(4)] == ["P2", "P1", "P3", "P0"]


def test_duplicate_rejected_but_readd_after_pop_allowed():
    from scheduling.waitlist import Waitlist

    w = Waitlist()
    w.add("P1", added_at=T)
    with pytest.raises(ValueError) as err:
        w.add("P1", priority=1, added_at=T)
    assert str(err.value) == "waitlist: P1 is already waiting"
    assert w.pop_next() == "P1"
    w.add("P1", priority=4, added_at=T)
    assert len(w) == 1


def test_empty_waitlist():
    from scheduling.waitlist import Waitlist

    with pytest.raises(LookupError) as err:
        Waitlist().pop_next()
    assert str(err.value) == "waitlist is empty"


def test_priority_bounds_and_keyword_only():
    from scheduling.waitlist import Waitlist

    w = Waitlist()
    w.add("P1", priority=1, added_at=T)
    w.add("P2", priority=5, added_at=T)
    for bad in (0, 6):
        with pytest.raises(ValueError) as err:
            w.add("P9", priority=bad, added_at=T)
        assert str(err.value) == f"waitlist: priority must be 1..5, got {bad}"
    with pytest.raises(TypeError):
        w.add("P3", 2, T)
