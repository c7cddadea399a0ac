"""Accounts-receivable aging."""

from __future__ import annotations

from datetime import date
from typing import Iterable

from billing.invoices import Invoice

__all__ = ["BUCKETS", "days_past_due", "bucket_for", "aging_buckets"]

BUCKETS = ("current", "1-30", "31-60", "61-90", "90+")


def days_past_due(invoice: Invoice, today: date) -> int:
    return max(0, (today - invoice.due_on).days)


def bucket_for(days: int) -> str:
    if days <= 0:
        return "current"
    if days <= 30:
        return "1-30"
    if days <= 60:
        return "31-60"
    if days <= 90:
        return "61-90"
    return "90+"


def aging_buckets(invoices: Iterable[Invoice], today: date) -> dict[str, int]:
    """Open balances per bucket; every bucket is present, empty ones hold 0."""
    totals = {name: 0 for name in BUCKETS}
    for invoice in invoices:
        if invoice.balance_due_cents > 0:
            totals[bucket_for(days_past_due(invoice, today))] += invoice.balance_due_cents
    return totals
