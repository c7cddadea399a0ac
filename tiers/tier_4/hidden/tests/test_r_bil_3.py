# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date, timedelta

from billing.charges import Charge
from billing.statements import Payment, Statement

TODAY = date(2024, 6, 30)


def _statement(ages_and_cents, paid=0):
    s = Statement("P1")
    for age, cents in ages_and_cents:
        s.add_charge(Charge("P1", "C100", cents, TODAY - timedelta(days=age)))
    if paid:
        s.add_payment(Payment("P1", paid, TODAY))
    return s


def test_keys_in_order_and_empty_statement():
    assert list(_statement([]).aging(TODAY).items()) == [("0-30", 0), ("31-60", 0), ("61-90", 0), ("90+", 0)]


def test_bucket_edges():
    s = _statement([(30, 1), (31, 10), (60, 100), (61, 1_000), (90, 10_000), (91, 100_000)])
    assert s.aging(TODAY) == {"0-30": 1, "31-60": 110, "61-90": 11_000, "90+": 100_000}


def test_payments_clear_oldest_charges_first():
    s = _statement([(10, 500), (100, 300), (45, 400)], paid=500)
    assert s.aging(TODAY) == {"0-30": 500, "31-60": 200, "61-90": 0, "90+": 0}


def test_overpayment_never_goes_negative():
    s = _statement([(10, 500), (70, 300)], paid=2_000)
    assert s.aging(TODAY) == {"0-30": 0, "31-60": 0, "61-90": 0, "90+": 0}


def test_future_charges_count_as_current():
    s = _statement([(-5, 700), (95, 100)], paid=100)
    assert s.aging(TODAY) == {"0-30": 700, "31-60": 0, "61-90": 0, "90+": 0}
