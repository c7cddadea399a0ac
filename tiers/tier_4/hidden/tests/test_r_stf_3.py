# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
import pytest

from staff.clinicians import Clinician, StaffDirectory


def _dir():
    return StaffDirectory(
        [
            Clinician("S4", "zoe Hart", "doctor", frozenset({"Cardiology "})),
            Clinician("S2", "Adam Cole", "nurse", frozenset({"cardiology", "wound care"})),
            Clinician("S3", "Adam Cole", "doctor", frozenset({"CARDIOLOGY"})),
            Clinician("S1", "Bea Ives", "technician", frozenset({"cardiology"})),
            Clinician("S5", "Cal Ng", "doctor", frozenset({"dermatology"})),
        ]
    )


def test_default_roles_are_doctors_and_nurses():
    found = _dir().qualified_for("cardiology")
    assert [c.staff_id for c in found] == ["S2", "S3", "S4"]


def test_specialty_compared_stripped_and_casefolded():
    assert [c.staff_id for c in _dir().qualified_for("  Cardiology")] == ["S2", "S3", "S4"]


def test_ordered_by_casefolded_name_then_id():
    d = _dir()
    d.add(Clinician("S0", "bea Ives", "doctor", frozenset({"cardiology"})))
    assert [c.staff_id for c in d.qualified_for("cardiology")] == ["S2", "S3", "S0", "S4"]


def test_roles_filter():
    found = _dir().qualified_for("cardiology", roles=("technician", "nurse"))
    assert [c.staff_id for c in found] == ["S2", "S1"]


def test_bad_roles():
    with pytest.raises(ValueError) as err:
        _dir().qualified_for("cardiology", roles=())
    assert str(err.value) == "qualified_for: roles must not be empty"
    with pytest.raises(ValueError) as err:
        _dir().qualified_for("cardiology", roles=("doctor", "porter"))
    assert str(err.value) == "qualified_for: unknown role 'porter'"
