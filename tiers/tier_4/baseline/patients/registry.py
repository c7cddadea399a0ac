"""The registry of known patients."""

from __future__ import annotations

from typing import Iterator

from patients.records import Patient

__all__ = ["PatientRegistry"]


class PatientRegistry:
    """Patients keyed by their id."""

    def __init__(self, patients: list[Patient] | None = None) -> None:
        self._patients: dict[str, Patient] = {}
        for patient in patients or []:
            self.add(patient)

    def add(self, patient: Patient) -> None:
        if patient.patient_id in self._patients:
            raise ValueError(f"duplicate patient id: {patient.patient_id}")
        self._patients[patient.patient_id] = patient

    def get(self, patient_id: str) -> Patient:
        try:
            return self._patients[patient_id]
        except KeyError:
            raise KeyError(f"unknown patient: {patient_id}") from None

    def __contains__(self, patient_id: object) -> bool:
        return patient_id in self._patients

    def __len__(self) -> int:
        return len(self._patients)

    def __iter__(self) -> Iterator[Patient]:
        return iter(sorted(self._patients.values(), key=lambda p: p.patient_id))

    def find_by_last_name(self, last_name: str) -> list[Patient]:
        wanted = last_name.strip().casefold()
        return [p for p in self if p.last_name.casefold() == wanted]
