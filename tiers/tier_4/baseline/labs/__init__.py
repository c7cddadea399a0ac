"""Lab orders, reference ranges and result flags."""

from labs.orders import LabOrder, OrderQueue
from labs.ranges import RefRange, find_range
from labs.results import Result, flag

__all__ = ["LabOrder", "OrderQueue", "RefRange", "Result", "find_range", "flag"]
