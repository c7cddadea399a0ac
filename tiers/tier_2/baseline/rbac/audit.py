"""Append-only audit log of access decisions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from rbac.roles import RoleRegistry
from rbac.rules import Subject, has_permission


@dataclass(frozen=True)
class AuditEvent:
    seq: int
    actor: str
    action: str
    allowed: bool
    at: datetime


class AuditLog:
    def __init__(self) -> None:
        self._events: list[AuditEvent] = []

    def record(
        self, actor: str, action: str, allowed: bool, at: datetime | None = None
    ) -> AuditEvent:
        event = AuditEvent(
            seq=len(self._events) + 1,
            actor=actor,
            action=action,
            allowed=allowed,
            at=at or datetime.now(timezone.utc),
        )
        self._events.append(event)
        return event

    def events(self) -> list[AuditEvent]:
        return list(self._events)

    def for_actor(self, actor: str) -> list[AuditEvent]:
        return [e for e in self._events if e.actor == actor]

    def __len__(self) -> int:
        return len(self._events)


def checked(
    log: AuditLog, registry: RoleRegistry, subject: Subject, permission: str
) -> bool:
    """Check a permission and record the decision in ``log``."""
    allowed = has_permission(registry, subject, permission)
    log.record(subject.user_id, permission, allowed)
    return allowed
