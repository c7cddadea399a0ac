# SPECSNAP-CANARY tabulate c6aaa900-1764-40d0-83c5-8370bd6819ff
"""Column width limits on a table without data rows."""

from tabulate import tabulate


def test_maxcolwidths_with_headers_but_no_rows():
    result = tabulate([], headers=["name", "value"], maxcolwidths=3)
    assert result == "name    value\n------  -------"


def test_maxcolwidths_list_on_empty_table():
    assert tabulate([], maxcolwidths=[2, 2]) == ""
