# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""metric() must accept a precision smaller than the number of integer digits."""
from __future__ import annotations

import humanize


def test_metric_low_precision_rounds_to_integer() -> None:
    assert humanize.metric(456, "W", 2) == "456 W"
    assert humanize.metric(45_600, "Hz", 1) == "46 kHz"


def test_metric_zero_precision() -> None:
    assert humanize.metric(7.6, "A", 0) == "8 A"
    assert humanize.metric(0.0123, "", 0) == "12 m"
