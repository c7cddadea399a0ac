"""Parcel building and carrier rates."""

from shipping.parcels import TARE_GRAMS, order_weight, split_parcels
from shipping.rates import ZONE_RATES, shipping_rate

__all__ = ["TARE_GRAMS", "ZONE_RATES", "order_weight", "shipping_rate", "split_parcels"]
