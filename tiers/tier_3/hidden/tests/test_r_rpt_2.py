# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
from datetime import date

import pytest

from billing.invoices import Invoice, InvoiceLine
from inventory.catalog import Catalog, Item


def _catalog() -> Catalog:
    return Catalog(
        [
            Item("A", "Anchor", 300, 10),
            Item("B", "Bracket", 60, 10),
            Item("C", "Cleat", 100, 10),
            Item("D", "Decal", 50, 10),
        ]
    )


def _invoices():
    return [
        Invoice("1", "acme", date(2024, 1, 1), [InvoiceLine("A", 2, 500), InvoiceLine("B", 5, 100)]),
        Invoice("2", "bolt", date(2024, 1, 2), [InvoiceLine("A", 1, 500), InvoiceLine("C", 3, 90), InvoiceLine("D", 4, 0)]),
    ]


def test_rows_worst_margin_first_ties_by_sku():
    from reports.sales import gross_margin

    assert gross_margin(_invoices(), _catalog()) == [
        ("C", 270, 300, -1_112),
        ("A", 1_500, 900, 4_000),
        ("B", 500, 300, 4_000),
    ]


def test_margin_uses_floor_division():
    from reports.sales import gross_margin

    invoices = [Invoice("3", "acme", date(2024, 1, 3), [InvoiceLine("C", 1, 175)])]
    assert gross_margin(invoices, _catalog()) == [("C", 175, 100, 4_285)]


def test_zero_revenue_skus_left_out():
    from reports.sales import gross_margin

    assert "D" not in [row[0] for row in gross_margin(_invoices(), _catalog())]


def test_revenue_excludes_tax():
    from reports.sales import gross_margin

    invoices = [Invoice("4", "acme", date(2024, 1, 4), [InvoiceLine("B", 2, 100)], tax_bp=2_000)]
    assert gross_margin(invoices, _catalog()) == [("B", 200, 120, 4_000)]


def test_unknown_sku():
    from reports.sales import gross_margin

    invoices = [Invoice("5", "acme", date(2024, 1, 5), [InvoiceLine("Q", 1, 100)])]
    with pytest.raises(KeyError):
        gross_margin(invoices, _catalog())
