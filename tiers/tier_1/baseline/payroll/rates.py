"""Hourly pay with weekly overtime."""

from __future__ import annotations

__all__ = ["OVERTIME_DEN", "OVERTIME_NUM", "REGULAR_WEEK_MINUTES", "round_half_up", "weekly_pay"]

REGULAR_WEEK_MINUTES = 2400  # 40 hours
OVERTIME_NUM = 3
OVERTIME_DEN = 2


def round_half_up(numerator: int, denominator: int) -> int:
    """``numerator / denominator`` rounded to the nearest integer, halves up."""
    raise NotImplementedError


def weekly_pay(paid_minutes: int, hourly_rate_cents: int) -> int:
    """Gross pay for one week's paid minutes, overtime included."""
    raise NotImplementedError
