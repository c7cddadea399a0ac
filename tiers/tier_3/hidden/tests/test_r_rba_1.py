# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest

from rbac.roles import Registry, Role, standard_registry


def _registry() -> Registry:
    return Registry(
        [
            Role("a", parents=("b", "c")),
            Role("b", parents=("d",)),
            Role("c", parents=("d", "e")),
            Role("d"),
            Role("e", parents=("a",)),
            Role("x", parents=("ghost", "b")),
        ]
    )


def test_breadth_first_order():
    assert _registry().ancestors("a") == ["b", "c", "d", "e"]


def test_standard_roles():
    assert standard_registry().ancestors("finance") == ["sales", "staff"]


def test_cycle_never_lists_the_role_itself():
    assert _registry().ancestors("e") == ["a", "b", "c", "d"]


def test_unregistered_parents_are_skipped():
    assert _registry().ancestors("x") == ["b", "d"]


def test_role_without_parents():
    assert _registry().ancestors("d") == []


def test_unknown_role():
    with pytest.raises(KeyError) as err:
        _registry().ancestors("nope")
    assert err.value.args[0] == "unknown role: nope"
