# SPECSNAP-CANARY tier_2 7b1e5c2a-4f0d-4c8e-9a61-2d9f3e8b0c47
from datetime import date

from billing.invoices import Invoice, LineItem


def _invoice(due_days: int = 30) -> Invoice:
    return Invoice("C1", "cust-3", date(2024, 1, 10), [LineItem("S", "Svc", 1, 900)], due_days=due_days)


def test_not_overdue_on_due_date():
    assert _invoice().is_overdue(date(2024, 2, 9)) is False


def test_overdue_the_day_after_due_date():
    assert _invoice().is_overdue(date(2024, 2, 10)) is True


def test_not_overdue_before_due_date():
    assert _invoice().is_overdue(date(2024, 1, 10)) is False


def test_custom_due_days_respected():
    invoice = _invoice(due_days=0)
    assert invoice.is_overdue(date(2024, 1, 10)) is False
    assert invoice.is_overdue(date(2024, 1, 11)) is True
