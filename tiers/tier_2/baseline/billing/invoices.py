"""Invoices and their line items."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

from billing.tax import compute_tax

__all__ = ["LineItem", "Invoice"]


@dataclass(frozen=True)
class LineItem:
    sku: str
    description: str
    quantity: int
    unit_price_cents: int

    def __post_init__(self) -> None:
        if self.quantity <= 0:
            raise ValueError(f"{self.sku}: quantity must be positive")
        if self.unit_price_cents < 0:
            raise ValueError(f"{self.sku}: unit price must be non-negative")

    @property
    def amount_cents(self) -> int:
        return self.quantity * self.unit_price_cents


@dataclass
class Invoice:
    invoice_id: str
    customer_id: str
    issued_on: date
    lines: list[LineItem] = field(default_factory=list)
    due_days: int = 30

    def add_line(self, line: LineItem) -> None:
        self.lines.append(line)

    @property
    def subtotal_cents(self) -> int:
        return sum(line.amount_cents for line in self.lines)

    @property
    def tax_cents(self) -> int:
        return compute_tax(self.subtotal_cents)

    @property
    def total_cents(self) -> int:
        return self.subtotal_cents + self.tax_cents

    @property
    def due_on(self) -> date:
        return self.issued_on + timedelta(days=self.due_days)
