# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest

from inventory.catalog import Catalog, Item


def _catalog() -> Catalog:
    return Catalog(
        [
            Item("A", "Anvil", 100, 7_000),
            Item("B", "Bench vice", 100, 5_000),
            Item("C", "Chain", 100, 3_000),
            Item("D", "Drill", 100, 3_000),
            Item("Z", "Zinc ingot", 100, 9_000),
        ]
    )


def test_first_fit_decreasing():
    from shipping.parcels import pack_parcels

    result = pack_parcels(_catalog(), {"C": 2, "B": 2, "A": 2}, max_grams=15_000)
    assert result == [{"A": 2}, {"B": 2, "C": 1}, {"C": 1}]


def test_limit_includes_tare_and_is_inclusive():
    from shipping.parcels import pack_parcels

    assert pack_parcels(_catalog(), {"A": 2}, max_grams=14_150) == [{"A": 2}]
    assert pack_parcels(_catalog(), {"A": 2}, max_grams=14_149) == [{"A": 1}, {"A": 1}]


def test_equal_weights_by_sku():
    from shipping.parcels import pack_parcels

    assert pack_parcels(_catalog(), {"D": 1, "C": 1}, max_grams=3_150) == [{"C": 1}, {"D": 1}]


def test_parcel_keys_in_sku_order():
    from shipping.parcels import pack_parcels

    result = pack_parcels(_catalog(), {"Z": 1, "C": 1})
    assert result == [{"C": 1, "Z": 1}]
    assert list(result[0]) == ["C", "Z"]


def test_zero_quantity_lines_ignored():
    from shipping.parcels import pack_parcels

    assert pack_parcels(_catalog(), {"Z": 0, "C": 1}, max_grams=5_000) == [{"C": 1}]
    assert pack_parcels(_catalog(), {}) == []


def test_too_heavy_unit():
    from shipping.parcels import pack_parcels

    with pytest.raises(ValueError) as err:
        pack_parcels(_catalog(), {"C": 1, "Z": 1}, max_grams=9_100)
    assert str(err.value) == "Z is too heavy for one parcel (9000 g)"
