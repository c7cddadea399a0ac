# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
from datetime import datetime, time, timedelta, timezone

UTC = timezone.utc


def test_window_start_is_quiet():
    from notify.quiet_hours import next_send_time

    assert next_send_time(datetime(2024, 5, 1, 21, 0, tzinfo=UTC)) == datetime(2024, 5, 2, 8, 0, tzinfo=UTC)


def test_just_before_the_window_is_unchanged():
    from notify.quiet_hours import next_send_time

    at = datetime(2024, 5, 1, 20, 59, 59, 999_999, tzinfo=UTC)
    assert next_send_time(at) == at


def test_early_morning_goes_to_same_day_end():
    from notify.quiet_hours import next_send_time

    assert next_send_time(datetime(2024, 5, 1, 7, 59, 59, tzinfo=UTC)) == datetime(2024, 5, 1, 8, 0, tzinfo=UTC)
    at = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)
    assert next_send_time(at) == at


def test_late_evening_rolls_over_month_end():
    from notify.quiet_hours import next_send_time

    assert next_send_time(datetime(2024, 1, 31, 23, 30, tzinfo=UTC)) == datetime(2024, 2, 1, 8, 0, tzinfo=UTC)


def test_window_within_one_day():
    from notify.quiet_hours import next_send_time

    kw = {"start": time(12, 0), "end": time(13, 0)}
    assert next_send_time(datetime(2024, 5, 1, 12, 30), **kw) == datetime(2024, 5, 1, 13, 0)
    assert next_send_time(datetime(2024, 5, 1, 13, 0), **kw) == datetime(2024, 5, 1, 13, 0)
    assert next_send_time(datetime(2024, 5, 1, 22, 0), **kw) == datetime(2024, 5, 1, 22, 0)


def test_equal_bounds_mean_no_quiet_hours():
    from notify.quiet_hours import next_send_time

    at = datetime(2024, 5, 1, 3, 0, tzinfo=UTC)
    assert next_send_time(at, start=time(0, 0), end=time(0, 0)) == at


def test_tzinfo_is_kept():
    from notify.quiet_hours import next_send_time

    plus2 = timezone(timedelta(hours=2))
    result = next_send_time(datetime(2024, 5, 1, 22, 15, tzinfo=plus2))
    assert result == datetime(2024, 5, 2, 8, 0, tzinfo=plus2)
    assert result.tzinfo is plus2
