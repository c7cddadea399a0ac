# SPECSNAP-CANARY tabulate c6aaa900-1764-40d0-83c5-8370bd6819ff
"""Column width limits given as a tuple."""

from tabulate import tabulate


def test_maxcolwidths_accepts_a_tuple():
    rows = [["one two", "three four five"]]
    result = tabulate(rows, maxcolwidths=(3, 10), tablefmt="plain")
    assert result == "one  three four\ntwo  five"


def test_maxcolwidths_tuple_shorter_than_row():
    rows = [["aa bb", "cc dd"]]
    result = tabulate(rows, maxcolwidths=(2,), tablefmt="plain")
    assert result.splitlines() == ["aa  cc dd", "bb"]
