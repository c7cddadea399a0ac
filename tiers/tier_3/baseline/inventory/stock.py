"""Quantities on hand and the movements that changed them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from inventory.catalog import Catalog

__all__ = ["InsufficientStock", "Movement", "StockBook"]


class InsufficientStock(Exception):
    """Raised when an issue would take stock below zero."""


@dataclass(frozen=True)
class Movement:
    sku: str
    quantity: int  # positive in, negative out
    reason: str


class StockBook:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._on_hand: dict[str, int] = defaultdict(int)
        self._moves: list[Movement] = []

    def _move(self, sku: str, quantity: int, reason: str) -> None:
        self.catalog.get(sku)
        self._on_hand[sku] += quantity
        self._moves.append(Movement(sku, quantity, reason))

    def receive(self, sku: str, quantity: int, reason: str = "receipt") -> None:
        if quantity <= 0:
            raise ValueError(f"{sku}: receive quantity must be positive")
        self._move(sku, quantity, reason)

    def issue(self, sku: str, quantity: int, reason: str = "sale") -> None:
        if quantity <= 0:
            raise ValueError(f"{sku}: issue quantity must be positive")
        have = self.on_hand(sku)
        if quantity > have:
            raise InsufficientStock(f"{sku}: need {quantity}, have {have}")
        self._move(sku, -quantity, reason)

    def on_hand(self, sku: str) -> int:
        self.catalog.get(sku)
        return self._on_hand[sku]

    def movements(self, sku: str | None = None) -> list[Movement]:
        return [m for m in self._moves if sku is None or m.sku == sku]
