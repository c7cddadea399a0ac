# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date

import pytest

TODAY = date(2024, 6, 1)


def test_window_includes_today_and_the_last_day():
    from staff.credentials import Credential, expiring

    creds = [
        Credential("S1", "licence", date(2024, 6, 1)),
        Credential("S2", "licence", date(2024, 7, 31)),
        Credential("S3", "licence", date(2024, 8, 1)),
    ]
    assert [c.staff_id for c in expiring(creds, TODAY)] == ["S1", "S2"]


def test_already_expired_is_left_out():
    from staff.credentials import Credential, expiring

    assert expiring([Credential("S1", "bls", date(2024, 5, 31))], TODAY) == []


def test_ordered_by_date_then_staff_then_kind():
    from staff.credentials import Credential, expiring

    creds = [
        Credential("S2", "licence", date(2024, 6, 10)),
        Credential("S1", "licence", date(2024, 6, 20)),
        Credential("S2", "bls", date(2024, 6, 10)),
        Credential("S1", "dea", date(2024, 6, 10)),
    ]
    assert [(c.staff_id, c.kind) for c in expiring(creds, TODAY)] == [
        ("S1", "dea"),
        ("S2", "bls"),
        ("S2", "licence"),
        ("S1", "licence"),
    ]


def test_custom_window_and_bounds():
    from staff.credentials import Credential, expiring

    creds = [Credential("S1", "bls", date(2024, 6, 1)), Credential("S2", "bls", date(2024, 6, 2))]
    assert [c.staff_id for c in expiring(creds, TODAY, within_days=0)] == ["S1"]
    assert len(expiring(creds, TODAY, within_days=365)) == 2
    for bad in (-1, 366):
        with pytest.raises(ValueError) as err:
            expiring(creds, TODAY, within_days=bad)
        assert str(err.value) == f"expiring: within_days must be 0..365, got {bad}"


def test_within_days_is_keyword_only_and_credential_is_frozen():
    from dataclasses import FrozenInstanceError

    from staff.credentials import Credential, expiring

    with pytest.raises(TypeError):
        expiring([], TODAY, 30)
    with pytest.raises(FrozenInstanceError):
        Credential("S1", "bls", TODAY).kind = "x"
