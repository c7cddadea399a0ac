# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""metric() must carry to the next SI prefix when rounding reaches 1000."""
from __future__ import annotations

import humanize


def test_metric_carries_into_kilo_and_mega() -> None:
    assert humanize.metric(999.9, "V") == "1.00 kV"
    assert humanize.metric(999_999, "V") == "1.00 MV"


def test_metric_carries_small_and_negative_values() -> None:
    assert humanize.metric(0.0009999, "V") == "1.00 mV"
    assert humanize.metric(-999.96, "W") == "-1.00 kW"


def test_metric_carry_respects_precision() -> None:
    assert humanize.metric(999_960, "Hz", 4) == "1.000 MHz"
