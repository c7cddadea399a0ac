# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date

import pytest

from labs.ranges import RefRange
from patients.records import Patient

ON = date(2024, 6, 1)
WOMAN = Patient("P1", "Ada", "Moss", date(1980, 1, 1), "F")


def test_sex_specific_beats_narrower_neutral_range():
    from labs.ranges import best_range

    neutral = RefRange("HB", 110, 170, "g/L", min_age=40, max_age=50)
    female = RefRange("HB", 120, 160, "g/L", sex="F", min_age=18, max_age=150)
    assert best_range([neutral, female], "HB", WOMAN, ON) is female


def test_narrowest_age_span_wins_among_equals():
    from labs.ranges import best_range

    wide = RefRange("HB", 110, 170, "g/L", sex="F", min_age=18)
    narrow = RefRange("HB", 115, 165, "g/L", sex="F", min_age=40, max_age=49)
    assert best_range([wide, narrow], "HB", WOMAN, ON) is narrow


def test_remaining_ties_go_to_the_first_listed():
    from labs.ranges import best_range

    first = RefRange("K", 3.5, 5.1, "mmol/L", min_age=30, max_age=60)
    second = RefRange("K", 3.4, 5.0, "mmol/L", min_age=40, max_age=70)
    assert best_range([first, second], "K", WOMAN, ON) is first


def test_non_applicable_ranges_are_skipped():
    from labs.ranges import best_range

    male = RefRange("HB", 130, 170, "g/L", sex="M", min_age=40, max_age=50)
    child = RefRange("HB", 110, 140, "g/L", max_age=17)
    other = RefRange("K", 3.5, 5.1, "mmol/L", sex="F")
    neutral = RefRange("HB", 110, 170, "g/L")
    assert best_range([male, child, other, neutral], "HB", WOMAN, ON) is neutral


def test_no_range_raises_lookup_error():
    from labs.ranges import best_range

    with pytest.raises(LookupError) as err:
        best_range([RefRange("HB", 130, 170, "g/L", sex="M")], "HB", WOMAN, ON)
    assert str(err.value) == "no reference range for HB (patient P1)"
