# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date, datetime

import pytest

from scheduling.appointments import Appointment

SINCE, UNTIL = date(2024, 5, 1), date(2024, 6, 1)


def _a(appt_id, staff, day, status):
    return Appointment(appt_id, "P1", staff, datetime(2024, 5, day, 9, 0) if day else datetime(2024, 6, 1, 9, 0), status=status)


def test_rate_rounded_to_four_decimals():
    from reports.noshow import no_show_rates

    appts = [_a("A1", "S1", 2, "no_show"), _a("A2", "S1", 3, "completed"), _a("A3", "S1", 4, "completed")]
    assert no_show_rates(appts, since=SINCE, until=UNTIL) == {"S1": 0.3333}


def test_booked_and_cancelled_are_not_counted():
    from reports.noshow import no_show_rates

    appts = [
        _a("A1", "S1", 2, "no_show"),
        _a("A2", "S1", 3, "completed"),
        _a("A3", "S1", 4, "booked"),
        _a("A4", "S1", 5, "cancelled"),
        _a("A5", "S2", 5, "cancelled"),
    ]
    assert no_show_rates(appts, since=SINCE, until=UNTIL) == {"S1": 0.5}


def test_since_included_until_excluded():
    from reports.noshow import no_show_rates

    appts = [_a("A1", "S1", 1, "no_show"), _a("A2", "S1", None, "no_show"), _a("A3", "S1", 31, "completed")]
    assert no_show_rates(appts, since=SINCE, until=UNTIL) == {"S1": 0.5}


def test_keys_sorted_by_staff_id():
    from reports.noshow import no_show_rates

    appts = [_a("A1", "S9", 2, "completed"), _a("A2", "S1", 2, "no_show"), _a("A3", "S5", 2, "completed")]
    result = no_show_rates(appts, since=SINCE, until=UNTIL)
    assert list(result.items()) == [("S1", 1.0), ("S5", 0.0), ("S9", 0.0)]


def test_until_must_be_after_since_and_keyword_only():
    from reports.noshow import no_show_rates

    for until in (SINCE, date(2024, 4, 30)):
        with pytest.raises(ValueError) as err:
            no_show_rates([], since=SINCE, until=until)
        assert str(err.value) == "no_show_rates: until must be after since"
    with pytest.raises(TypeError):
        no_show_rates([], SINCE, UNTIL)
