"""How much of the clinicians' rostered time is booked."""

from __future__ import annotations

from datetime import date
from typing import Iterable

from scheduling.appointments import Appointment
from staff.rota import Shift

__all__ = ["booked_minutes", "rostered_minutes"]


def booked_minutes(appts: Iterable[Appointment], staff_id: str, day: date) -> int:
    """Minutes of active (booked or completed) appointments of one clinician on one day."""
    return sum(
        a.minutes for a in appts if a.staff_id == staff_id and a.start.date() == day and a.active
    )


def rostered_minutes(shifts: Iterable[Shift], staff_id: str, day: date) -> int:
    return sum(s.minutes for s in shifts if s.staff_id == staff_id and s.day == day)
