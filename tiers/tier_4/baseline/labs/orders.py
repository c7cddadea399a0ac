"""Lab orders and the queue of pending work."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

__all__ = ["PRIORITIES", "LabOrder", "OrderQueue"]

PRIORITIES = ("routine", "urgent", "stat")


@dataclass(frozen=True)
class LabOrder:
    order_id: str
    patient_id: str
    tests: tuple[str, ...]
    ordered_at: datetime
    priority: str = "routine"
    status: str = "pending"

    def __post_init__(self) -> None:
        if not self.tests:
            raise ValueError(f"{self.order_id}: an order needs at least one test")
        if self.priority not in PRIORITIES:
            raise ValueError(f"{self.order_id}: unknown priority {self.priority!r}")


class OrderQueue:
    def __init__(self) -> None:
        self._orders: dict[str, LabOrder] = {}

    def submit(self, order: LabOrder) -> None:
        if order.order_id in self._orders:
            raise ValueError(f"duplicate order id: {order.order_id}")
        self._orders[order.order_id] = order

    def get(self, order_id: str) -> LabOrder:
        try:
            return self._orders[order_id]
        except KeyError:
            raise KeyError(f"unknown order: {order_id}") from None

    def complete(self, order_id: str) -> LabOrder:
        done = replace(self.get(order_id), status="complete")
        self._orders[order_id] = done
        return done

    def pending(self) -> list[LabOrder]:
        """Pending orders, stat first, then urgent, then routine; oldest first within each."""
        rank = {p: i for i, p in enumerate(reversed(PRIORITIES))}
        waiting = [o for o in self._orders.values() if o.status == "pending"]
        return sorted(waiting, key=lambda o: (rank[o.priority], o.ordered_at, o.order_id))
