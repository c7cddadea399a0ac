"""Roles, permission checks and the access audit trail."""

from rbac.policy import AccessDenied, Subject, allowed, ensure, grants_of
from rbac.roles import Registry, Role, standard_registry

__all__ = [
    "AccessDenied",
    "Registry",
    "Role",
    "Subject",
    "allowed",
    "ensure",
    "grants_of",
    "standard_registry",
]
