# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""intcomma() must honour ndigits=0 (round to a whole number)."""
from __future__ import annotations

import humanize


def test_intcomma_zero_digits_rounds_to_whole_number() -> None:
    assert humanize.intcomma(1234.7, 0) == "1,235"
    assert humanize.intcomma(-98765.4321, 0) == "-98,765"
    assert humanize.intcomma(7000000.25, 0) == "7,000,000"


def test_intcomma_zero_digits_drops_trailing_point_zero() -> None:
    assert humanize.intcomma(123456.0, 0) == "123,456"
    assert humanize.intcomma(0.4, 0) == "0"
