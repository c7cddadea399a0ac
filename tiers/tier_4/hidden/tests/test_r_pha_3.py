# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
import pytest

from pharmacy.formulary import Drug, Formulary


def _f():
    return Formulary(
        [
            Drug("AMX500", "Amoxicillin", 500, 3_000),
            Drug("CLV625", "Co-amoxiclav", 625, 1_875),
            Drug("MOX400", "Moxifloxacin", 400, 400),
            Drug("AML5", "Amlodipine", 5, 10),
            Drug("IBU200", "Ibuprofen", 200, 1_200),
        ]
    )


def test_prefix_matches_rank_before_substring_matches():
    found = _f().search("amox")
    assert [d.code for d in found] == ["AMX500", "CLV625"]


def test_code_prefix_matches_and_name_order_within_group():
    assert [d.code for d in _f().search("am")] == ["AML5", "AMX500", "CLV625"]
    assert [d.code for d in _f().search("mox")] == ["MOX400", "AMX500", "CLV625"]


def test_case_insensitive_and_stripped():
    assert [d.code for d in _f().search("  IBU ")] == ["IBU200"]


def test_code_is_only_matched_as_prefix():
    assert _f().search("500") == []


def test_limit():
    assert [d.code for d in _f().search("a", limit=2)] == ["AML5", "AMX500"]


def test_errors():
    with pytest.raises(ValueError) as err:
        _f().search("  ")
    assert str(err.value) == "search: empty query"
    with pytest.raises(ValueError) as err:
        _f().search("", limit=0)
    assert str(err.value) == "search: limit must be at least 1, got 0"
