"""The catalogue of stocked items."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    unit_cost_cents: int
    weight_grams: int
    active: bool = True

    def __post_init__(self) -> None:
        if self.unit_cost_cents < 0:
            raise ValueError(f"{self.sku}: negative unit cost")
        if self.weight_grams <= 0:
            raise ValueError(f"{self.sku}: weight must be positive")


class Catalog:
    def __init__(self, items: list[Item] | None = None) -> None:
        self._items: dict[str, Item] = {}
        for item in items or []:
            self.add(item)

    def add(self, item: Item) -> None:
        if item.sku in self._items:
            raise ValueError(f"duplicate sku: {item.sku}")
        self._items[item.sku] = item

    def get(self, sku: str) -> Item:
        try:
            return self._items[sku]
        except KeyError:
            raise KeyError(f"unknown sku: {sku}") from None

    def __contains__(self, sku: object) -> bool:
        return sku in self._items

    def __iter__(self) -> Iterator[Item]:
        return iter(sorted(self._items.values(), key=lambda item: item.sku))

    def active(self) -> list[Item]:
        return [item for item in self if item.active]
