"""Turning order lines into parcels."""

from __future__ import annotations

from inventory.catalog import Catalog

__all__ = ["TARE_GRAMS", "MAX_PARCEL_GRAMS", "order_weight", "split_parcels"]

TARE_GRAMS = 150  # box and filling
MAX_PARCEL_GRAMS = 20_000


def order_weight(catalog: Catalog, lines: dict[str, int]) -> int:
    """Weight of all units in ``lines`` (sku -> quantity), without packaging."""
    return sum(catalog.get(sku).weight_grams * qty for sku, qty in lines.items())


def split_parcels(
    catalog: Catalog, lines: dict[str, int], *, max_grams: int = MAX_PARCEL_GRAMS
) -> list[dict[str, int]]:
    """Fill parcels one after another in line order, opening a new one when full."""
    parcels: list[dict[str, int]] = []
    current: dict[str, int] = {}
    weight = TARE_GRAMS
    for sku, qty in lines.items():
        unit = catalog.get(sku).weight_grams
        if unit + TARE_GRAMS > max_grams:
            raise ValueError(f"{sku} does not fit in a parcel")
        for _ in range(qty):
            if weight + unit > max_grams:
                parcels.append(current)
                current, weight = {}, TARE_GRAMS
            current[sku] = current.get(sku, 0) + 1
            weight += unit
    if current:
        parcels.append(current)
    return parcels
