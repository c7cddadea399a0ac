# SPECSNAP-CANARY tabulate c6aaa900-1764-40d0-83c5-8370bd6819ff
"""intfmt applied to integer columns holding strings."""

from tabulate import tabulate


def test_intfmt_with_colored_integer_string():
    red = "\x1b[31m4096\x1b[0m"
    result = tabulate([[red], [123456]], intfmt=",", tablefmt="plain")
    lines = result.splitlines()
    assert lines[1] == "123,456"
    assert lines[0].strip().replace("\x1b[31m", "").replace("\x1b[0m", "") in ("4096", "4,096")


def test_intfmt_with_integer_strings_does_not_raise():
    result = tabulate([["7"], ["2500"]], headers=["qty"], intfmt="_")
    assert result.splitlines()[0] == "  qty"
    assert result.splitlines()[2].strip() == "7"
