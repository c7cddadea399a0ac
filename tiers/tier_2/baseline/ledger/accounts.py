"""Chart of accounts."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterator


class AccountKind(str, Enum):
    ASSET = "asset"
    LIABILITY = "liability"
    EQUITY = "equity"
    INCOME = "income"
    EXPENSE = "expense"


_DEBIT_NORMAL = {AccountKind.ASSET, AccountKind.EXPENSE}


@dataclass(frozen=True)
class Account:
    code: str
    name: str
    kind: AccountKind

    @property
    def normal_side(self) -> str:
        """'debit' for assets and expenses, 'credit' for everything else."""
        return "debit" if self.kind in _DEBIT_NORMAL else "credit"


class ChartOfAccounts:
    """A registry of accounts keyed by their code."""

    def __init__(self, accounts: list[Account] | None = None) -> None:
        self._accounts: dict[str, Account] = {}
        for account in accounts or []:
            self.add(account)

    def add(self, account: Account) -> None:
        if account.code in self._accounts:
            raise ValueError(f"duplicate account code: {account.code}")
        self._accounts[account.code] = account

    def get(self, code: str) -> Account:
        try:
            return self._accounts[code]
        except KeyError:
            raise KeyError(f"unknown account: {code}") from None

    def __contains__(self, code: object) -> bool:
        return code in self._accounts

    def __iter__(self) -> Iterator[Account]:
        return iter(sorted(self._accounts.values(), key=lambda a: a.code))

    def __len__(self) -> int:
        return len(self._accounts)

    def by_kind(self, kind: AccountKind) -> list[Account]:
        return [a for a in self if a.kind is kind]
