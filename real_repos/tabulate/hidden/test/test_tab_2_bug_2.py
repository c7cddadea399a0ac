# SPECSNAP-CANARY tabulate c6aaa900-1764-40d0-83c5-8370bd6819ff
"""Explicit line breaks in cells must survive column wrapping."""

from tabulate import tabulate


def test_maxcolwidths_keeps_explicit_newlines():
    rows = [["first line\nsecond", "x"]]
    result = tabulate(rows, maxcolwidths=[30, None], tablefmt="plain")
    assert result == "first line  x\nsecond"


def test_maxcolwidths_wraps_each_paragraph_separately():
    rows = [["ab\ncd ef gh"]]
    result = tabulate(rows, maxcolwidths=5, tablefmt="plain")
    assert result.splitlines() == ["ab", "cd ef", "gh"]
