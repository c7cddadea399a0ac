# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""naturalsize() must move to the next unit when rounding reaches the base."""
from __future__ import annotations

import humanize


def test_naturalsize_decimal_rounds_into_next_unit() -> None:
    assert humanize.naturalsize(999_999) == "1.0 MB"
    assert humanize.naturalsize(999_999_999_999) == "1.0 TB"
    assert humanize.naturalsize(-999_999) == "-1.0 MB"


def test_naturalsize_binary_and_gnu_round_into_next_unit() -> None:
    assert humanize.naturalsize(1024**2 - 1, binary=True) == "1.0 MiB"
    assert humanize.naturalsize(1024**3 - 1, gnu=True) == "1.0G"


def test_naturalsize_custom_format_rounding() -> None:
    assert humanize.naturalsize(999_600, format="%.0f") == "1 MB"
