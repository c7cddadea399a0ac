"""Role-based access control for the back office."""

from rbac.roles import DEFAULT_ROLES, Role, RoleRegistry
from rbac.rules import PermissionDenied, Subject, has_permission, require

__all__ = [
    "DEFAULT_ROLES",
    "PermissionDenied",
    "Role",
    "RoleRegistry",
    "Subject",
    "has_permission",
    "require",
]
