"""Double-entry ledger primitives: accounts, journal entries and balances."""

from ledger.accounts import Account, AccountKind, ChartOfAccounts
from ledger.journal import JournalEntry, Posting, UnbalancedEntryError, make_entry

__all__ = [
    "Account",
    "AccountKind",
    "ChartOfAccounts",
    "JournalEntry",
    "Posting",
    "UnbalancedEntryError",
    "make_entry",
]
