# SPECSNAP-CANARY tier_2 7b1e5c2a-4f0d-4c8e-9a61-2d9f3e8b0c47
import pytest


def test_default_n_is_three():
    from ledger.balances import top_accounts

    balances = {"1000": 10, "1100": 20, "1200": 30, "1300": 40, "1400": 50}
    assert top_accounts(balances) == [("1400", 50), ("1300", 40), ("1200", 30)]


def test_absolute_ordering_by_default():
    from ledger.balances import top_accounts

    balances = {"1000": 500, "2000": -900, "3000": 100}
    assert top_accounts(balances) == [("2000", -900), ("1000", 500), ("3000", 100)]


def test_ties_broken_by_code_ascending():
    from ledger.balances import top_accounts

    balances = {"4000": 300, "1200": -300, "3000": 300, "1000": 50}
    assert top_accounts(balances, 3) == [("1200", -300), ("3000", 300), ("4000", 300)]


def test_zero_balances_are_excluded():
    from ledger.balances import top_accounts

    assert top_accounts({"1000": 0, "2000": 5, "3000": 0}) == [("2000", 5)]


def test_signed_ordering_when_by_abs_is_false():
    from ledger.balances import top_accounts

    balances = {"1000": 500, "2000": -900, "3000": 100, "5000": 100}
    assert top_accounts(balances, 4, by_abs=False) == [
        ("1000", 500),
        ("3000", 100),
        ("5000", 100),
        ("2000", -900),
    ]


def test_n_below_one_is_rejected_and_one_is_allowed():
    from ledger.balances import top_accounts

    assert top_accounts({"1000": 7, "2000": -8}, 1) == [("2000", -8)]
    with pytest.raises(ValueError) as err:
        top_accounts({"1000": 7}, 0)
    assert str(err.value) == "top_accounts: n must be at least 1"
