"""Slot grids for a clinic day."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

__all__ = ["day_slots", "to_minutes", "from_minutes"]


def to_minutes(t: time) -> int:
    return t.hour * 60 + t.minute


def from_minutes(minutes: int) -> time:
    return time(minutes // 60, minutes % 60)


def day_slots(open_at: time, close_at: time, length_min: int = 15) -> list[time]:
    """Start times of back-to-back slots that end no later than ``close_at``."""
    if length_min <= 0:
        raise ValueError("day_slots: length must be positive")
    starts = []
    current = to_minutes(open_at)
    while current + length_min <= to_minutes(close_at):
        starts.append(from_minutes(current))
        current += length_min
    return starts


def slot_datetimes(day: date, open_at: time, close_at: time, length_min: int = 15) -> list[datetime]:
    base = datetime.combine(day, time(0, 0))
    return [base + timedelta(minutes=to_minutes(t)) for t in day_slots(open_at, close_at, length_min)]
