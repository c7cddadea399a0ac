# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest

from inventory.catalog import Catalog, Item


def _catalog() -> Catalog:
    return Catalog(
        [
            Item("HX-10", "Hex bolt M10", 20, 30),
            Item("WS-10", "Washer for HX bolts", 2, 5),
            Item("HX-08", "Hex bolt M8", 15, 20),
            Item("NT-08", "Nut M8", 3, 6),
            Item("HX-06", "Hex bolt M6 (discontinued)", 10, 10, active=False),
        ]
    )


def test_sku_prefix_matches_come_first():
    assert [i.sku for i in _catalog().search("hx")] == ["HX-08", "HX-10", "WS-10"]


def test_name_match_is_case_insensitive():
    assert [i.sku for i in _catalog().search("M8")] == ["HX-08", "NT-08"]
    assert [i.sku for i in _catalog().search("hex BOLT")] == ["HX-08", "HX-10"]


def test_inactive_items_only_on_request():
    catalog = _catalog()
    assert "HX-06" not in [i.sku for i in catalog.search("hx")]
    assert [i.sku for i in catalog.search("hx", include_inactive=True)] == ["HX-06", "HX-08", "HX-10", "WS-10"]


def test_limit_and_query_stripping():
    assert [i.sku for i in _catalog().search("  hx ", limit=2)] == ["HX-08", "HX-10"]


def test_blank_query_returns_nothing():
    assert _catalog().search("   ") == []
    assert _catalog().search("") == []


def test_limit_below_one_rejected():
    with pytest.raises(ValueError) as err:
        _catalog().search("hx", limit=0)
    assert str(err.value) == "search: limit must be at least 1"
