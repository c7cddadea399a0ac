# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest

ROWS = [
    {"sku": "A|1", "qty": 3, "price": 1.5, "ok": True, "note": None},
    {"sku": "B", "qty": 12, "ok": False},
]
COLUMNS = ["sku", "qty", "price", "ok", "note"]


def test_full_table():
    from reports.export import to_markdown

    assert to_markdown(ROWS, COLUMNS) == (
        "| sku | qty | price | ok | note |\n"
        "| --- | ---: | ---: | --- | --- |\n"
        "| A\\|1 | 3 | 1.5 | True |  |\n"
        "| B | 12 |  | False |  |\n"
    )


def test_bool_and_empty_columns_are_not_numeric():
    from reports.export import to_markdown

    lines = to_markdown(ROWS, ["ok", "note"]).splitlines()
    assert lines[1] == "| --- | --- |"


def test_mixed_column_is_not_numeric():
    from reports.export import to_markdown

    rows = [{"v": 1}, {"v": "two"}]
    assert to_markdown(rows, ["v"]).splitlines()[1] == "| --- |"


def test_no_rows_gives_header_and_separator():
    from reports.export import to_markdown

    assert to_markdown([], ["a", "b"]) == "| a | b |\n| --- | --- |\n"


def test_no_columns_rejected():
    from reports.export import to_markdown

    with pytest.raises(ValueError) as err:
        to_markdown(ROWS, [])
    assert str(err.value) == "to_markdown: no columns"


def test_listed_in_all():
    import reports.export

    assert "to_markdown" in reports.export.__all__
