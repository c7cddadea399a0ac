"""Procedure codes and their fees, in cents."""

from __future__ import annotations

__all__ = ["FEES", "fee_for", "describe"]

FEES: dict[str, tuple[str, int]] = {
    "C100": ("Standard consultation", 6_500),
    "C110": ("Long consultation", 11_000),
    "C120": ("Follow-up visit", 4_000),
    "P200": ("Minor procedure", 15_000),
    "P210": ("Wound dressing", 3_500),
    "V300": ("Vaccination", 2_800),
    "D400": ("Dispensing fee", 900),
    "L500": ("Venepuncture", 1_255),
}


def fee_for(code: str) -> int:
    try:
        return FEES[code][1]
    except KeyError:
        raise KeyError(f"unknown procedure code: {code}") from None


def describe(code: str) -> str:
    if code not in FEES:
        raise KeyError(f"unknown procedure code: {code}")
    return f"{code} {FEES[code][0]}"
