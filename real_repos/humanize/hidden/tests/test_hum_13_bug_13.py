# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""fractional() must print a negative mixed number with a single minus sign."""
from __future__ import annotations

import humanize


def test_fractional_negative_mixed_numbers() -> None:
    assert humanize.fractional(-1.3) == "-1 3/10"
    assert humanize.fractional(-4.75) == "-4 3/4"
    assert humanize.fractional("-2.5") == "-2 1/2"
