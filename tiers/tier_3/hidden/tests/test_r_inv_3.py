# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest

from inventory.valuation import CostLayer


def _layers():
    return [CostLayer(4, 100), CostLayer(3, 110), CostLayer(5, 130)]


def test_fifo_is_the_default():
    from inventory.valuation import issue_cost

    assert issue_cost(_layers(), 6) == 4 * 100 + 2 * 110


def test_lifo_takes_newest_layers():
    from inventory.valuation import issue_cost

    assert issue_cost(_layers(), 6, method="lifo") == 5 * 130 + 1 * 110


def test_average_rounds_half_up():
    from inventory.valuation import issue_cost

    assert issue_cost([CostLayer(1, 100), CostLayer(1, 101)], 1, method="average") == 101
    assert issue_cost([CostLayer(3, 100), CostLayer(4, 101)], 3, method="average") == 302


def test_layers_are_not_modified():
    from inventory.valuation import issue_cost

    layers = _layers()
    issue_cost(layers, 12, method="lifo")
    assert layers == _layers()


def test_method_checked_before_quantity():
    from inventory.valuation import issue_cost

    with pytest.raises(ValueError) as err:
        issue_cost(_layers(), 0, method="hifo")
    assert str(err.value) == "unknown costing method: 'hifo'"


def test_quantity_errors():
    from inventory.valuation import issue_cost

    with pytest.raises(ValueError) as err:
        issue_cost(_layers(), 0)
    assert str(err.value) == "issue_cost: quantity must be positive"
    with pytest.raises(ValueError) as err:
        issue_cost(_layers(), 13, method="average")
    assert str(err.value) == "issue_cost: only 12 units available"


def test_listed_in_all():
    import inventory.valuation

    assert "issue_cost" in inventory.valuation.__all__
