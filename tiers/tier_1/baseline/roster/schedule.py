"""A schedule of shifts, free of overlaps per employee."""

from __future__ import annotations

from datetime import date
from typing import Iterable, Iterator

from roster.shifts import Shift

__all__ = ["Schedule", "week_start"]


def week_start(d: date) -> date:
    """The Monday of the ISO week containing ``d``."""
    raise NotImplementedError


class Schedule:
    """All scheduled shifts."""

    def __init__(self, shifts: Iterable[Shift] = ()) -> None:
        raise NotImplementedError

    def add(self, shift: Shift) -> None:
        raise NotImplementedError

    def shifts_for(self, emp_id: str) -> list[Shift]:
        raise NotImplementedError

    def on_day(self, day: date) -> list[Shift]:
        raise NotImplementedError

    def paid_minutes(self, emp_id: str, start: date, end: date) -> int:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Shift]:
        raise NotImplementedError
