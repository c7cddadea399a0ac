"""Journal entries made of balanced debit/credit postings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Iterable

__all__ = ["Posting", "JournalEntry", "UnbalancedEntryError", "make_entry"]


class UnbalancedEntryError(ValueError):
    """Raised when an entry's debits and credits do not match."""


@dataclass(frozen=True)
class Posting:
    account: str
    debit_cents: int = 0
    credit_cents: int = 0

    def __post_init__(self) -> None:
        if self.debit_cents < 0 or self.credit_cents < 0:
            raise ValueError("posting amounts must be non-negative")
        if (self.debit_cents == 0) == (self.credit_cents == 0):
            raise ValueError("a posting needs exactly one non-zero side")


@dataclass(frozen=True)
class JournalEntry:
    entry_id: str
    on: date
    memo: str
    postings: tuple[Posting, ...]

    @property
    def total_debits(self) -> int:
        return sum(p.debit_cents for p in self.postings)

    @property
    def total_credits(self) -> int:
        return sum(p.credit_cents for p in self.postings)

    @property
    def is_balanced(self) -> bool:
        return self.total_debits == self.total_credits


def make_entry(
    entry_id: str, on: date, memo: str, postings: Iterable[Posting]
) -> JournalEntry:
    """Build an entry, refusing ones that are unbalanced or too small."""
    entry = JournalEntry(entry_id, on, memo, tuple(postings))
    if len(entry.postings) < 2:
        raise UnbalancedEntryError(f"{entry_id}: needs at least two postings")
    if not entry.is_balanced:
        raise UnbalancedEntryError(
            f"{entry_id}: debits {entry.total_debits} != credits {entry.total_credits}"
        )
    return entry
