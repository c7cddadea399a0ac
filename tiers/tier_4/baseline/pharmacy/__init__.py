"""The drug formulary, dose calculations and stock."""

from pharmacy.formulary import Drug, Formulary
from pharmacy.stock import OutOfStock, StockLedger

__all__ = ["Drug", "Formulary", "OutOfStock", "StockLedger"]
