"""Sales figures per SKU and per customer."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from billing.invoices import Invoice
from inventory.catalog import Catalog

__all__ = ["units_and_revenue", "revenue_by_customer", "best_sellers"]


def units_and_revenue(invoices: Iterable[Invoice]) -> dict[str, tuple[int, int]]:
    """sku -> (units sold, revenue before tax), in SKU order."""
    units: dict[str, int] = defaultdict(int)
    revenue: dict[str, int] = defaultdict(int)
    for invoice in invoices:
        for line in invoice.lines:
            units[line.sku] += line.quantity
            revenue[line.sku] += line.amount_cents
    return {sku: (units[sku], revenue[sku]) for sku in sorted(units)}


def revenue_by_customer(invoices: Iterable[Invoice]) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for invoice in invoices:
        totals[invoice.customer] += invoice.subtotal_cents
    return dict(totals)


def best_sellers(invoices: Iterable[Invoice], catalog: Catalog, n: int = 3) -> list[tuple[str, str, int]]:
    """``(sku, item name, units)`` of the ``n`` SKUs with the most units sold."""
    ranked = sorted(units_and_revenue(invoices).items(), key=lambda kv: (-kv[1][0], kv[0]))
    return [(sku, catalog.get(sku).name, units) for sku, (units, _) in ranked[:n]]
