from datetime import date

from billing.invoices import Invoice, InvoiceLine
from inventory.catalog import Catalog, Item
from reports.aging import aging_buckets
from reports.export import money_column, to_csv
from reports.sales import best_sellers, units_and_revenue


def _invoices() -> list[Invoice]:
    return [
        Invoice("1", "acme", date(2024, 1, 1), [InvoiceLine("A", 2, 500)], tax_bp=0),
        Invoice("2", "bolt", date(2024, 3, 1), [InvoiceLine("B", 5, 100), InvoiceLine("A", 1, 500)], tax_bp=0),
    ]


def test_aging_buckets():
    buckets = aging_buckets(_invoices(), date(2024, 4, 15))
    assert buckets["61-90"] == 1_000
    assert buckets["1-30"] == 1_000
    assert buckets["current"] == 0


def test_sales_figures():
    catalog = Catalog([Item("A", "Anchor", 300, 900), Item("B", "Bracket", 60, 80)])
    assert units_and_revenue(_invoices()) == {"A": (3, 1_500), "B": (5, 500)}
    assert best_sellers(_invoices(), catalog, 1) == [("B", "Bracket", 5)]


def test_csv_export():
    rows = money_column([{"sku": "A,1", "total": 123_456}], "total")
    assert to_csv(rows, ["sku", "total"]) == 'sku,total\n"A,1","1,234.56"\n'
