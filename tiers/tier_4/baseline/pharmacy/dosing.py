"""Dose calculations."""

from __future__ import annotations

import math

from patients.records import Patient
from pharmacy.formulary import Drug

__all__ = ["weight_based_dose_mg", "units_for_dose", "within_daily_max", "allergy_conflict"]


def weight_based_dose_mg(mg_per_kg: float, weight_kg: float) -> int:
    """A weight-based dose, rounded down to a whole milligram."""
    if mg_per_kg <= 0 or weight_kg <= 0:
        raise ValueError("weight_based_dose_mg: inputs must be positive")
    return math.floor(mg_per_kg * weight_kg)


def units_for_dose(drug: Drug, dose_mg: int) -> int:
    """Whole tablets (or ml) needed to reach at least ``dose_mg``."""
    if dose_mg <= 0:
        raise ValueError("units_for_dose: dose must be positive")
    return -(-dose_mg // drug.strength_mg)


def within_daily_max(drug: Drug, dose_mg: int, times_per_day: int) -> bool:
    return dose_mg * times_per_day <= drug.max_daily_mg


def allergy_conflict(patient: Patient, drug: Drug) -> bool:
    """True when the patient is allergic to the drug's name."""
    return patient.is_allergic_to(drug.name)
