# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""metric() must format zero instead of failing on log10(0)."""
from __future__ import annotations

import humanize


def test_metric_of_zero() -> None:
    assert humanize.metric(0) == "0.00"
    assert humanize.metric(0, "Hz") == "0.00 Hz"


def test_metric_of_zero_float_with_precision() -> None:
    assert humanize.metric(0.0, "V", 5) == "0.0000 V"
