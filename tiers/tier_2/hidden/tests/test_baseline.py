# SPECSNAP-CANARY tier_2 7b1e5c2a-4f0d-4c8e-9a61-2d9f3e8b0c47
from datetime import date, datetime, timezone

import pytest

from billing.fees import card_processing_fee, net_settlement
from billing.invoices import Invoice, LineItem
from billing.posting import invoice_to_entry
from billing.tax import compute_tax
from ledger.accounts import Account, AccountKind, ChartOfAccounts
from ledger.balances import account_balances, normal_balance
from ledger.journal import Posting, UnbalancedEntryError, make_entry
from rbac.audit import AuditLog, checked
from rbac.roles import Role, RoleRegistry, default_registry
from rbac.rules import PermissionDenied, Subject, has_permission, require


def test_tax_exactly_at_threshold():
    assert compute_tax(2_500) == 125


def test_tax_just_above_threshold():
    assert compute_tax(2_501) == 125


def test_tax_large_amount():
    assert compute_tax(10_000) == 725


def test_tax_rejects_negative_amount():
    with pytest.raises(ValueError):
        compute_tax(-1)


def test_large_invoice_posts_tax_payable():
    invoice = Invoice("B7", "cust-9", date(2024, 2, 10), [LineItem("S", "Svc", 4, 2_500)])
    entry = invoice_to_entry(invoice)
    assert entry.total_debits == 10_725
    assert account_balances([entry]) == {"1200": 10_725, "4000": -10_000, "2100": -725}


def test_card_fee_rounds_percentage_up():
    assert card_processing_fee(1) == 31
    assert net_settlement(10_000) == 9_680


def test_single_posting_entry_is_rejected():
    with pytest.raises(UnbalancedEntryError):
        make_entry("J9", date(2024, 1, 1), "solo", [Posting("1000", debit_cents=5)])


def test_unknown_account_lookup_message():
    chart = ChartOfAccounts([Account("1000", "Cash", AccountKind.ASSET)])
    with pytest.raises(KeyError, match="unknown account: 9999"):
        normal_balance(chart, [], "9999")


def test_role_inheritance_is_cycle_safe():
    registry = RoleRegistry(
        [
            Role("a", frozenset({"x.read"}), inherits=("b",)),
            Role("b", frozenset({"y.read"}), inherits=("a",)),
        ]
    )
    assert registry.effective_permissions("a") == frozenset({"x.read", "y.read"})


def test_require_message_and_unknown_roles_ignored():
    registry = default_registry()
    subject = Subject("eve", ("ghost", "viewer"))
    assert has_permission(registry, subject, "ledger.read")
    with pytest.raises(PermissionDenied, match="^eve lacks billing.invoice.void$"):
        require(registry, subject, "billing.invoice.void")


def test_audit_sequence_numbers_and_actor_filter():
    log = AuditLog()
    at = datetime(2024, 3, 1, tzinfo=timezone.utc)
    log.record("ann", "ledger.read", True, at=at)
    log.record("bob", "ledger.post", False, at=at)
    checked(log, default_registry(), Subject("ann", ("auditor",)), "audit.read")
    assert [e.seq for e in log.events()] == [1, 2, 3]
    assert [e.action for e in log.for_actor("ann")] == ["ledger.read", "audit.read"]
