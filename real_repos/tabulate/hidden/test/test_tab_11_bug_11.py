# SPECSNAP-CANARY tabulate c6aaa900-1764-40d0-83c5-8370bd6819ff
"""SEPARATING_LINE in formats that draw a line between all rows (grid)."""

from tabulate import tabulate, SEPARATING_LINE


def test_grid_with_separating_line_has_no_empty_row():
    rows = [["cat", 4], SEPARATING_LINE, ["spider", 8]]
    lines = tabulate(rows, tablefmt="grid").splitlines()
    assert [line for line in lines if line.startswith("|")] == [
        "| cat    | 4 |",
        "| spider | 8 |",
    ]
    assert all(set(line) <= set("+-") for line in lines if not line.startswith("|"))


def test_fancy_grid_with_separating_line_and_headers():
    rows = [["a", 1], SEPARATING_LINE, ["b", 2]]
    lines = tabulate(rows, headers=["k", "v"], tablefmt="fancy_grid").splitlines()
    data = [line for line in lines if line.startswith("│")]
    assert data == ["│ k   │   v │", "│ a   │   1 │", "│ b   │   2 │"]
    assert "\x01" not in "".join(lines)
