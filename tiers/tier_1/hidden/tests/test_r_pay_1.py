# SPECSNAP-CANARY tier_1 309872f7-59db-4001-824c-930a6fe607df
from datetime import date

import pytest

from roster.shifts import Shift

MON = date(2024, 6, 3)
TUE = date(2024, 6, 4)


def test_night_minutes_window_edges():
    from payroll.night import NIGHT_END, NIGHT_START, night_minutes

    assert (NIGHT_START, NIGHT_END) == (1320, 360)
    assert night_minutes(Shift("E100", MON, 1200, 1440)) == 120
    assert night_minutes(Shift("E100", MON, 240, 480)) == 120
    assert night_minutes(Shift("E100", MON, 360, 1320)) == 0
    assert night_minutes(Shift("E100", MON, 359, 360)) == 1
    assert night_minutes(Shift("E100", MON, 1319, 1321)) == 1
    assert night_minutes(Shift("E100", MON, 0, 1440)) == 480


def test_break_is_not_deducted():
    from payroll.night import night_minutes

    assert night_minutes(Shift("E100", MON, 1320, 1440, 30)) == 120


def test_default_premium_is_25_percent():
    from payroll.night import night_premium

    assert night_premium([Shift("E100", MON, 1320, 1440)], 1_200) == 600
    assert night_premium([Shift("E100", MON, 360, 1320)], 1_200) == 0
    assert night_premium([], 1_200) == 0


def test_rounding_is_half_to_even():
    from payroll.night import night_premium

    assert night_premium([Shift("E100", MON, 1437, 1440)], 1_000) == 12
    assert night_premium([Shift("E100", MON, 1431, 1440)], 1_000) == 38


def test_rounded_once_on_the_total():
    from payroll.night import night_premium

    shifts = [Shift("E100", MON, 1437, 1440), Shift("E100", TUE, 0, 3)]
    assert night_premium(shifts, 1_000) == 25
    assert night_premium(iter(shifts), 1_000) == 25


def test_premium_bp_bounds_and_keyword_only():
    from payroll.night import night_premium

    night = [Shift("E100", MON, 1320, 1440)]
    assert night_premium(night, 1_200, premium_bp=10_000) == 2_400
    assert night_premium(night, 1_200, premium_bp=0) == 0
    for bad in (10_001, -1):
        with pytest.raises(ValueError) as err:
            night_premium(night, 1_200, premium_bp=bad)
        assert str(err.value) == f"night_premium: premium_bp out of range: {bad}"
    with pytest.raises(TypeError):
        night_premium(night, 1_200, 5_000)
