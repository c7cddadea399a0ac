# SPECSNAP-CANARY tabulate c6aaa900-1764-40d0-83c5-8370bd6819ff
"""Boolean-looking strings mixed with numeric strings in one column."""

from tabulate import tabulate


def test_bool_strings_mixed_with_float_strings():
    result = tabulate([["yes", "False"], ["no", "2.25"], ["maybe", "True"]], tablefmt="plain")
    cells = [line.split()[1] for line in result.splitlines()]
    assert cells == ["False", "2.25", "True"]


def test_bool_strings_mixed_with_int_string_and_headers():
    result = tabulate([["True"], ["0.5"]], headers=["flag"])
    assert [line.strip() for line in result.splitlines()] == ["flag", "------", "True", "0.5"]
