# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""naturaltime() must accept timezone-aware datetimes."""
from __future__ import annotations

import datetime as dt

import humanize


def test_naturaltime_aware_utc_past_and_future() -> None:
    now = dt.datetime.now(dt.timezone.utc)
    assert humanize.naturaltime(now - dt.timedelta(hours=3, minutes=10)) == "3 hours ago"
    assert humanize.naturaltime(now + dt.timedelta(days=2, hours=1)) == "2 days from now"


def test_naturaltime_aware_other_offset() -> None:
    plus_five = dt.timezone(dt.timedelta(hours=5))
    value = dt.datetime.now(plus_five) - dt.timedelta(minutes=30, seconds=10)
    assert humanize.naturaltime(value) == "30 minutes ago"

