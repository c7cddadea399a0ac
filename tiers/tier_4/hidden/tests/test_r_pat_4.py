# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date

import pytest

from patients.records import Patient

BORN = date(1970, 3, 3)


def test_keeps_identity_of_keep():
    from patients.merge import merge_patients

    keep = Patient("P1", "Ann", "Roe", BORN, "F")
    drop = Patient("P2", "Anne", "Roe-Smith", BORN, "X")
    merged = merge_patients(keep, drop)
    assert (merged.patient_id, merged.first_name, merged.last_name, merged.sex) == ("P1", "Ann", "Roe", "F")


def test_allergies_deduplicated_first_spelling_wins_and_sorted():
    from patients.merge import merge_patients

    keep = Patient("P1", "Ann", "Roe", BORN, allergies=("Penicillin", "latex"))
    drop = Patient("P2", "Ann", "Roe", BORN, allergies=(" penicillin ", "Aspirin", "LATEX", "codeine"))
    assert merge_patients(keep, drop).allergies == ("Aspirin", "codeine", "latex", "Penicillin")


def test_weight_falls_back_to_drop():
    from patients.merge import merge_patients

    keep = Patient("P1", "Ann", "Roe", BORN)
    assert merge_patients(keep, Patient("P2", "Ann", "Roe", BORN, weight_kg=61.5)).weight_kg == 61.5
    heavy = Patient("P1", "Ann", "Roe", BORN, weight_kg=0.0)
    assert merge_patients(heavy, Patient("P2", "Ann", "Roe", BORN, weight_kg=61.5)).weight_kg == 0.0


def test_cannot_merge_into_itself():
    from patients.merge import merge_patients

    p = Patient("P1", "Ann", "Roe", BORN)
    with pytest.raises(ValueError) as err:
        merge_patients(p, p)
    assert str(err.value) == "cannot merge P1 into itself"


def test_birth_dates_must_match():
    from patients.merge import merge_patients

    with pytest.raises(ValueError) as err:
        merge_patients(Patient("P1", "Ann", "Roe", BORN), Patient("P2", "Ann", "Roe", date(1970, 3, 4)))
    assert str(err.value) == "cannot merge P2 into P1: birth dates differ"
