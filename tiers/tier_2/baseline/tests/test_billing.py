from datetime import date

from billing.fees import card_processing_fee
from billing.invoices import Invoice, LineItem
from billing.posting import invoice_to_entry
from billing.tax import compute_tax


def test_small_amount_tax():
    assert compute_tax(0) == 0
    assert compute_tax(1_000) == 50


def test_invoice_totals_and_due_date():
    invoice = Invoice("A1", "cust-1", date(2024, 5, 1))
    invoice.add_line(LineItem("SKU-1", "Widget", 3, 400))
    assert invoice.subtotal_cents == 1_200
    assert invoice.total_cents == 1_260
    assert invoice.due_on == date(2024, 5, 31)


def test_invoice_posts_a_balanced_entry():
    invoice = Invoice("A2", "cust-2", date(2024, 6, 1), [LineItem("S", "Svc", 1, 800)])
    entry = invoice_to_entry(invoice)
    assert entry.is_balanced
    assert entry.total_debits == 840


def test_card_fee_includes_fixed_part():
    assert card_processing_fee(0) == 0
    assert card_processing_fee(1_000) == 59
