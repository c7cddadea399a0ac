# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
from datetime import date, datetime, timezone

import pytest

from billing.invoices import Invoice, InvoiceLine
from billing.payments import apply_payment
from billing.pricing import list_price
from inventory.catalog import Catalog, Item
from inventory.stock import StockBook
from inventory.valuation import CostLayer, fifo_consume, layers_value
from ledger.accounts import Account, Chart
from ledger.journal import Entry, Journal, Line, PostingError
from ledger.money import format_cents, parse_cents, split_evenly
from notify.outbox import Message, Outbox
from notify.templates import placeholders, render
from rbac.audit import AuditTrail, checked
from rbac.policy import Subject, allowed
from rbac.roles import Registry, Role
from reports.aging import aging_buckets, bucket_for
from reports.export import to_csv
from shipping.parcels import order_weight, split_parcels
from shipping.rates import shipping_rate

AT = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def test_parse_cents_variants_and_errors():
    assert parse_cents(" -0.5 ") == -50
    assert parse_cents("7") == 700
    for bad in ("1.234", "abc", "", "1."):
        with pytest.raises(ValueError):
            parse_cents(bad)


def test_format_and_split():
    assert format_cents(5) == "0.05"
    assert format_cents(100_000_000) == "1,000,000.00"
    assert split_evenly(7, 7) == [1] * 7
    with pytest.raises(ValueError):
        split_evenly(7, 0)


def test_account_validation_and_lookup():
    with pytest.raises(ValueError):
        Account("100", "Short", "asset")
    with pytest.raises(ValueError):
        Account("1000", "Odd", "income")
    with pytest.raises(KeyError, match="no such account: 9000"):
        Chart().get("9000")


def test_journal_rejects_duplicates_and_unknown_accounts():
    chart = Chart([Account("1000", "Cash", "asset"), Account("3000", "Capital", "equity")])
    journal = Journal(chart)
    entry = Entry("J1", date(2024, 1, 1), "open", (Line("1000", 10), Line("3000", -10)))
    journal.post(entry)
    with pytest.raises(PostingError, match="already posted"):
        journal.post(entry)
    with pytest.raises(PostingError, match="unknown account 2000"):
        journal.post(Entry("J2", date(2024, 1, 1), "x", (Line("1000", 10), Line("2000", -10))))
    assert journal.balance("3000") == -10


def test_stock_movements_and_unknown_sku():
    book = StockBook(Catalog([Item("N", "Nail", 1, 2)]))
    book.receive("N", 5)
    book.issue("N", 5, reason="scrap")
    assert [(m.quantity, m.reason) for m in book.movements("N")] == [(5, "receipt"), (-5, "scrap")]
    with pytest.raises(KeyError, match="unknown sku: Q"):
        book.receive("Q", 1)


def test_fifo_and_layer_value():
    layers = [CostLayer(2, 50), CostLayer(2, 70)]
    assert layers_value(layers) == 240
    assert fifo_consume(layers, 4) == (240, [])
    with pytest.raises(ValueError):
        fifo_consume(layers, 5)


def test_list_price_rounds_half_up():
    assert list_price(Item("S", "Screw", 5, 1), markup_bp=1_000) == 6
    assert list_price(Item("S", "Screw", 15, 1), markup_bp=1_000) == 17


def test_invoice_tax_due_date_and_overpayment():
    invoice = Invoice("9", "acme", date(2024, 2, 1), [InvoiceLine("X", 3, 333)], terms_days=14)
    assert invoice.tax_cents == 70
    assert invoice.due_on == date(2024, 2, 15)
    assert apply_payment(invoice, 2_000) == 2_000 - 1_069
    with pytest.raises(ValueError):
        apply_payment(invoice, 0)


def test_parcels_respect_tare_and_reject_heavy_items():
    catalog = Catalog([Item("P", "Plate", 1, 1_000), Item("H", "Heavy", 1, 19_900)])
    assert order_weight(catalog, {"P": 3}) == 3_000
    assert split_parcels(catalog, {"P": 3}, max_grams=2_150) == [{"P": 2}, {"P": 1}]
    with pytest.raises(ValueError):
        split_parcels(catalog, {"H": 1})


def test_shipping_rate_steps_and_unknown_zone():
    assert shipping_rate(5, 1_001) == 1_020 + 2 * 230
    with pytest.raises(ValueError):
        shipping_rate(9, 100)


def test_templates_placeholders_once_in_order():
    assert placeholders("{b} {a} {b} {{c}}") == ["b", "a"]
    assert render("{n}!", {"n": 3}) == "3!"


def test_outbox_rejects_unknown_channel_and_id():
    with pytest.raises(ValueError):
        Message("fax", "x", "s", "b")
    with pytest.raises(KeyError):
        Outbox().mark_sent(1)


def test_role_cycles_and_unknown_roles():
    registry = Registry([Role("a", frozenset({"p"}), ("b",)), Role("b", frozenset({"q"}), ("a",))])
    assert registry.effective_grants("a") == frozenset({"p", "q"})
    assert allowed(registry, Subject("u", ("ghost", "b")), "p")
    with pytest.raises(KeyError):
        registry.effective_grants("ghost")


def test_audit_trail_sequence_and_no_alert_when_allowed():
    outbox = Outbox()
    trail = AuditTrail(outbox, alert_to="sec@x")
    registry = Registry([Role("r", frozenset({"p"}))])
    assert checked(trail, registry, Subject("u", ("r",)), "p", AT)
    assert not checked(trail, registry, Subject("u", ("r",)), "q", AT)
    assert [d.seq for d in trail.decisions("u")] == [1, 2]
    assert [e.message.to for e in outbox.pending()] == ["sec@x"]


def test_aging_bucket_edges():
    assert [bucket_for(d) for d in (0, 1, 30, 31, 60, 61, 90, 91)] == [
        "current", "1-30", "1-30", "31-60", "31-60", "61-90", "61-90", "90+",
    ]
    paid = Invoice("P", "acme", date(2024, 1, 1), [InvoiceLine("X", 1, 100)], paid_cents=107)
    assert aging_buckets([paid], date(2024, 6, 1))["90+"] == 0


def test_csv_quotes_and_missing_values():
    assert to_csv([{"a": 'say "hi"'}], ["a", "b"]) == 'a,b\n"say ""hi""",\n'
    assert to_csv([], ["x"], delimiter=";") == "x\n"
