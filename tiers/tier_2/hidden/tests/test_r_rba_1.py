# SPECSNAP-CANARY tier_2 7b1e5c2a-4f0d-4c8e-9a61-2d9f3e8b0c47
import pytest

from rbac.roles import Role, RoleRegistry
from rbac.rules import PermissionDenied, Subject, has_permission, require


def _registry(*roles: Role) -> RoleRegistry:
    return RoleRegistry(list(roles))


def test_wildcard_covers_any_depth():
    reg = _registry(Role("r", frozenset({"billing.*"})))
    s = Subject("u", ("r",))
    assert has_permission(reg, s, "billing.read")
    assert has_permission(reg, s, "billing.invoice.void")


def test_wildcard_excludes_bare_prefix_and_lookalikes():
    reg = _registry(Role("r", frozenset({"billing.*"})))
    s = Subject("u", ("r",))
    assert has_permission(reg, s, "billing.read")
    assert not has_permission(reg, s, "billing")
    assert not has_permission(reg, s, "billingx.read")


def test_lone_star_grants_everything():
    reg = _registry(Role("root", frozenset({"*"})))
    assert has_permission(reg, Subject("u", ("root",)), "ledger.post")


def test_explicit_deny_beats_grant_from_other_role():
    reg = _registry(
        Role("a", frozenset({"billing.invoice.void", "billing.read"})),
        Role("b", frozenset({"!billing.invoice.void"})),
    )
    s = Subject("u", ("a", "b"))
    assert not has_permission(reg, s, "billing.invoice.void")
    assert has_permission(reg, s, "billing.read")


def test_wildcard_deny():
    reg = _registry(Role("r", frozenset({"*", "!ledger.*"})))
    s = Subject("u", ("r",))
    assert not has_permission(reg, s, "ledger.post")
    assert has_permission(reg, s, "billing.read")


def test_matching_is_case_sensitive():
    reg = _registry(Role("r", frozenset({"billing.*"})))
    s = Subject("u", ("r",))
    assert has_permission(reg, s, "billing.read")
    assert not has_permission(reg, s, "Billing.read")


def test_require_honours_inherited_deny():
    reg = _registry(
        Role("base", frozenset({"!audit.read"})),
        Role("lead", frozenset({"audit.read"}), inherits=("base",)),
    )
    with pytest.raises(PermissionDenied):
        require(reg, Subject("u", ("lead",)), "audit.read")
