"""Journal entries with signed lines (debits positive, credits negative)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from ledger.accounts import Chart

__all__ = ["Line", "Entry", "PostingError", "Journal"]


class PostingError(ValueError):
    """An entry that cannot be posted."""


@dataclass(frozen=True)
class Line:
    account: str
    amount_cents: int  # > 0 debit, < 0 credit


@dataclass(frozen=True)
class Entry:
    entry_id: str
    on: date
    memo: str
    lines: tuple[Line, ...]

    @property
    def net_cents(self) -> int:
        return sum(line.amount_cents for line in self.lines)


class Journal:
    """Posted entries, validated against a chart of accounts."""

    def __init__(self, chart: Chart) -> None:
        self.chart = chart
        self._entries: list[Entry] = []

    def post(self, entry: Entry) -> Entry:
        if len(entry.lines) < 2:
            raise PostingError(f"{entry.entry_id}: an entry needs two or more lines")
        if any(line.amount_cents == 0 for line in entry.lines):
            raise PostingError(f"{entry.entry_id}: zero-amount line")
        for line in entry.lines:
            if line.account not in self.chart:
                raise PostingError(f"{entry.entry_id}: unknown account {line.account}")
        if entry.net_cents != 0:
            raise PostingError(f"{entry.entry_id}: out of balance by {entry.net_cents}")
        if any(e.entry_id == entry.entry_id for e in self._entries):
            raise PostingError(f"{entry.entry_id}: already posted")
        self._entries.append(entry)
        return entry

    def entries(self) -> list[Entry]:
        return list(self._entries)

    def balance(self, code: str) -> int:
        """Signed balance (debits minus credits) of one account."""
        self.chart.get(code)
        return sum(
            line.amount_cents
            for entry in self._entries
            for line in entry.lines
            if line.account == code
        )
