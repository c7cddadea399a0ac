"""Payment-processing fees charged by the card acquirer."""

from __future__ import annotations

__all__ = ["CARD_RATE_BP", "CARD_FIXED_CENTS", "card_processing_fee", "net_settlement"]

CARD_RATE_BP = 290  # 2.90 %
CARD_FIXED_CENTS = 30


def card_processing_fee(amount_cents: int) -> int:
    """Percentage part rounded up to the next cent, plus the fixed fee."""
    if amount_cents < 0:
        raise ValueError("card_processing_fee: negative amount")
    if amount_cents == 0:
        return 0
    percentage = -(-amount_cents * CARD_RATE_BP // 10_000)
    return percentage + CARD_FIXED_CENTS


def net_settlement(amount_cents: int) -> int:
    """What the merchant receives after the card fee."""
    return amount_cents - card_processing_fee(amount_cents)
