# SPECSNAP-CANARY tier_3 467009d6-25ad-4df6-9015-503f8d3daf8e
import pytest

from rbac.policy import Subject
from rbac.roles import Registry, Role, standard_registry


def test_default_conflicts_with_inherited_grants():
    from rbac.sod import sod_conflicts

    reg = standard_registry()
    assert sod_conflicts(reg, Subject("f", ("ghost", "finance"))) == [
        ("billing.invoice.create", "billing.payment.approve")
    ]
    assert sod_conflicts(reg, Subject("w", ("warehouse",))) == []


def test_default_conflict_table():
    from rbac.sod import DEFAULT_CONFLICTS

    assert DEFAULT_CONFLICTS == (
        ("billing.invoice.create", "billing.payment.approve"),
        ("inventory.adjust", "inventory.count.approve"),
        ("ledger.post", "ledger.period.close"),
    )


def test_pairs_normalised_deduplicated_and_sorted():
    from rbac.sod import sod_conflicts

    reg = Registry([Role("r", frozenset({"x.b", "x.a", "y"}))])
    conflicts = [("y", "x.a"), ("x.b", "x.a"), ("x.a", "x.b"), ("y", "z")]
    assert sod_conflicts(reg, Subject("u", ("r",)), conflicts=conflicts) == [("x.a", "x.b"), ("x.a", "y")]


def test_conflicts_is_keyword_only():
    from rbac.sod import sod_conflicts

    with pytest.raises(TypeError):
        sod_conflicts(standard_registry(), Subject("u"), [("a", "b")])


def test_pair_repeating_a_permission_is_rejected():
    from rbac.sod import sod_conflicts

    with pytest.raises(ValueError) as err:
        sod_conflicts(standard_registry(), Subject("u"), conflicts=[("a", "b"), ("q", "q")])
    assert str(err.value) == "conflict pair repeats q"


def test_sides_may_come_from_different_roles():
    from rbac.sod import sod_conflicts

    reg = Registry(
        [
            Role("poster", frozenset({"ledger.post"})),
            Role("closer", frozenset({"ledger.period.close"}), ("poster",)),
        ]
    )
    assert sod_conflicts(reg, Subject("u", ("closer",))) == [("ledger.period.close", "ledger.post")]
