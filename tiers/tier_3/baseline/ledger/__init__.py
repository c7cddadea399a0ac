"""General ledger: money helpers, the chart of accounts and the journal."""

from ledger.accounts import KINDS, Account, Chart
from ledger.journal import Entry, Journal, Line, PostingError
from ledger.money import format_cents, parse_cents, split_evenly

__all__ = [
    "KINDS",
    "Account",
    "Chart",
    "Entry",
    "Journal",
    "Line",
    "PostingError",
    "format_cents",
    "parse_cents",
    "split_evenly",
]
