"""Balance calculations over journal entries."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from ledger.accounts import ChartOfAccounts
from ledger.journal import JournalEntry

__all__ = ["account_balances", "normal_balance", "trial_balance_ok"]


def account_balances(entries: Iterable[JournalEntry]) -> dict[str, int]:
    """Debits minus credits per account code, for every account touched."""
    totals: dict[str, int] = defaultdict(int)
    for entry in entries:
        for posting in entry.postings:
            totals[posting.account] += posting.debit_cents - posting.credit_cents
    return dict(totals)


def normal_balance(
    chart: ChartOfAccounts, entries: Iterable[JournalEntry], code: str
) -> int:
    """Balance of one account, positive on the account's normal side."""
    account = chart.get(code)
    raw = account_balances(entries).get(code, 0)
    return raw if account.normal_side == "debit" else -raw


def trial_balance_ok(entries: Iterable[JournalEntry]) -> bool:
    """True when the sum of all account balances is zero."""
    return sum(account_balances(entries).values()) == 0
