"""Reference ranges for lab tests."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Iterable

from patients.records import Patient

__all__ = ["RefRange", "find_range"]


@dataclass(frozen=True)
class RefRange:
    test_code: str
    low: float
    high: float
    unit: str
    sex: str | None = None  # None: applies to every sex
    min_age: int = 0  # inclusive, completed years
    max_age: int = 150  # inclusive

    def __post_init__(self) -> None:
        if self.high < self.low:
            raise ValueError(f"{self.test_code}: high below low")

    def applies_to(self, patient: Patient, on: date) -> bool:
        age = patient.age_on(on)
        sex_ok = self.sex is None or self.sex == patient.sex
        return sex_ok and self.min_age <= age <= self.max_age


def find_range(
    ranges: Iterable[RefRange], test_code: str, patient: Patient, on: date
) -> RefRange | None:
    """The first range for ``test_code`` that applies to the patient, if any."""
    for rng in ranges:
        if rng.test_code == test_code and rng.applies_to(patient, on):
            return rng
    return None
