# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
from datetime import datetime, timedelta, timezone

import pytest

from rbac.audit import AuditTrail

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)


def _trail(*decisions):
    trail = AuditTrail()
    for minute, actor, ok in decisions:
        trail.record(actor, "ledger.post", ok, T0 + timedelta(minutes=minute))
    return trail


def test_three_recent_denials_lock():
    trail = _trail((0, "eve", False), (1, "eve", False), (2, "eve", False))
    assert trail.is_locked("eve", T0 + timedelta(minutes=5))


def test_fewer_denials_than_threshold():
    trail = _trail((0, "eve", False), (1, "eve", False))
    assert not trail.is_locked("eve", T0 + timedelta(minutes=5))
    assert trail.is_locked("eve", T0 + timedelta(minutes=5), threshold=2)


def test_allowed_decision_clears_the_lock():
    trail = _trail((0, "eve", False), (1, "eve", False), (2, "eve", False), (3, "eve", True))
    assert not trail.is_locked("eve", T0 + timedelta(minutes=5))
    older = _trail((0, "eve", True), (1, "eve", False), (2, "eve", False), (3, "eve", False))
    assert older.is_locked("eve", T0 + timedelta(minutes=5))


def test_window_is_inclusive():
    trail = _trail((0, "eve", False), (1, "eve", False), (2, "eve", False))
    assert trail.is_locked("eve", T0 + timedelta(minutes=15))
    assert not trail.is_locked("eve", T0 + timedelta(minutes=15, seconds=1))
    assert trail.is_locked("eve", T0 + timedelta(minutes=31), window=timedelta(minutes=31))


def test_other_actors_are_ignored():
    trail = _trail(
        (0, "eve", False), (0, "bob", True), (1, "eve", False), (1, "bob", True), (2, "eve", False)
    )
    assert trail.is_locked("eve", T0 + timedelta(minutes=3))
    assert not trail.is_locked("bob", T0 + timedelta(minutes=3))
    assert not trail.is_locked("ann", T0 + timedelta(minutes=3))


def test_threshold_must_be_positive():
    with pytest.raises(ValueError) as err:
        _trail().is_locked("eve", T0, threshold=0)
    assert str(err.value) == "is_locked: threshold must be at least 1"
