# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
from datetime import date

from billing.invoices import Invoice, InvoiceLine


def _invoice(unit: int = 10_000) -> Invoice:
    # due on 2024-01-31
    return Invoice("L1", "acme", date(2024, 1, 1), [InvoiceLine("X", 1, unit)], tax_bp=0)


def test_no_fee_through_the_last_grace_day():
    inv = _invoice()
    assert inv.late_fee(date(2024, 1, 31)) == 0
    assert inv.late_fee(date(2024, 2, 10)) == 0


def test_first_month_after_grace():
    assert _invoice().late_fee(date(2024, 2, 11)) == 150


def test_months_counted_from_due_date_and_rounded_up():
    inv = _invoice()
    assert inv.late_fee(date(2024, 3, 1)) == 150
    assert inv.late_fee(date(2024, 3, 2)) == 300


def test_fee_rounds_half_up():
    assert _invoice(1_100).late_fee(date(2024, 2, 20)) == 17


def test_fee_is_capped():
    inv = _invoice(1_000_000)
    assert inv.late_fee(date(2024, 2, 20)) == 7_500
    assert inv.late_fee(date(2024, 2, 20), cap_cents=20_000) == 15_000


def test_based_on_balance_due():
    inv = _invoice()
    inv.paid_cents = 4_000
    assert inv.late_fee(date(2024, 2, 20)) == 90
    inv.paid_cents = 10_000
    assert inv.late_fee(date(2024, 6, 1)) == 0


def test_custom_grace_and_rate():
    inv = _invoice()
    assert inv.late_fee(date(2024, 2, 1), grace_days=0, monthly_bp=200) == 200
