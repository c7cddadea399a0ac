"""List prices derived from catalogue costs."""

from __future__ import annotations

from inventory.catalog import Catalog, Item

__all__ = ["DEFAULT_MARKUP_BP", "list_price", "quote_line"]

DEFAULT_MARKUP_BP = 4_000  # 40 % over cost


def list_price(item: Item, *, markup_bp: int = DEFAULT_MARKUP_BP) -> int:
    """Unit cost plus markup, rounded half up to a whole cent."""
    if markup_bp < 0:
        raise ValueError("list_price: negative markup")
    scaled = item.unit_cost_cents * (10_000 + markup_bp)
    return (scaled + 5_000) // 10_000


def quote_line(catalog: Catalog, sku: str, quantity: int) -> tuple[str, int, int]:
    """``(sku, quantity, unit price)`` for an active catalogue item."""
    item = catalog.get(sku)
    if not item.active:
        raise ValueError(f"{sku} is discontinued")
    if quantity < 1:
        raise ValueError(f"{sku}: quantity must be at least 1")
    return sku, quantity, list_price(item)
