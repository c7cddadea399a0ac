"""Permission checks for users holding roles."""

from __future__ import annotations

from dataclasses import dataclass

from rbac.roles import Registry

__all__ = ["AccessDenied", "Subject", "grants_of", "allowed", "ensure"]


class AccessDenied(Exception):
    """Raised by :func:`ensure`."""


@dataclass(frozen=True)
class Subject:
    user: str
    roles: tuple[str, ...] = ()


def grants_of(registry: Registry, subject: Subject) -> frozenset[str]:
    """Everything the subject's known roles grant; unknown role names are ignored."""
    result: set[str] = set()
    for name in subject.roles:
        if name in registry:
            result |= registry.effective_grants(name)
    return frozenset(result)


def allowed(registry: Registry, subject: Subject, permission: str) -> bool:
    return permission in grants_of(registry, subject)


def ensure(registry: Registry, subject: Subject, permission: str) -> None:
    if not allowed(registry, subject, permission):
        raise AccessDenied(f"{subject.user} may not {permission}")
