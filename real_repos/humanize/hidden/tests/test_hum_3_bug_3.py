# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""intcomma() must accept numeric strings together with ndigits."""
from __future__ import annotations

import humanize


def test_intcomma_string_with_ndigits() -> None:
    assert humanize.intcomma("9876543.21", 1) == "9,876,543.2"
    assert humanize.intcomma("2500", 2) == "2,500.00"
    assert humanize.intcomma("-1234.5678", 3) == "-1,234.568"


def test_intcomma_string_with_separators_and_ndigits() -> None:
    assert humanize.intcomma("1,000,000.456", 2) == "1,000,000.46"
