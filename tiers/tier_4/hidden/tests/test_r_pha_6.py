# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date

import pytest


def test_running_balance_from_opening():
    from pharmacy.controlled import register_balances

    rows = register_balances([(date(2024, 1, 1), "RX1", -2), (date(2024, 1, 2), "IN1", 10)], opening=5)
    assert rows == [(date(2024, 1, 1), "RX1", -2, 3), (date(2024, 1, 2), "IN1", 10, 13)]


def test_sorted_by_date_stable_within_a_date():
    from pharmacy.controlled import register_balances

    entries = [
        (date(2024, 1, 5), "RX2", -3),
        (date(2024, 1, 1), "IN1", 10),
        (date(2024, 1, 5), "RX3", -1),
        (date(2024, 1, 5), "IN2", 4),
    ]
    assert [(r[1], r[3]) for r in register_balances(entries)] == [("IN1", 10), ("RX2", 7), ("RX3", 6), ("IN2", 10)]


def test_balance_below_zero_is_rejected():
    from pharmacy.controlled import register_balances

    entries = [(date(2024, 2, 1), "IN1", 2), (date(2024, 2, 3), "RX9", -3)]
    with pytest.raises(ValueError) as err:
        register_balances(entries)
    assert str(err.value) == "register: balance below zero on 2024-02-03 (RX9)"
    assert register_balances(entries, opening=1)[-1][3] == 0


def test_zero_quantity_and_negative_opening():
    from pharmacy.controlled import register_balances

    with pytest.raises(ValueError) as err:
        register_balances([(date(2024, 1, 1), "ADJ4", 0)], opening=3)
    assert str(err.value) == "register: zero quantity in ADJ4"
    with pytest.raises(ValueError) as err:
        register_balances([], opening=-1)
    assert str(err.value) == "register: opening balance must not be negative"


def test_opening_is_keyword_only_and_empty_register():
    from pharmacy.controlled import register_balances

    assert register_balances([], opening=4) == []
    with pytest.raises(TypeError):
        register_balances([], 4)
