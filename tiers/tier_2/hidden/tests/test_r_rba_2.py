# SPECSNAP-CANARY tier_2 7b1e5c2a-4f0d-4c8e-9a61-2d9f3e8b0c47
from rbac.audit import AuditLog, checked
from rbac.roles import default_registry
from rbac.rules import Subject


def test_counts_only_denied_events_of_actor():
    log = AuditLog()
    log.record("ann", "ledger.post", False)
    log.record("ann", "ledger.read", True)
    log.record("ann", "audit.read", False)
    assert log.denied_count("ann") == 2


def test_other_actors_not_counted():
    log = AuditLog()
    log.record("ann", "ledger.post", False)
    log.record("bob", "ledger.post", False)
    log.record("bob", "ledger.read", True)
    assert log.denied_count("bob") == 1


def test_unknown_actor_has_zero():
    log = AuditLog()
    log.record("ann", "ledger.post", False)
    assert log.denied_count("zoe") == 0


def test_counts_decisions_from_checked():
    log = AuditLog()
    registry = default_registry()
    viewer = Subject("vic", ("viewer",))
    checked(log, registry, viewer, "ledger.read")
    checked(log, registry, viewer, "ledger.post")
    checked(log, registry, viewer, "billing.invoice.void")
    assert log.denied_count("vic") == 2
