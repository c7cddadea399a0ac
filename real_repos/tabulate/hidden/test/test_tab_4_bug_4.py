# SPECSNAP-CANARY tabulate c6aaa900-1764-40d0-83c5-8370bd6819ff
"""SEPARATING_LINE in table formats that pad their cells."""

from tabulate import tabulate, SEPARATING_LINE


def test_separating_line_in_psql_table():
    rows = [["x", 10], SEPARATING_LINE, ["y", 20]]
    result = tabulate(rows, tablefmt="psql")
    assert result.splitlines() == [
        "+---+----+",
        "| x | 10 |",
        "|---+----|",
        "| y | 20 |",
        "+---+----+",
    ]


def test_separating_line_in_pipe_table_with_headers():
    rows = [["x", 10], SEPARATING_LINE, ["y", 20]]
    lines = tabulate(rows, headers=["k", "v"], tablefmt="pipe").splitlines()
    assert len(lines) == 5
    assert lines[3] == lines[1]
    assert "\x01" not in "".join(lines)
