"""Shifts: one employee's working time on one day, never crossing midnight."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

__all__ = ["MINUTES_PER_DAY", "Shift", "format_clock", "parse_clock", "parse_shift"]

MINUTES_PER_DAY = 1440


@dataclass(frozen=True)
class Shift:
    """Times are minutes after midnight; the break is unpaid."""

    emp_id: str
    day: date
    start_minute: int
    end_minute: int
    break_minutes: int = 0

    def __post_init__(self) -> None:
        raise NotImplementedError

    @property
    def span_minutes(self) -> int:
        raise NotImplementedError

    @property
    def paid_minutes(self) -> int:
        raise NotImplementedError

    def overlaps(self, other: Shift) -> bool:
        raise NotImplementedError


def parse_clock(text: str, *, allow_24: bool = False) -> int:
    """``"HH:MM"`` -> minutes after midnight."""
    raise NotImplementedError


def format_clock(minute: int) -> str:
    """Minutes after midnight -> ``"HH:MM"``."""
    raise NotImplementedError


def parse_shift(emp_id: str, day: date, text: str, *, break_minutes: int = 0) -> Shift:
    """A shift from ``"HH:MM-HH:MM"``."""
    raise NotImplementedError
