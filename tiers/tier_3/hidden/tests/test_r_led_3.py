# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest

from ledger.accounts import Account, Chart


def _chart() -> Chart:
    return Chart(
        [
            Account("4100", "Service income", "revenue"),
            Account("1000", "Cash", "asset"),
            Account("2000", "Payables", "liability"),
            Account("4000", "Sales", "revenue"),
            Account("5000", "Purchases", "expense"),
        ]
    )


def test_both_ends_inclusive_in_code_order():
    assert [a.code for a in _chart().range("2000", "4100")] == ["2000", "4000", "4100"]


def test_bounds_need_not_exist():
    assert [a.code for a in _chart().range("0500", "3999")] == ["1000", "2000"]
    assert _chart().range("6000", "6999") == []


def test_single_code_range():
    assert [a.code for a in _chart().range("4000", "4000")] == ["4000"]


def test_kind_filter_is_keyword_only():
    chart = _chart()
    assert [a.code for a in chart.range("0000", "9999", kind="revenue")] == ["4000", "4100"]
    with pytest.raises(TypeError):
        chart.range("0000", "9999", "revenue")


def test_unknown_kind_rejected():
    with pytest.raises(ValueError) as err:
        _chart().range("0000", "9999", kind="income")
    assert str(err.value) == "unknown account kind: income"


def test_reversed_range_rejected():
    with pytest.raises(ValueError) as err:
        _chart().range("5000", "1000")
    assert str(err.value) == "empty account range 5000..1000"
