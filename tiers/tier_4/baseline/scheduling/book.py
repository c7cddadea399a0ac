"""The appointment book: booking and cancelling against known patients and staff."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from patients.registry import PatientRegistry
from scheduling.appointments import Appointment
from staff.clinicians import StaffDirectory

__all__ = ["AppointmentBook", "BookingError"]


class BookingError(Exception):
    """Raised when an appointment cannot be booked."""


class AppointmentBook:
    def __init__(self, patients: PatientRegistry, staff: StaffDirectory) -> None:
        self.patients = patients
        self.staff = staff
        self._appts: dict[str, Appointment] = {}

    def get(self, appt_id: str) -> Appointment:
        try:
            return self._appts[appt_id]
        except KeyError:
            raise KeyError(f"unknown appointment: {appt_id}") from None

    def book(self, appt: Appointment) -> Appointment:
        if appt.appt_id in self._appts:
            raise BookingError(f"duplicate appointment id: {appt.appt_id}")
        if appt.patient_id not in self.patients:
            raise BookingError(f"unknown patient: {appt.patient_id}")
        if appt.staff_id not in self.staff:
            raise BookingError(f"unknown staff member: {appt.staff_id}")
        for other in self._appts.values():
            if other.staff_id == appt.staff_id and other.active and other.overlaps(appt):
                raise BookingError(f"{appt.staff_id} is busy at {appt.start:%Y-%m-%d %H:%M}")
        self._appts[appt.appt_id] = appt
        return appt

    def cancel(self, appt_id: str) -> Appointment:
        cancelled = replace(self.get(appt_id), status="cancelled")
        self._appts[appt_id] = cancelled
        return cancelled

    def for_staff(self, staff_id: str, day: date) -> list[Appointment]:
        found = [a for a in self._appts.values() if a.staff_id == staff_id and a.start.date() == day]
        return sorted(found, key=lambda a: (a.start, a.appt_id))

    def all(self) -> list[Appointment]:
        return sorted(self._appts.values(), key=lambda a: (a.start, a.appt_id))
