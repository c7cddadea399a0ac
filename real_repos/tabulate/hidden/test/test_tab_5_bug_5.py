# SPECSNAP-CANARY tabulate c6aaa900-1764-40d0-83c5-8370bd6819ff
"""SEPARATING_LINE between dataclass rows."""

import dataclasses

from tabulate import tabulate, SEPARATING_LINE


@dataclasses.dataclass
class Reading:
    sensor: str
    level: int


def test_separating_line_between_dataclass_rows():
    rows = [Reading("north", 3), SEPARATING_LINE, Reading("south", 12)]
    result = tabulate(rows, headers="keys")
    assert result.splitlines() == [
        "sensor      level",
        "--------  -------",
        "north           3",
        "--------  -------",
        "south          12",
    ]


def test_separating_line_dataclass_rows_without_headers():
    rows = [Reading("a", 1), SEPARATING_LINE, Reading("b", 2)]
    assert tabulate(rows, tablefmt="simple") == "-  -\na  1\n-  -\nb  2\n-  -"
