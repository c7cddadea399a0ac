"""Turning invoices into ledger journal entries."""

from __future__ import annotations

from billing.invoices import Invoice
from ledger.journal import JournalEntry, Posting, make_entry

RECEIVABLE = "1200"
REVENUE = "4000"
TAX_PAYABLE = "2100"


def invoice_to_entry(
    invoice: Invoice,
    *,
    receivable: str = RECEIVABLE,
    revenue: str = REVENUE,
    tax_payable: str = TAX_PAYABLE,
) -> JournalEntry:
    """Debit receivables with the total, credit revenue and tax payable."""
    postings = [
        Posting(receivable, debit_cents=invoice.total_cents),
        Posting(revenue, credit_cents=invoice.subtotal_cents),
    ]
    if invoice.tax_cents:
        postings.append(Posting(tax_payable, credit_cents=invoice.tax_cents))
    return make_entry(
        f"INV-{invoice.invoice_id}",
        invoice.issued_on,
        f"Invoice {invoice.invoice_id} to {invoice.customer_id}",
        postings,
    )
