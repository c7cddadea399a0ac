"""Quotes, invoices and customer payments."""

from billing.invoices import Invoice, InvoiceLine
from billing.pricing import list_price, quote_line

__all__ = ["Invoice", "InvoiceLine", "list_price", "quote_line"]
