"""Audit trail of access decisions, alerting security on denials."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from notify.outbox import Message, Outbox
from rbac.policy import Subject, allowed
from rbac.roles import Registry

__all__ = ["Decision", "AuditTrail", "checked"]


@dataclass(frozen=True)
class Decision:
    seq: int
    actor: str
    permission: str
    allowed: bool
    at: datetime


class AuditTrail:
    def __init__(self, outbox: Outbox | None = None, alert_to: str = "security@harbor.example") -> None:
        self._decisions: list[Decision] = []
        self.outbox = outbox
        self.alert_to = alert_to

    def record(self, actor: str, permission: str, ok: bool, at: datetime) -> Decision:
        decision = Decision(len(self._decisions) + 1, actor, permission, ok, at)
        self._decisions.append(decision)
        if not ok and self.outbox is not None:
            body = f"{actor} was denied {permission} at {at.isoformat()}"
            self.outbox.enqueue(Message("email", self.alert_to, "Access denied", body), at)
        return decision

    def decisions(self, actor: str | None = None) -> list[Decision]:
        return [d for d in self._decisions if actor is None or d.actor == actor]

    def __len__(self) -> int:
        return len(self._decisions)


def checked(
    trail: AuditTrail, registry: Registry, subject: Subject, permission: str, at: datetime
) -> bool:
    """Decide, record the decision, and return it."""
    ok = allowed(registry, subject, permission)
    trail.record(subject.user, permission, ok, at)
    return ok
