# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date

import pytest

from billing.statements import Payment


def _p(cents, day):
    return Payment("P1", cents, date(2024, 3, day))


def test_latest_payment_refunded_first():
    from billing.refunds import allocate_refund

    payments = [_p(1_000, 1), _p(500, 20), _p(300, 10)]
    assert allocate_refund(payments, 700) == [(1, 500), (2, 200)]


def test_same_date_later_in_sequence_first():
    from billing.refunds import allocate_refund

    payments = [_p(400, 5), _p(100, 5), _p(250, 5)]
    assert allocate_refund(payments, 300) == [(2, 250), (1, 50)]


def test_refund_of_everything():
    from billing.refunds import allocate_refund

    payments = [_p(1_000, 1), _p(500, 20)]
    assert allocate_refund(payments, 1_500) == [(1, 500), (0, 1_000)]


def test_refund_larger_than_payments():
    from billing.refunds import allocate_refund

    with pytest.raises(ValueError) as err:
        allocate_refund([_p(1_000, 1), _p(500, 20)], 1_501)
    assert str(err.value) == "allocate_refund: refund 1501 exceeds payments 1500"


def test_refund_must_be_positive():
    from billing.refunds import allocate_refund

    for bad in (0, -5):
        with pytest.raises(ValueError) as err:
            allocate_refund([_p(1_000, 1)], bad)
        assert str(err.value) == "allocate_refund: refund must be positive"
