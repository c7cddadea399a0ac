from datetime import date

import pytest

from patients.contacts import Contact, normalise_phone
from patients.records import Patient
from patients.registry import PatientRegistry


def test_age_and_allergies():
    p = Patient("P1", "Ada", "Moss", date(1990, 6, 15), "F", allergies=("Penicillin",))
    assert p.age_on(date(2024, 6, 14)) == 33
    assert p.age_on(date(2024, 6, 15)) == 34
    assert p.is_allergic_to(" penicillin ")


def test_registry_rejects_duplicates_and_finds_by_last_name():
    reg = PatientRegistry([Patient("P2", "Bo", "Lee", date(2000, 1, 1)), Patient("P1", "Al", "lee", date(1999, 1, 1))])
    with pytest.raises(ValueError):
        reg.add(Patient("P1", "X", "Y", date(2001, 1, 1)))
    assert [p.patient_id for p in reg.find_by_last_name("LEE")] == ["P1", "P2"]


def test_phone_normalisation():
    assert normalise_phone("+1 (555) 010-2030") == "5550102030"
    assert Contact("P1", "555.010.2030").phone == "5550102030"
    with pytest.raises(ValueError):
        normalise_phone("12345")
