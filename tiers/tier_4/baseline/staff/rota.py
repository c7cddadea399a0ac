"""Shifts and rota arithmetic."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Iterable

__all__ = ["Shift", "minutes_by_staff", "on_duty"]


@dataclass(frozen=True)
class Shift:
    staff_id: str
    day: date
    start: time
    end: time

    def __post_init__(self) -> None:
        if self.end <= self.start:
            raise ValueError(f"{self.staff_id}: shift on {self.day} ends before it starts")

    @property
    def minutes(self) -> int:
        return (self.end.hour * 60 + self.end.minute) - (self.start.hour * 60 + self.start.minute)


def minutes_by_staff(shifts: Iterable[Shift]) -> dict[str, int]:
    """Total rostered minutes per staff member."""
    totals: dict[str, int] = defaultdict(int)
    for shift in shifts:
        totals[shift.staff_id] += shift.minutes
    return dict(totals)


def on_duty(shifts: Iterable[Shift], staff_id: str, when: datetime) -> bool:
    """True when ``when`` falls in one of the staff member's shifts (end excluded)."""
    return any(
        s.staff_id == staff_id and s.day == when.date() and s.start <= when.time() < s.end
        for s in shifts
    )
