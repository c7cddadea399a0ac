"""Recording customer payments against invoices."""

from __future__ import annotations

from billing.invoices import Invoice
from notify.templates import render

__all__ = ["RECEIPT_TEMPLATE", "apply_payment", "receipt_text"]

RECEIPT_TEMPLATE = "Thank you {customer}: {amount} cents received for invoice {number}."


def apply_payment(invoice: Invoice, amount_cents: int) -> int:
    """Apply up to the balance due; returns the part that was not needed."""
    if amount_cents <= 0:
        raise ValueError("apply_payment: amount must be positive")
    used = min(amount_cents, max(invoice.balance_due_cents, 0))
    invoice.paid_cents += used
    return amount_cents - used


def receipt_text(invoice: Invoice, amount_cents: int) -> str:
    return render(
        RECEIPT_TEMPLATE,
        {"customer": invoice.customer, "amount": amount_cents, "number": invoice.number},
    )
