# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
from datetime import date

import pytest

from ledger.accounts import Account, Chart
from ledger.journal import Entry, Journal, Line


def _journal() -> Journal:
    chart = Chart(
        [
            Account("1000", "Cash", "asset"),
            Account("1100", "Receivables", "asset"),
            Account("4000", "Sales", "revenue"),
        ]
    )
    journal = Journal(chart)
    journal.post(Entry("J3", date(2024, 3, 10), "c", (Line("1000", 300), Line("4000", -300))))
    journal.post(Entry("J1", date(2024, 3, 1), "a", (Line("1000", 100), Line("4000", -100))))
    journal.post(Entry("J2", date(2024, 3, 5), "b", (Line("1000", -40), Line("1000", 60), Line("4000", -20))))
    journal.post(Entry("J4", date(2024, 3, 5), "d", (Line("1000", 7), Line("4000", -7))))
    return journal


def test_rows_sorted_by_date_with_running_balance():
    rows = _journal().activity("1000")
    assert rows == [
        (date(2024, 3, 1), "J1", 100, 100),
        (date(2024, 3, 5), "J2", -40, 60),
        (date(2024, 3, 5), "J2", 60, 120),
        (date(2024, 3, 5), "J4", 7, 127),
        (date(2024, 3, 10), "J3", 300, 427),
    ]


def test_start_is_inclusive_and_opening_balance_counts():
    rows = _journal().activity("1000", start=date(2024, 3, 5))
    assert rows[0] == (date(2024, 3, 5), "J2", -40, 60)
    assert rows[-1] == (date(2024, 3, 10), "J3", 300, 427)


def test_end_is_exclusive():
    rows = _journal().activity("1000", end=date(2024, 3, 10))
    assert [r[1] for r in rows] == ["J1", "J2", "J2", "J4"]


def test_account_without_lines_gives_empty_list():
    assert _journal().activity("1100") == []


def test_unknown_account_raises_key_error():
    with pytest.raises(KeyError):
        _journal().activity("9999")


def test_end_not_after_start_rejected():
    with pytest.raises(ValueError) as err:
        _journal().activity("1000", start=date(2024, 3, 5), end=date(2024, 3, 5))
    assert str(err.value) == "activity: end must be after start"
