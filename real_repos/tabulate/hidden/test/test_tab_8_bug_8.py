# SPECSNAP-CANARY tabulate c6aaa900-1764-40d0-83c5-8370bd6819ff
"""colalign with more entries than the table has columns."""

from tabulate import tabulate


def test_colalign_longer_than_row_is_ignored_beyond_last_column():
    rows = [["ab", 5], ["c", 60]]
    result = tabulate(rows, colalign=("right", "left", "center", "left"), tablefmt="plain")
    assert result == "ab  5\n c  60"


def test_colalign_on_empty_table():
    assert tabulate([], colalign=("left", "right")) == ""
    assert tabulate([], headers=["h"], colalign=("center", "left")) == "h\n---"
