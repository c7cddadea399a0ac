"""Lab results and their flags."""

from __future__ import annotations

from dataclasses import dataclass

from labs.ranges import RefRange

__all__ = ["Result", "flag", "flag_result"]


@dataclass(frozen=True)
class Result:
    order_id: str
    test_code: str
    value: float
    unit: str


def flag(value: float, rng: RefRange) -> str:
    """'L' below the range, 'H' above it, 'N' inside it (both ends included)."""
    if value < rng.low:
        return "L"
    if value > rng.high:
        return "H"
    return "N"


def flag_result(result: Result, rng: RefRange) -> str:
    if result.test_code != rng.test_code:
        raise ValueError(f"{result.order_id}: range is for {rng.test_code}, not {result.test_code}")
    if result.unit != rng.unit:
        raise ValueError(f"{result.order_id}: unit {result.unit} does not match {rng.unit}")
    return flag(result.value, rng)
