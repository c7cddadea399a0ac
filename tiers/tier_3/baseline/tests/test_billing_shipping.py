from datetime import date

from billing.invoices import Invoice, InvoiceLine
from billing.payments import apply_payment, receipt_text
from billing.pricing import list_price, quote_line
from inventory.catalog import Catalog, Item
from shipping.parcels import split_parcels
from shipping.rates import shipping_rate


def _catalog() -> Catalog:
    return Catalog([Item("PIPE", "Copper pipe", 1_000, 4_000), Item("CAP", "End cap", 50, 100)])


def test_list_price_and_quote():
    catalog = _catalog()
    assert list_price(catalog.get("PIPE")) == 1_400
    assert quote_line(catalog, "CAP", 3) == ("CAP", 3, 70)


def test_invoice_totals_and_payment():
    invoice = Invoice("100", "acme", date(2024, 4, 1), [InvoiceLine("PIPE", 2, 1_400)])
    assert invoice.total_cents == 2_996
    assert apply_payment(invoice, 3_000) == 4
    assert invoice.balance_due_cents == 0
    assert "invoice 100" in receipt_text(invoice, 2_996)


def test_invoice_entry_balances():
    invoice = Invoice("101", "acme", date(2024, 4, 2), [InvoiceLine("CAP", 10, 70)])
    assert invoice.to_entry().net_cents == 0


def test_parcels_and_rates():
    parcels = split_parcels(_catalog(), {"PIPE": 6}, max_grams=10_000)
    assert parcels == [{"PIPE": 2}, {"PIPE": 2}, {"PIPE": 2}]
    assert shipping_rate(1, 500) == 650
    assert shipping_rate(1, 501) == 770
