from datetime import date

import pytest

from ledger.accounts import Account, AccountKind, ChartOfAccounts
from ledger.balances import account_balances, normal_balance, trial_balance_ok
from ledger.journal import Posting, UnbalancedEntryError, make_entry


def _chart() -> ChartOfAccounts:
    return ChartOfAccounts(
        [
            Account("1000", "Cash", AccountKind.ASSET),
            Account("4000", "Sales", AccountKind.INCOME),
        ]
    )


def test_chart_iterates_in_code_order_and_rejects_duplicates():
    chart = ChartOfAccounts([Account("4000", "Sales", AccountKind.INCOME)])
    chart.add(Account("1000", "Cash", AccountKind.ASSET))
    assert [a.code for a in chart] == ["1000", "4000"]
    with pytest.raises(ValueError):
        chart.add(Account("1000", "Petty cash", AccountKind.ASSET))


def test_make_entry_rejects_unbalanced_postings():
    with pytest.raises(UnbalancedEntryError):
        make_entry(
            "J1",
            date(2024, 1, 2),
            "oops",
            [Posting("1000", debit_cents=100), Posting("4000", credit_cents=90)],
        )


def test_balances_and_normal_side():
    entry = make_entry(
        "J2",
        date(2024, 1, 3),
        "cash sale",
        [Posting("1000", debit_cents=700), Posting("4000", credit_cents=700)],
    )
    assert account_balances([entry]) == {"1000": 700, "4000": -700}
    assert normal_balance(_chart(), [entry], "4000") == 700
    assert trial_balance_ok([entry])
