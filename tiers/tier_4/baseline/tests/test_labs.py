from datetime import date, datetime

from labs.orders import LabOrder, OrderQueue
from labs.ranges import RefRange, find_range
from labs.results import flag
from patients.records import Patient

HB_F = RefRange("HB", 120, 160, "g/L", sex="F", min_age=18)


def test_flags_include_range_ends():
    assert [flag(v, HB_F) for v in (119.9, 120, 160, 160.1)] == ["L", "N", "N", "H"]


def test_find_range_respects_sex_and_age():
    adult = Patient("P1", "A", "B", date(1990, 1, 1), "F")
    child = Patient("P2", "C", "D", date(2015, 1, 1), "F")
    assert find_range([HB_F], "HB", adult, date(2024, 1, 1)) is HB_F
    assert find_range([HB_F], "HB", child, date(2024, 1, 1)) is None


def test_pending_orders_priority():
    q = OrderQueue()
    q.submit(LabOrder("O1", "P1", ("HB",), datetime(2024, 1, 1, 9, 0)))
    q.submit(LabOrder("O2", "P1", ("K",), datetime(2024, 1, 1, 10, 0), priority="stat"))
    assert [o.order_id for o in q.pending()] == ["O2", "O1"]
