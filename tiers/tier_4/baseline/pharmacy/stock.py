"""Stock on hand, received and dispensed."""

from __future__ import annotations

from collections import defaultdict

__all__ = ["OutOfStock", "StockLedger"]


class OutOfStock(Exception):
    """Raised when a dispense would take stock below zero."""


class StockLedger:
    def __init__(self) -> None:
        self._on_hand: dict[str, int] = defaultdict(int)
        self._moves: list[tuple[str, int]] = []

    def receive(self, code: str, quantity: int) -> None:
        if quantity <= 0:
            raise ValueError("receive: quantity must be positive")
        self._on_hand[code] += quantity
        self._moves.append((code, quantity))

    def dispense(self, code: str, quantity: int) -> None:
        if quantity <= 0:
            raise ValueError("dispense: quantity must be positive")
        if self._on_hand[code] < quantity:
            raise OutOfStock(f"{code}: {self._on_hand[code]} on hand, {quantity} requested")
        self._on_hand[code] -= quantity
        self._moves.append((code, -quantity))

    def on_hand(self, code: str) -> int:
        return self._on_hand.get(code, 0)

    def codes(self) -> list[str]:
        """Every code that has ever been received, sorted."""
        return sorted({code for code, qty in self._moves if qty > 0})

    def moves(self, code: str) -> list[int]:
        return [qty for c, qty in self._moves if c == code]
