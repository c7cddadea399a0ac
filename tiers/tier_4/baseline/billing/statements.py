"""Patient statements: charges, payments and the balance due."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from billing.charges import Charge

__all__ = ["Payment", "Statement"]


@dataclass(frozen=True)
class Payment:
    patient_id: str
    cents: int
    on: date


@dataclass
class Statement:
    patient_id: str
    charges: list[Charge] = field(default_factory=list)
    payments: list[Payment] = field(default_factory=list)

    def add_charge(self, charge: Charge) -> None:
        if charge.patient_id != self.patient_id:
            raise ValueError(f"charge belongs to {charge.patient_id}, not {self.patient_id}")
        self.charges.append(charge)

    def add_payment(self, payment: Payment) -> None:
        if payment.patient_id != self.patient_id:
            raise ValueError(f"payment belongs to {payment.patient_id}, not {self.patient_id}")
        self.payments.append(payment)

    @property
    def charged_cents(self) -> int:
        return sum(c.cents for c in self.charges)

    @property
    def paid_cents(self) -> int:
        return sum(p.cents for p in self.payments)

    @property
    def balance_cents(self) -> int:
        return self.charged_cents - self.paid_cents
