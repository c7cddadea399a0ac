# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
import pytest


def test_under_the_maximum_nothing_changes():
    from billing.coverage import apply_oop_max

    assert apply_oop_max([100, 200], max_cents=1_000) == [100, 200]
    assert apply_oop_max([]) == []


def test_crossing_share_is_cut_and_later_shares_are_zero():
    from billing.coverage import apply_oop_max

    assert apply_oop_max([400, 500, 300, 0], paid_to_date_cents=200, max_cents=1_000) == [400, 400, 0, 0]


def test_default_maximum_is_500000():
    from billing.coverage import apply_oop_max

    assert apply_oop_max([300_000, 300_000]) == [300_000, 200_000]


def test_already_at_or_past_the_maximum():
    from billing.coverage import apply_oop_max

    assert apply_oop_max([10, 20], paid_to_date_cents=1_000, max_cents=1_000) == [0, 0]
    assert apply_oop_max([10], paid_to_date_cents=1_500, max_cents=1_000) == [0]


def test_negative_share_reported_with_index_before_computing():
    from billing.coverage import apply_oop_max

    with pytest.raises(ValueError) as err:
        apply_oop_max([10, -5, -1], max_cents=0)
    assert str(err.value) == "apply_oop_max: negative share at index 1"


def test_keyword_only_arguments():
    from billing.coverage import apply_oop_max

    with pytest.raises(TypeError):
        apply_oop_max([1], 0)
