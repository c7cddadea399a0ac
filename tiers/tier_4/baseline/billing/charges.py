"""Charges raised for appointments and dispensed drugs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from billing.fee_schedule import fee_for
from pharmacy.formulary import Drug
from scheduling.appointments import Appointment

__all__ = ["Charge", "KIND_CODES", "appointment_charge", "dispensing_charges"]

KIND_CODES = {"consult": "C100", "long": "C110", "follow_up": "C120", "procedure": "P200"}


@dataclass(frozen=True)
class Charge:
    patient_id: str
    code: str
    cents: int
    on: date

    def __post_init__(self) -> None:
        if self.cents < 0:
            raise ValueError(f"{self.patient_id}: negative charge for {self.code}")


def appointment_charge(appt: Appointment) -> Charge | None:
    """The charge for a completed appointment; nothing for any other status."""
    if appt.status != "completed":
        return None
    code = KIND_CODES.get(appt.kind, "C100")
    return Charge(appt.patient_id, code, fee_for(code), appt.start.date())


def dispensing_charges(patient_id: str, drug: Drug, units: int, unit_price_cents: int, on: date) -> list[Charge]:
    """The drug itself (under its own code) plus the dispensing fee."""
    if units <= 0:
        raise ValueError("dispensing_charges: units must be positive")
    return [
        Charge(patient_id, drug.code, units * unit_price_cents, on),
        Charge(patient_id, "D400", fee_for("D400"), on),
    ]
