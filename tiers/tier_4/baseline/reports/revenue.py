"""Revenue summaries over charges."""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from typing import Iterable

from billing.charges import Charge
from billing.fee_schedule import FEES

__all__ = ["revenue_by_code", "daily_totals", "fee_schedule_codes"]


def revenue_by_code(charges: Iterable[Charge]) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for charge in charges:
        totals[charge.code] += charge.cents
    return dict(sorted(totals.items()))


def daily_totals(charges: Iterable[Charge]) -> list[tuple[date, int]]:
    """Total charged per day, oldest day first."""
    totals: dict[date, int] = defaultdict(int)
    for charge in charges:
        totals[charge.on] += charge.cents
    return sorted(totals.items())


def fee_schedule_codes() -> list[str]:
    return sorted(FEES)
