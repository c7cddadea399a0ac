# SPECSNAP-CANARY tabulate c6aaa900-1764-40d0-83c5-8370bd6819ff
"""Multiline cells in the *outline table formats."""

from tabulate import tabulate


def test_outline_renders_multiline_cell_on_two_lines():
    result = tabulate([["top\nbottom", 7]], headers=["cell", "n"], tablefmt="outline")
    assert result.splitlines() == [
        "+--------+-----+",
        "| cell   |   n |",
        "+========+=====+",
        "| top    |   7 |",
        "| bottom |     |",
        "+--------+-----+",
    ]


def test_fancy_and_double_outline_keep_table_rectangular():
    for fmt in ("fancy_outline", "double_outline", "simple_outline", "rounded_outline"):
        lines = tabulate([["p\nqq", "r"]], tablefmt=fmt).splitlines()
        assert len(lines) == 4, fmt
        assert len({len(line) for line in lines}) == 1, fmt
