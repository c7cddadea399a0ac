"""Appointments."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["STATUSES", "Appointment"]

STATUSES = ("booked", "completed", "cancelled", "no_show")


@dataclass(frozen=True)
class Appointment:
    appt_id: str
    patient_id: str
    staff_id: str
    start: datetime
    minutes: int = 15
    kind: str = "consult"
    status: str = "booked"

    def __post_init__(self) -> None:
        if self.minutes <= 0:
            raise ValueError(f"{self.appt_id}: minutes must be positive")
        if self.status not in STATUSES:
            raise ValueError(f"{self.appt_id}: unknown status {self.status!r}")

    @property
    def end(self) -> datetime:
        return self.start + timedelta(minutes=self.minutes)

    @property
    def active(self) -> bool:
        """Booked or completed: the appointment takes up the clinician's time."""
        return self.status in ("booked", "completed")

    def overlaps(self, other: Appointment) -> bool:
        """True when the two time ranges intersect (touching ends do not)."""
        return self.start < other.end and other.start < self.end
