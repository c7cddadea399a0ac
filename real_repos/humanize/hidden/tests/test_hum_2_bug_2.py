# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""intword() must scale negative numbers like positive ones, keeping the sign."""
from __future__ import annotations

import humanize


def test_intword_negative_millions_and_billions() -> None:
    assert humanize.intword(-1_200_000) == "-1.2 million"
    assert humanize.intword("-3000000000") == "-3.0 billion"
    assert humanize.intword(-45_600) == "-45.6 thousand"


def test_intword_negative_rounding_up_to_next_power() -> None:
    assert humanize.intword(-999_999_999) == "-1.0 billion"
    assert humanize.intword(-7_250_000_000_000, "%.2f") == "-7.25 trillion"
