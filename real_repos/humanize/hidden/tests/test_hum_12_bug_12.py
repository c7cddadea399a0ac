# SPECSNAP-CANARY humanize ac8138f7-ef66-4022-aba4-53930adcc429
"""naturalday() and naturaldate() must judge an aware datetime by the date in its own timezone."""
from __future__ import annotations

import datetime as dt

from freezegun import freeze_time

import humanize

PLUS_ELEVEN = dt.timezone(dt.timedelta(hours=11))
MINUS_SEVEN = dt.timezone(dt.timedelta(hours=-7))


@freeze_time("2023-10-15 23:00:00")
def test_naturalday_aware_ahead_of_utc() -> None:
    # 23:00 UTC on the 15th is already 10:00 on the 16th at +11:00
    value = dt.datetime(2023, 10, 16, 10, 30, tzinfo=PLUS_ELEVEN)
    assert humanize.naturalday(value) == "today"
    assert humanize.naturalday(value + dt.timedelta(days=1)) == "tomorrow"


@freeze_time("2023-10-16 02:00:00")
def test_naturalday_aware_behind_utc() -> None:
    # 02:00 UTC on the 16th is still 19:00 on the 15th at -07:00
    value = dt.datetime(2023, 10, 15, 9, 0, tzinfo=MINUS_SEVEN)
    assert humanize.naturalday(value) == "today"


@freeze_time("2023-10-15 23:00:00")
def test_naturaldate_aware() -> None:
    value = dt.datetime(2023, 10, 16, 8, 0, tzinfo=PLUS_ELEVEN)
    assert humanize.naturaldate(value) == "today"
    assert humanize.naturaldate(value - dt.timedelta(days=1)) == "yesterday"
