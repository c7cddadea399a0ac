# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date

from patients.records import Patient
from patients.registry import PatientRegistry


def test_same_names_and_birth_date_are_grouped():
    reg = PatientRegistry(
        [
            Patient("P3", "Ada", "Moss", date(1990, 1, 1)),
            Patient("P1", "Ada", "Moss", date(1990, 1, 1)),
            Patient("P2", "Bo", "Lee", date(1990, 1, 1)),
        ]
    )
    assert reg.find_duplicates() == [("P1", "P3")]


def test_names_are_stripped_and_casefolded():
    reg = PatientRegistry(
        [Patient("P1", " ada ", "MOSS", date(1990, 1, 1)), Patient("P2", "Ada", "moss ", date(1990, 1, 1))]
    )
    assert reg.find_duplicates() == [("P1", "P2")]


def test_different_birth_dates_are_not_duplicates():
    reg = PatientRegistry(
        [Patient("P1", "Ada", "Moss", date(1990, 1, 1)), Patient("P2", "Ada", "Moss", date(1990, 1, 2))]
    )
    assert reg.find_duplicates() == []


def test_first_and_last_names_compared_separately():
    reg = PatientRegistry(
        [Patient("P1", "Ann", "a Lee", date(1990, 1, 1)), Patient("P2", "Ann a", "Lee", date(1990, 1, 1))]
    )
    assert reg.find_duplicates() == []


def test_groups_ordered_by_first_id_and_other_fields_ignored():
    born = date(1985, 7, 4)
    reg = PatientRegistry(
        [
            Patient("P9", "Cy", "Dunn", born, "M"),
            Patient("P4", "Cy", "Dunn", born, "X", allergies=("latex",), weight_kg=80.0),
            Patient("P2", "Eve", "Fox", born),
            Patient("P8", "Eve", "Fox", born),
            Patient("P6", "Eve", "Fox", born),
            Patient("P5", "Gus", "Hale", born),
        ]
    )
    assert reg.find_duplicates() == [("P2", "P6", "P8"), ("P4", "P9")]
