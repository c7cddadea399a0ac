"""Appointment reminders."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Iterable

from scheduling.appointments import Appointment

__all__ = ["reminder_time", "due_reminders"]


def reminder_time(appt: Appointment, hours_before: int = 24) -> datetime:
    """When the reminder for ``appt`` should go out."""
    return appt.start - timedelta(hours=hours_before)


def due_reminders(
    appts: Iterable[Appointment], now: datetime, hours_before: int = 24
) -> list[Appointment]:
    """Booked appointments whose reminder time has come but which have not started."""
    due = [
        a
        for a in appts
        if a.status == "booked" and reminder_time(a, hours_before) <= now < a.start
    ]
    return sorted(due, key=lambda a: (a.start, a.appt_id))
