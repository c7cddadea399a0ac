"""Patient records."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

__all__ = ["SEXES", "Patient"]

SEXES = ("F", "M", "X")


@dataclass(frozen=True)
class Patient:
    patient_id: str
    first_name: str
    last_name: str
    birth_date: date
    sex: str = "X"
    allergies: tuple[str, ...] = ()
    weight_kg: float | None = None

    def __post_init__(self) -> None:
        if not self.patient_id:
            raise ValueError("patient_id must not be empty")
        if self.sex not in SEXES:
            raise ValueError(f"{self.patient_id}: unknown sex {self.sex!r}")

    @property
    def full_name(self) -> str:
        return f"{self.first_name} {self.last_name}"

    def age_on(self, on: date) -> int:
        """Completed years of age on ``on``."""
        years = on.year - self.birth_date.year
        if (on.month, on.day) < (self.birth_date.month, self.birth_date.day):
            years -= 1
        return years

    def is_allergic_to(self, substance: str) -> bool:
        """Case-insensitive match against the recorded allergies."""
        wanted = substance.strip().casefold()
        return any(a.strip().casefold() == wanted for a in self.allergies)
