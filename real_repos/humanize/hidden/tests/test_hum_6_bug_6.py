# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""intword() must stay in decillions between 10**36 and a googol."""
from __future__ import annotations

import humanize


def test_intword_thousand_decillion() -> None:
    assert humanize.intword(10**36) == "1000.0 decillion"
    assert humanize.intword(999_960 * 10**30) == "1000.0 decillion"


def test_intword_thousand_decillion_with_custom_format() -> None:
    assert humanize.intword(1_000_400 * 10**30, "%.0f") == "1000 decillion"
