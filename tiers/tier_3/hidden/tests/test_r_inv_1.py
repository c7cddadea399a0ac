# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest

from inventory.catalog import Catalog, Item
from inventory.stock import StockBook


def _book() -> StockBook:
    catalog = Catalog(
        [
            Item("AX", "Axle", 500, 900),
            Item("BR", "Bracket", 60, 80),
            Item("CL", "Clamp", 40, 50),
            Item("OLD", "Old hinge", 30, 40, active=False),
        ]
    )
    book = StockBook(catalog)
    book.receive("AX", 4)
    book.receive("BR", 10)
    book.receive("CL", 2)
    return book


def test_at_minimum_is_not_suggested():
    assert _book().reorder_suggestions({"BR": 10}) == []


def test_quantity_restores_twice_the_minimum():
    assert _book().reorder_suggestions({"BR": 11}) == [("BR", 12)]


def test_pack_size_rounds_up():
    book = _book()
    assert book.reorder_suggestions({"BR": 11}, pack_size=5) == [("BR", 15)]
    assert book.reorder_suggestions({"BR": 11}, pack_size=6) == [("BR", 12)]


def test_ordered_by_shortfall_then_sku():
    book = _book()
    result = book.reorder_suggestions({"CL": 5, "AX": 7, "BR": 13})
    assert result == [("AX", 10), ("BR", 16), ("CL", 8)]
    assert book.reorder_suggestions({"BR": 12, "CL": 6}) == [("CL", 10), ("BR", 14)]


def test_inactive_items_are_skipped():
    assert _book().reorder_suggestions({"OLD": 5, "CL": 3}) == [("CL", 4)]


def test_errors():
    book = _book()
    with pytest.raises(KeyError):
        book.reorder_suggestions({"NOPE": 1})
    with pytest.raises(ValueError) as err:
        book.reorder_suggestions({"BR": 20}, pack_size=0)
    assert str(err.value) == "reorder_suggestions: pack_size must be at least 1"
