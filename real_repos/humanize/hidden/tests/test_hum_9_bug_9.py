# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""naturaldelta() must describe a negative timedelta by its size."""
from __future__ import annotations

import datetime as dt

import humanize


def test_naturaldelta_negative_seconds_and_hours() -> None:
    assert humanize.naturaldelta(dt.timedelta(seconds=-30)) == "30 seconds"
    assert humanize.naturaldelta(dt.timedelta(hours=-5)) == "5 hours"
    assert humanize.naturaldelta(-90) == "a minute"


def test_naturaldelta_tiny_negative_is_a_moment() -> None:
    assert humanize.naturaldelta(dt.timedelta(microseconds=-1)) == "a moment"


def test_naturaldelta_negative_days() -> None:
    assert humanize.naturaldelta(dt.timedelta(days=-3, hours=-2)) == "3 days"
