"""The chart of accounts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

KINDS = ("asset", "liability", "equity", "revenue", "expense")


@dataclass(frozen=True)
class Account:
    code: str
    name: str
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown account kind: {self.kind}")
        if len(self.code) != 4 or not self.code.isdigit():
            raise ValueError(f"account code must be four digits: {self.code!r}")

    @property
    def debit_normal(self) -> bool:
        return self.kind in ("asset", "expense")


class Chart:
    """Accounts keyed by code; iteration is in code order."""

    def __init__(self, accounts: list[Account] | None = None) -> None:
        self._by_code: dict[str, Account] = {}
        for account in accounts or []:
            self.add(account)

    def add(self, account: Account) -> None:
        if account.code in self._by_code:
            raise ValueError(f"account {account.code} already exists")
        self._by_code[account.code] = account

    def get(self, code: str) -> Account:
        if code not in self._by_code:
            raise KeyError(f"no such account: {code}")
        return self._by_code[code]

    def __contains__(self, code: object) -> bool:
        return code in self._by_code

    def __iter__(self) -> Iterator[Account]:
        return iter([self._by_code[c] for c in sorted(self._by_code)])

    def __len__(self) -> int:
        return len(self._by_code)
