"""Roles and role inheritance."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Role", "Registry", "standard_registry"]


@dataclass(frozen=True)
class Role:
    name: str
    grants: frozenset[str] = field(default_factory=frozenset)
    parents: tuple[str, ...] = ()


class Registry:
    def __init__(self, roles: list[Role] | None = None) -> None:
        self._roles: dict[str, Role] = {}
        for role in roles or []:
            self._roles[role.name] = role

    def add(self, role: Role) -> None:
        self._roles[role.name] = role

    def get(self, name: str) -> Role:
        if name not in self._roles:
            raise KeyError(f"unknown role: {name}")
        return self._roles[name]

    def __contains__(self, name: object) -> bool:
        return name in self._roles

    def effective_grants(self, name: str) -> frozenset[str]:
        """Grants of ``name`` and of every role it inherits from; cycles are harmless."""
        result: set[str] = set()
        visited: set[str] = set()
        todo = [name]
        while todo:
            current = todo.pop()
            if current in visited or current not in self._roles:
                continue
            visited.add(current)
            role = self._roles[current]
            result |= role.grants
            todo.extend(role.parents)
        self.get(name)
        return frozenset(result)


def standard_registry() -> Registry:
    return Registry(
        [
            Role("staff", frozenset({"inventory.read", "billing.read"})),
            Role("sales", frozenset({"billing.invoice.create"}), ("staff",)),
            Role("warehouse", frozenset({"inventory.adjust", "shipping.label"}), ("staff",)),
            Role("finance", frozenset({"ledger.post", "billing.payment.approve"}), ("sales",)),
        ]
    )
