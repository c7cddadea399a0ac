"""Sales tax on invoice subtotals.

Tax is marginal: the first 2,500 cents of a subtotal are taxed at the base
rate, anything above that at the higher rate. Rates are in basis points and
the result is rounded half up to a whole cent.
"""

from __future__ import annotations

TAX_THRESHOLD_CENTS = 2_500
BASE_RATE_BP = 500  # 5.00 %
HIGH_RATE_BP = 800  # 8.00 %


def compute_tax(amount_cents: int) -> int:
    """Tax due on ``amount_cents``, in whole cents."""
    if amount_cents < 0:
        raise ValueError("compute_tax: negative amount")
    if amount_cents <= TAX_THRESHOLD_CENTS:
        scaled = amount_cents * BASE_RATE_BP
    else:
        scaled = (
            TAX_THRESHOLD_CENTS * BASE_RATE_BP
            + (amount_cents - TAX_THRESHOLD_CENTS) * HIGH_RATE_BP
        )
    raw_tax = (scaled + 5_000) // 10_000
    return raw_tax
