from datetime import datetime, timezone

import pytest

from notify.outbox import Message, Outbox
from notify.templates import render
from rbac.audit import AuditTrail, checked
from rbac.policy import AccessDenied, Subject, allowed, ensure
from rbac.roles import standard_registry

AT = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)


def test_render_placeholders_and_braces():
    assert render("Hi {name} {{ok}}", {"name": "Ana"}) == "Hi Ana {ok}"
    with pytest.raises(KeyError):
        render("{missing}", {})


def test_outbox_bookkeeping():
    outbox = Outbox()
    first = outbox.enqueue(Message("email", "a@x", "s", "b"), AT)
    second = outbox.enqueue(Message("sms", "+1", "s", "b"), AT)
    outbox.mark_sent(first)
    outbox.mark_failed(second, AT)
    assert [e.id for e in outbox.pending()] == [second]
    assert outbox.get(second).attempts == 1


def test_inherited_grants():
    registry = standard_registry()
    assert allowed(registry, Subject("f", ("finance",)), "billing.read")
    with pytest.raises(AccessDenied):
        ensure(registry, Subject("w", ("warehouse",)), "ledger.post")


def test_denials_raise_an_alert():
    outbox = Outbox()
    trail = AuditTrail(outbox)
    assert not checked(trail, standard_registry(), Subject("w", ("warehouse",)), "ledger.post", AT)
    assert len(trail) == 1 and len(outbox) == 1
