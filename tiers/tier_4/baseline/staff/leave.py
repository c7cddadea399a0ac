"""Leave requests."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Iterator

__all__ = ["LeaveRequest", "overlaps"]


@dataclass(frozen=True)
class LeaveRequest:
    staff_id: str
    start: date
    end: date  # inclusive
    approved: bool = False

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"{self.staff_id}: leave ends before it starts")

    @property
    def days(self) -> int:
        """Calendar days covered, both ends included."""
        return (self.end - self.start).days + 1

    def dates(self) -> Iterator[date]:
        for offset in range(self.days):
            yield self.start + timedelta(days=offset)


def overlaps(a: LeaveRequest, b: LeaveRequest) -> bool:
    """True when the two requests share at least one calendar day."""
    return a.start <= b.end and b.start <= a.end
