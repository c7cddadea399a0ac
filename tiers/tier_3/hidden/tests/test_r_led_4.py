# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
from datetime import date

import pytest

from ledger.accounts import Account, Chart
from ledger.journal import Entry, Journal, Line


def _journal() -> Journal:
    chart = Chart(
        [
            Account("1000", "Cash", "asset"),
            Account("3000", "Owner capital", "equity"),
            Account("3900", "Retained earnings", "equity"),
            Account("4000", "Sales", "revenue"),
            Account("5000", "Rent", "expense"),
            Account("5100", "Wages", "expense"),
        ]
    )
    return Journal(chart)


def _post(journal, entry_id, on, *lines):
    journal.post(Entry(entry_id, on, "x", tuple(Line(a, n) for a, n in lines)))


def test_closing_lines_and_retained_earnings():
    from ledger.closing import closing_entry

    j = _journal()
    _post(j, "S1", date(2024, 6, 3), ("1000", 1_000), ("4000", -1_000))
    _post(j, "R1", date(2024, 6, 4), ("5000", 300), ("1000", -300))
    entry = closing_entry(j, date(2024, 6, 30))
    assert entry.entry_id == "CLOSE-2024-06-30"
    assert entry.on == date(2024, 6, 30)
    assert entry.memo == "Close revenue and expenses"
    assert entry.lines == (Line("4000", 1_000), Line("5000", -300), Line("3900", -700))
    j.post(entry)
    assert j.balance("4000") == 0 and j.balance("3900") == -700


def test_later_entries_are_ignored():
    from ledger.closing import closing_entry

    j = _journal()
    _post(j, "S1", date(2024, 6, 30), ("1000", 500), ("4000", -500))
    _post(j, "S2", date(2024, 7, 1), ("1000", 900), ("4000", -900))
    entry = closing_entry(j, date(2024, 6, 30))
    assert entry.lines == (Line("4000", 500), Line("3900", -500))


def test_retained_line_omitted_when_net_is_zero():
    from ledger.closing import closing_entry

    j = _journal()
    _post(j, "S1", date(2024, 1, 5), ("1000", 400), ("4000", -400))
    _post(j, "W1", date(2024, 1, 6), ("5100", 400), ("1000", -400))
    entry = closing_entry(j, date(2024, 1, 31))
    assert entry.lines == (Line("4000", 400), Line("5100", -400))


def test_nothing_to_close_returns_none():
    from ledger.closing import closing_entry

    j = _journal()
    _post(j, "C1", date(2024, 1, 5), ("1000", 400), ("3000", -400))
    assert closing_entry(j, date(2024, 1, 31)) is None


def test_custom_retained_earnings_account():
    from ledger.closing import closing_entry

    j = _journal()
    _post(j, "S1", date(2024, 1, 5), ("1000", 250), ("4000", -250))
    entry = closing_entry(j, date(2024, 1, 31), retained_earnings="3000")
    assert entry.lines[-1] == Line("3000", -250)


def test_retained_earnings_must_be_equity_and_known():
    from ledger.closing import closing_entry

    j = _journal()
    with pytest.raises(ValueError) as err:
        closing_entry(j, date(2024, 1, 31), retained_earnings="1000")
    assert str(err.value) == "1000 is not an equity account"
    with pytest.raises(KeyError):
        closing_entry(j, date(2024, 1, 31), retained_earnings="3999")
