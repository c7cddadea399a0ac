# SPECSNAP-CANARY tier_2 7b1e5c2a-4f0d-4c8e-9a61-2d9f3e8b0c47
from datetime import date

import pytest


def test_first_day_of_default_fiscal_year():
    from ledger.periods import fiscal_period

    assert fiscal_period(date(2024, 7, 1)) == (2025, 1)


def test_day_before_fiscal_year_boundary():
    from ledger.periods import fiscal_period

    assert fiscal_period(date(2024, 6, 30)) == (2024, 4)


def test_quarter_numbering_with_default_start():
    from ledger.periods import fiscal_period

    assert fiscal_period(date(2024, 9, 30)) == (2025, 1)
    assert fiscal_period(date(2024, 10, 1)) == (2025, 2)
    assert fiscal_period(date(2025, 3, 31)) == (2025, 3)
    assert fiscal_period(date(2025, 4, 1)) == (2025, 4)


def test_start_month_one_is_calendar_year():
    from ledger.periods import fiscal_period

    assert fiscal_period(date(2024, 1, 1), start_month=1) == (2024, 1)
    assert fiscal_period(date(2024, 12, 31), start_month=1) == (2024, 4)


def test_start_month_is_keyword_only():
    from ledger.periods import fiscal_period

    assert fiscal_period(date(2024, 4, 1), start_month=4) == (2025, 1)
    with pytest.raises(TypeError):
        fiscal_period(date(2024, 4, 1), 4)


def test_start_month_out_of_range():
    from ledger.periods import fiscal_period

    with pytest.raises(ValueError) as err:
        fiscal_period(date(2024, 1, 1), start_month=13)
    assert str(err.value) == "fiscal_period: start_month must be 1-12, got 13"
    with pytest.raises(ValueError) as err:
        fiscal_period(date(2024, 1, 1), start_month=0)
    assert str(err.value) == "fiscal_period: start_month must be 1-12, got 0"
