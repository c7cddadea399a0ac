# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
from datetime import datetime, timedelta, timezone

from notify.outbox import Message, Outbox

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
MSG = Message("email", "a@example.com", "s", "b")


def _failed(outbox: Outbox, times: int, at: datetime) -> int:
    envelope_id = outbox.enqueue(MSG, T0 - timedelta(days=1))
    for _ in range(times):
        outbox.mark_failed(envelope_id, at)
    return envelope_id


def test_new_envelope_due_from_queue_time():
    outbox = Outbox()
    envelope_id = outbox.enqueue(MSG, T0)
    assert outbox.due(T0 - timedelta(seconds=1)) == []
    assert outbox.due(T0) == [envelope_id]


def test_first_retry_after_base_delay():
    outbox = Outbox()
    envelope_id = _failed(outbox, 1, T0)
    assert outbox.due(T0 + timedelta(minutes=2) - timedelta(seconds=1)) == []
    assert outbox.due(T0 + timedelta(minutes=2)) == [envelope_id]


def test_delay_doubles_per_failure():
    outbox = Outbox()
    envelope_id = _failed(outbox, 3, T0)
    assert outbox.due(T0 + timedelta(minutes=7, seconds=59)) == []
    assert outbox.due(T0 + timedelta(minutes=8)) == [envelope_id]
    assert outbox.due(T0 + timedelta(seconds=60), base_delay=timedelta(seconds=15)) == [envelope_id]


def test_delay_capped_at_one_hour():
    outbox = Outbox()
    envelope_id = _failed(outbox, 7, T0)
    assert outbox.due(T0 + timedelta(minutes=59), max_attempts=10) == []
    assert outbox.due(T0 + timedelta(minutes=60), max_attempts=10) == [envelope_id]


def test_abandoned_and_sent_envelopes_never_due():
    outbox = Outbox()
    _failed(outbox, 5, T0)
    sent = outbox.enqueue(MSG, T0)
    outbox.mark_sent(sent)
    assert outbox.due(T0 + timedelta(days=2)) == []
    assert outbox.due(T0 + timedelta(days=2), max_attempts=6) == [1]


def test_ordered_by_due_time_then_id():
    outbox = Outbox()
    late = outbox.enqueue(MSG, T0 + timedelta(minutes=5))
    early = outbox.enqueue(MSG, T0)
    same = outbox.enqueue(MSG, T0)
    assert outbox.due(T0 + timedelta(minutes=10)) == [early, same, late]
