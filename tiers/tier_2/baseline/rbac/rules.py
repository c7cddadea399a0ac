"""Permission checks for subjects holding one or more roles."""

from __future__ import annotations

from dataclasses import dataclass

from rbac.roles import RoleRegistry

__all__ = ["PermissionDenied", "Subject", "granted_permissions", "has_permission", "require"]


class PermissionDenied(Exception):
    """Raised by :func:`require` when a subject lacks a permission."""


@dataclass(frozen=True)
class Subject:
    user_id: str
    roles: tuple[str, ...] = ()


def granted_permissions(registry: RoleRegistry, subject: Subject) -> frozenset[str]:
    """Union of the effective permissions of the subject's known roles."""
    granted: set[str] = set()
    for role in subject.roles:
        if role in registry:
            granted |= registry.effective_permissions(role)
    return frozenset(granted)


def has_permission(registry: RoleRegistry, subject: Subject, permission: str) -> bool:
    """True when one of the subject's roles grants ``permission`` exactly."""
    granted = granted_permissions(registry, subject)
    return permission in granted


def require(registry: RoleRegistry, subject: Subject, permission: str) -> None:
    if not has_permission(registry, subject, permission):
        raise PermissionDenied(f"{subject.user_id} lacks {permission}")
