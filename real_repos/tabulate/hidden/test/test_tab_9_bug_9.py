# SPECSNAP-CANARY tabulate c6aaa900-1764-40d0-83c5-8370bd6819ff
"""Header width limits on a table without data rows."""

from tabulate import tabulate


def test_maxheadercolwidths_without_rows_wraps_headers():
    result = tabulate([], headers=["wide heading", "b"], maxheadercolwidths=5)
    assert result.splitlines()[0].split() == ["wide", "b"]
    assert result.splitlines()[1].split() == ["headi"]


def test_maxheadercolwidths_list_without_rows():
    result = tabulate([], headers=["abc def"], maxheadercolwidths=[3], tablefmt="plain")
    assert result == "abc\ndef"
