"""Appointment slots, appointments, the appointment book and reminders."""

from scheduling.appointments import STATUSES, Appointment
from scheduling.book import AppointmentBook, BookingError

__all__ = ["STATUSES", "Appointment", "AppointmentBook", "BookingError"]
