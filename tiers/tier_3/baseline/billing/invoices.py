"""Customer invoices and their ledger entries."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

from ledger.journal import Entry, Line

__all__ = ["InvoiceLine", "Invoice", "RECEIVABLES", "SALES", "SALES_TAX"]

RECEIVABLES = "1100"
SALES = "4000"
SALES_TAX = "2200"


@dataclass(frozen=True)
class InvoiceLine:
    sku: str
    quantity: int
    unit_price_cents: int

    @property
    def amount_cents(self) -> int:
        return self.quantity * self.unit_price_cents


@dataclass
class Invoice:
    number: str
    customer: str
    issued_on: date
    lines: list[InvoiceLine] = field(default_factory=list)
    terms_days: int = 30
    tax_bp: int = 700
    paid_cents: int = 0

    @property
    def subtotal_cents(self) -> int:
        return sum(line.amount_cents for line in self.lines)

    @property
    def tax_cents(self) -> int:
        return (self.subtotal_cents * self.tax_bp + 5_000) // 10_000

    @property
    def total_cents(self) -> int:
        return self.subtotal_cents + self.tax_cents

    @property
    def balance_due_cents(self) -> int:
        return self.total_cents - self.paid_cents

    @property
    def due_on(self) -> date:
        return self.issued_on + timedelta(days=self.terms_days)

    def to_entry(self) -> Entry:
        lines = [Line(RECEIVABLES, self.total_cents), Line(SALES, -self.subtotal_cents)]
        if self.tax_cents:
            lines.append(Line(SALES_TAX, -self.tax_cents))
        return Entry(f"INV-{self.number}", self.issued_on, f"Invoice {self.number}", tuple(lines))
