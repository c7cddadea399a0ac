# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
import pytest

from pharmacy.stock import StockLedger


def _ledger(**levels):
    s = StockLedger()
    for code, qty in levels.items():
        s.receive(code, qty + 1)
        s.dispense(code, 1)
    return s


def test_default_threshold_is_five():
    s = _ledger(A=5, B=4, C=12)
    assert s.reorder_list() == [("B", 4)]


def test_exactly_at_threshold_is_not_listed():
    s = _ledger(A=8, B=7)
    assert s.reorder_list(threshold=8) == [("B", 7)]


def test_ordered_by_quantity_then_code():
    s = _ledger(D=3, B=9, C=3, A=40)
    assert s.reorder_list(threshold=100) == [("C", 3), ("D", 3), ("B", 9), ("A", 40)]


def test_dispensed_to_zero_is_listed_and_unknown_codes_never():
    s = StockLedger()
    s.receive("X", 2)
    s.dispense("X", 2)
    s.on_hand("NEVER")
    assert s.reorder_list(threshold=1) == [("X", 0)]


def test_negative_threshold_is_rejected():
    with pytest.raises(ValueError) as err:
        StockLedger().reorder_list(threshold=-2)
    assert str(err.value) == "reorder_list: negative threshold -2"


def test_threshold_is_keyword_only():
    with pytest.raises(TypeError):
        StockLedger().reorder_list(3)
