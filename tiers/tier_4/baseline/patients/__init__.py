"""Patient records, the patient registry and contact details."""

from patients.records import SEXES, Patient
from patients.registry import PatientRegistry

__all__ = ["SEXES", "Patient", "PatientRegistry"]
