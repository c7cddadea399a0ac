"""Invoicing, sales tax and payment fees."""

from billing.invoices import Invoice, LineItem
from billing.tax import compute_tax

__all__ = ["Invoice", "LineItem", "compute_tax"]
