# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
import pytest

TABLE = {
    frozenset({"WAR", "ASP"}): "major",
    frozenset({"WAR", "IBU"}): "major",
    frozenset({"AMX", "MTX"}): "moderate",
    frozenset({"ASP", "IBU"}): "moderate",
    frozenset({"AMX", "ASP"}): "minor",
}


def test_default_keeps_major_and_moderate_in_order():
    from pharmacy.interactions import find_interactions

    found = find_interactions(["WAR", "IBU", "ASP", "AMX"], TABLE)
    assert found == [("ASP", "WAR", "major"), ("IBU", "WAR", "major"), ("ASP", "IBU", "moderate")]


def test_minor_threshold_includes_everything():
    from pharmacy.interactions import find_interactions

    found = find_interactions(["MTX", "ASP", "AMX"], TABLE, min_severity="minor")
    assert found == [("AMX", "MTX", "moderate"), ("AMX", "ASP", "minor")]


def test_major_threshold():
    from pharmacy.interactions import find_interactions

    assert find_interactions(["ASP", "IBU", "AMX", "MTX"], TABLE, min_severity="major") == []


def test_repeated_codes_do_not_repeat_pairs():
    from pharmacy.interactions import find_interactions

    assert find_interactions(["WAR", "ASP", "WAR", "ASP"], TABLE) == [("ASP", "WAR", "major")]
    assert find_interactions(["WAR", "WAR"], {frozenset({"WAR"}): "major"}) == []


def test_unknown_min_severity():
    from pharmacy.interactions import find_interactions

    with pytest.raises(ValueError) as err:
        find_interactions(["WAR"], TABLE, min_severity="severe")
    assert str(err.value) == "find_interactions: unknown severity 'severe'"


def test_unknown_severity_in_matching_table_entry():
    from pharmacy.interactions import SEVERITIES, find_interactions

    assert SEVERITIES == ("major", "moderate", "minor")
    table = dict(TABLE)
    table[frozenset({"ZIN", "CIP"})] = "bad"
    assert find_interactions(["WAR", "ASP"], table) == [("ASP", "WAR", "major")]
    with pytest.raises(ValueError) as err:
        find_interactions(["ZIN", "CIP"], table)
    assert str(err.value) == "find_interactions: unknown severity 'bad' for CIP/ZIN"
