"""Carrier rate card: a price for the first 500 g and for every further 500 g."""

from __future__ import annotations

__all__ = ["ZONE_RATES", "STEP_GRAMS", "shipping_rate"]

STEP_GRAMS = 500

# zone -> (first step, each further step), in cents
ZONE_RATES: dict[int, tuple[int, int]] = {
    1: (650, 120),
    2: (720, 140),
    3: (810, 165),
    4: (905, 190),
    5: (1_020, 230),
}


def shipping_rate(zone: int, grams: int) -> int:
    """Price of one parcel; every started 500 g step is charged."""
    if zone not in ZONE_RATES:
        raise ValueError(f"unknown zone: {zone}")
    if grams <= 0:
        raise ValueError("shipping_rate: weight must be positive")
    first, further = ZONE_RATES[zone]
    steps = -(-grams // STEP_GRAMS)
    return first + (steps - 1) * further
