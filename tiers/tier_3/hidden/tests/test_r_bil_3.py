# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
from datetime import date

import pytest

from billing.invoices import Invoice, InvoiceLine


def _invoices():
    return [
        Invoice("5", "acme", date(2024, 1, 1), [InvoiceLine("A", 1, 1_000)], terms_days=60, tax_bp=0),
        Invoice("9", "acme", date(2024, 1, 20), [InvoiceLine("A", 1, 300)], tax_bp=0),
        Invoice("10", "acme", date(2024, 1, 20), [InvoiceLine("A", 1, 500)], tax_bp=0),
    ]


def test_oldest_due_date_first_ties_by_number_string():
    from billing.payments import allocate_payment

    invoices = _invoices()
    result = allocate_payment(invoices, 600)
    assert result == {"10": 500, "9": 100}
    assert list(result) == ["10", "9"]
    assert [inv.balance_due_cents for inv in invoices] == [1_000, 200, 0]


def test_unapplied_remainder_reported():
    from billing.payments import allocate_payment

    result = allocate_payment(_invoices(), 2_000)
    assert list(result.items()) == [("10", 500), ("9", 300), ("5", 1_000), ("UNAPPLIED", 200)]


def test_no_unapplied_key_when_used_up():
    from billing.payments import allocate_payment

    assert "UNAPPLIED" not in allocate_payment(_invoices(), 1_800)


def test_settled_invoices_are_skipped_and_partial_balances_used():
    from billing.payments import allocate_payment

    invoices = _invoices()
    invoices[2].paid_cents = 500
    invoices[1].paid_cents = 100
    assert allocate_payment(invoices, 250) == {"9": 200, "5": 50}


def test_amount_must_be_positive():
    from billing.payments import allocate_payment

    with pytest.raises(ValueError) as err:
        allocate_payment(_invoices(), 0)
    assert str(err.value) == "allocate_payment: amount must be positive"


def test_single_customer_only():
    from billing.payments import allocate_payment

    invoices = _invoices() + [Invoice("11", "bolt", date(2024, 1, 2), [InvoiceLine("A", 1, 5)])]
    with pytest.raises(ValueError) as err:
        allocate_payment(invoices, 100)
    assert str(err.value) == "allocate_payment: invoices belong to different customers"
