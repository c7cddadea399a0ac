# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import datetime, timedelta

import pytest

from labs.orders import LabOrder, OrderQueue

T0 = datetime(2024, 4, 1, 8, 0)


def _queue(*orders):
    q = OrderQueue()
    for order in orders:
        q.submit(order)
    return q


def test_default_turnaround_is_72_hours():
    q = _queue(LabOrder("O1", "P1", ("HB",), T0))
    assert q.overdue(T0 + timedelta(hours=60)) == []
    assert [o.order_id for o in q.overdue(T0 + timedelta(hours=72))] == ["O1"]


def test_reaching_the_turnaround_is_overdue():
    q = _queue(LabOrder("O1", "P1", ("HB",), T0, priority="urgent"))
    assert q.overdue(T0 + timedelta(hours=9, minutes=59), turnaround_hours=10) == []
    assert [o.order_id for o in q.overdue(T0 + timedelta(hours=10), turnaround_hours=10)] == ["O1"]


def test_stat_orders_use_two_hours():
    q = _queue(LabOrder("S1", "P1", ("K",), T0, priority="stat"), LabOrder("R1", "P1", ("HB",), T0))
    assert [o.order_id for o in q.overdue(T0 + timedelta(hours=2), turnaround_hours=100)] == ["S1"]
    assert q.overdue(T0 + timedelta(hours=1, minutes=59)) == []


def test_completed_orders_are_never_overdue():
    q = _queue(LabOrder("O1", "P1", ("HB",), T0), LabOrder("O2", "P1", ("HB",), T0))
    q.complete("O1")
    assert [o.order_id for o in q.overdue(T0 + timedelta(days=30))] == ["O2"]


def test_oldest_first_then_order_id():
    q = _queue(
        LabOrder("O3", "P1", ("HB",), T0 + timedelta(hours=1), priority="stat"),
        LabOrder("O2", "P1", ("HB",), T0),
        LabOrder("O1", "P1", ("HB",), T0 + timedelta(hours=1)),
    )
    assert [o.order_id for o in q.overdue(T0 + timedelta(days=5), turnaround_hours=1)] == ["O2", "O1", "O3"]


def test_turnaround_must_be_at_least_one():
    with pytest.raises(ValueError) as err:
        OrderQueue().overdue(T0, turnaround_hours=0)
    assert str(err.value) == "overdue: turnaround_hours must be at least 1, got 0"
    with pytest.raises(TypeError):
        OrderQueue().overdue(T0, 5)
