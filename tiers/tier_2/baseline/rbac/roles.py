"""Roles, their permissions and role inheritance."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Role:
    name: str
    permissions: frozenset[str] = field(default_factory=frozenset)
    inherits: tuple[str, ...] = ()


class RoleRegistry:
    def __init__(self, roles: list[Role] | None = None) -> None:
        self._roles: dict[str, Role] = {}
        for role in roles or []:
            self.add(role)

    def add(self, role: Role) -> None:
        self._roles[role.name] = role

    def get(self, name: str) -> Role:
        try:
            return self._roles[name]
        except KeyError:
            raise KeyError(f"unknown role: {name}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._roles

    def effective_permissions(self, name: str) -> frozenset[str]:
        """Permissions of a role plus everything it inherits (cycle-safe)."""
        seen: set[str] = set()
        granted: set[str] = set()
        stack = [name]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            role = self.get(current)
            granted |= role.permissions
            stack.extend(role.inherits)
        return frozenset(granted)


DEFAULT_ROLES: tuple[Role, ...] = (
    Role("viewer", frozenset({"ledger.read", "billing.read"})),
    Role("clerk", frozenset({"billing.invoice.create"}), inherits=("viewer",)),
    Role("accountant", frozenset({"ledger.post", "billing.invoice.void"}), inherits=("clerk",)),
    Role("auditor", frozenset({"audit.read"}), inherits=("viewer",)),
)


def default_registry() -> RoleRegistry:
    return RoleRegistry(list(DEFAULT_ROLES))
