import pytest

from rbac.audit import AuditLog, checked
from rbac.roles import default_registry
from rbac.rules import PermissionDenied, Subject, has_permission, require


def test_inherited_permissions_are_granted():
    registry = default_registry()
    clerk = Subject("u1", ("clerk",))
    assert has_permission(registry, clerk, "billing.read")
    assert not has_permission(registry, clerk, "ledger.post")


def test_require_raises_for_missing_permission():
    with pytest.raises(PermissionDenied):
        require(default_registry(), Subject("u2", ("viewer",)), "ledger.post")


def test_checked_records_decisions():
    log = AuditLog()
    registry = default_registry()
    assert checked(log, registry, Subject("u3", ("accountant",)), "ledger.post")
    assert not checked(log, registry, Subject("u4", ("viewer",)), "ledger.post")
    assert [e.allowed for e in log.events()] == [True, False]
