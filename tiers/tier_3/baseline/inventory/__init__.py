"""Item catalogue, stock on hand and inventory costing."""

from inventory.catalog import Catalog, Item
from inventory.stock import InsufficientStock, Movement, StockBook

__all__ = ["Catalog", "InsufficientStock", "Item", "Movement", "StockBook"]
