# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
from datetime import date

import pytest

from billing.invoices import Invoice, InvoiceLine

TODAY = date(2024, 4, 30)


def _inv(number, issued, amount, paid=0):
    return Invoice(number, "acme", issued, [InvoiceLine("A", 1, amount)], tax_bp=0, paid_cents=paid)


def _book():
    return [
        _inv("A", date(2024, 1, 31), 4_000),
        _inv("B", date(2024, 2, 1), 10_000, paid=9_000),
        _inv("C", date(2024, 4, 30), 30_000, paid=30_000),
        _inv("D", date(2024, 5, 1), 50_000),
    ]


def test_dso_rounds_half_up_to_one_decimal():
    from reports.aging import days_sales_outstanding

    result = days_sales_outstanding(_book(), TODAY)
    assert isinstance(result, float)
    assert result == 11.3


def test_period_start_is_exclusive():
    from reports.aging import days_sales_outstanding

    assert days_sales_outstanding(_book()[:2], TODAY) == 45.0


def test_custom_period():
    from reports.aging import days_sales_outstanding

    assert days_sales_outstanding(_book(), TODAY, period_days=30) == 5.0


def test_overpaid_invoices_do_not_reduce_receivables():
    from reports.aging import days_sales_outstanding

    book = _book() + [_inv("E", date(2024, 4, 1), 5_000, paid=6_000)]
    assert days_sales_outstanding(book, TODAY) == 10.0


def test_no_sales_in_period():
    from reports.aging import days_sales_outstanding

    assert days_sales_outstanding([], TODAY) == 0.0
    assert days_sales_outstanding([_inv("P", date(2023, 1, 1), 100, paid=100)], TODAY) == 0.0
    with pytest.raises(ValueError) as err:
        days_sales_outstanding([_inv("Q", date(2023, 1, 1), 100)], TODAY)
    assert str(err.value) == "days_sales_outstanding: no sales in period"


def test_period_days_must_be_positive():
    from reports.aging import days_sales_outstanding

    with pytest.raises(ValueError) as err:
        days_sales_outstanding(_book(), TODAY, period_days=0)
    assert str(err.value) == "days_sales_outstanding: period_days must be at least 1"
